//! HTML: visible text extraction with scraper. Block elements become paragraphs
//! separated by blank lines, inline whitespace is collapsed (kept inside `<pre>`),
//! `h1`–`h6` become sections of the extracted text and `<pre>` blocks are atomic.

use std::path::Path;

use scraper::{ElementRef, Html, Node};

use crate::parsed::{build_sections, collapse_ws, Heading, ParsedDocument};
use crate::IngestError;

/// Elements whose content is never text of the document.
const DROPPED: &[&str] = &[
    "script", "style", "nav", "noscript", "template", "head", "svg", "iframe", "object", "canvas",
];

/// Elements that start and end a paragraph.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "ul",
    "html",
];

/// Pending separator before the next piece of text, strongest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Sep {
    None,
    Space,
    Line,
    Para,
}

struct Extract {
    out: String,
    sep: Sep,
    pre_depth: usize,
    /// Outermost open heading: level and where its text starts (once some was written).
    heading: Option<(u8, Option<usize>)>,
    headings: Vec<(usize, usize, u8)>,
    pre_start: Option<usize>,
    atomic: Vec<(usize, usize)>,
}

impl Extract {
    fn want(&mut self, s: Sep) {
        self.sep = self.sep.max(s);
    }

    /// Writes the pending separator, then marks heading/pre starts.
    fn begin_content(&mut self) {
        if !self.out.is_empty() {
            match self.sep {
                Sep::None => {}
                Sep::Space => self.out.push(' '),
                Sep::Line => self.out.push('\n'),
                Sep::Para => self.out.push_str("\n\n"),
            }
        }
        self.sep = Sep::None;
        if let Some((_, start @ None)) = self.heading.as_mut() {
            *start = Some(self.out.len());
        }
        if self.pre_depth > 0 && self.pre_start.is_none() {
            self.pre_start = Some(self.out.len());
        }
    }

    fn text(&mut self, t: &str) {
        if self.pre_depth > 0 {
            if !t.is_empty() {
                self.begin_content();
                self.out.push_str(t);
            }
            return;
        }
        if t.starts_with(|c: char| c.is_ascii_whitespace()) {
            self.want(Sep::Space);
        }
        let mut first = true;
        for word in t.split_ascii_whitespace() {
            if !first {
                self.want(Sep::Space);
            }
            first = false;
            self.begin_content();
            self.out.push_str(word);
        }
        if t.ends_with(|c: char| c.is_ascii_whitespace()) && !first {
            self.want(Sep::Space);
        }
    }

    fn open(&mut self, name: &str) {
        if BLOCKS.contains(&name) {
            self.want(Sep::Para);
        }
        match name {
            "td" | "th" => self.want(Sep::Space),
            "br" => {
                if self.pre_depth > 0 {
                    self.begin_content();
                    self.out.push('\n');
                } else {
                    self.want(Sep::Line);
                }
            }
            "pre" => self.pre_depth += 1,
            _ => {}
        }
        if let Some(level) = heading_level(name) {
            if self.heading.is_none() {
                self.heading = Some((level, None));
            }
        }
    }

    fn close(&mut self, name: &str) {
        if BLOCKS.contains(&name) {
            self.want(Sep::Para);
        }
        match name {
            "td" | "th" => self.want(Sep::Space),
            "pre" => {
                self.pre_depth = self.pre_depth.saturating_sub(1);
                if self.pre_depth == 0 {
                    if let Some(s) = self.pre_start.take() {
                        if s < self.out.len() {
                            self.atomic.push((s, self.out.len()));
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(level) = heading_level(name) {
            if let Some((open, start)) = self.heading {
                if open == level {
                    self.heading = None;
                    if let Some(s) = start {
                        self.headings.push((s, self.out.len(), level));
                    }
                }
            }
        }
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

enum Step<'a> {
    Open(ElementRef<'a>),
    Text(&'a str),
    Close(&'a str),
}

/// Extracted text, headings (start, end, level) and `<pre>` ranges of a parsed page.
fn extract(html: &Html) -> Extract {
    let mut ex = Extract {
        out: String::new(),
        sep: Sep::None,
        pre_depth: 0,
        heading: None,
        headings: Vec::new(),
        pre_start: None,
        atomic: Vec::new(),
    };
    // Explicit stack: deeply nested pages must not overflow the call stack.
    let mut stack = vec![Step::Open(html.root_element())];
    while let Some(step) = stack.pop() {
        match step {
            Step::Close(name) => ex.close(name),
            Step::Text(t) => ex.text(t),
            Step::Open(el) => {
                let name = el.value().name();
                if DROPPED.contains(&name) {
                    continue;
                }
                ex.open(name);
                stack.push(Step::Close(name));
                // Pushed in reverse so that they pop in document order.
                for child in el.children().rev() {
                    if let Some(e) = ElementRef::wrap(child) {
                        stack.push(Step::Open(e));
                    } else if let Node::Text(t) = child.value() {
                        stack.push(Step::Text(t));
                    }
                }
            }
        }
    }
    ex
}

/// Text of the first `<title>`, whitespace collapsed.
fn page_title(html: &Html) -> Option<String> {
    html.root_element()
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "title")
        .map(|e| collapse_ws(&e.text().collect::<String>()))
        .filter(|t| !t.is_empty())
}

pub(crate) fn load(
    path: &Path,
    mut doc: ParsedDocument,
    source: &str,
) -> Result<ParsedDocument, IngestError> {
    let html = Html::parse_document(source);
    let ex = extract(&html);
    if ex.out.trim().is_empty() {
        return Err(IngestError::Empty {
            path: path.to_path_buf(),
        });
    }
    let headings: Vec<Heading> = ex
        .headings
        .iter()
        .map(|&(s, e, level)| Heading {
            start: s,
            level,
            text: collapse_ws(&ex.out[s..e]),
        })
        .collect();
    let h1 = headings
        .iter()
        .find(|h| h.level == 1 && !h.text.is_empty())
        .map(|h| h.text.clone());
    if let Some(t) = page_title(&html).or(h1) {
        doc.title = t;
    }
    doc.sections = build_sections(&ex.out, headings).map_err(|source| IngestError::Invalid {
        doc_id: doc.id.clone(),
        source,
    })?;
    doc.atomic = ex.atomic;
    doc.text = ex.out;
    Ok(doc)
}
