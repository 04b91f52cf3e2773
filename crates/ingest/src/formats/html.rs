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

/// Deepest element nesting an HTML page may have. The HTML parser checks the stack of
/// open elements for every tag, so its time grows with the square of the depth (a page
/// of 100,000 nested `<div>`s took 74 s); browsers themselves stop nesting at a few
/// hundred levels.
pub const MAX_HTML_DEPTH: usize = 2048;

/// Elements that never hold children.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Elements whose end tag may be left out: a page may open thousands of them without
/// closing any, and the parser closes them itself, so they do not count as nesting.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp", "thead",
    "tbody", "tfoot", "colgroup", "caption", "html", "head", "body",
];

/// Elements whose content is raw text, where `<` does not start a tag.
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp", "noscript"];

/// How deep the page's tags nest, counted in one linear pass over the source without
/// parsing (void and optional-end elements, comments and raw text ignored), up to
/// `limit`: enough to refuse a page before the parser spends quadratic time on it.
fn nesting_depth(source: &str, limit: usize) -> usize {
    let bytes = source.as_bytes();
    let (mut depth, mut max, mut i) = (0usize, 0usize, 0usize);
    while let Some(off) = bytes[i..].iter().position(|&b| b == b'<') {
        i += off + 1;
        if bytes[i..].starts_with(b"!--") {
            i = source[i..].find("-->").map_or(bytes.len(), |e| i + e + 3);
            continue;
        }
        let closing = bytes.get(i) == Some(&b'/');
        let name_start = i + usize::from(closing);
        let name_len = bytes[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count();
        if name_len == 0 {
            continue;
        }
        let name = source[name_start..name_start + name_len].to_ascii_lowercase();
        let end = bytes[name_start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(bytes.len(), |e| name_start + e);
        let self_closing = end > 0 && bytes.get(end - 1) == Some(&b'/');
        i = (end + 1).min(bytes.len());
        if VOID.contains(&name.as_str()) || OPTIONAL_END.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing {
            if RAW_TEXT.contains(&name.as_str()) {
                // Skip to the matching end tag, compared without regard to case.
                let n = name.len();
                let mut j = i;
                i = bytes.len();
                while let Some(off) = source[j..].find("</") {
                    let at = j + off + 2;
                    if bytes
                        .get(at..at + n)
                        .is_some_and(|b| b.eq_ignore_ascii_case(name.as_bytes()))
                    {
                        i = at;
                        break;
                    }
                    j = at;
                }
                continue;
            }
            depth += 1;
            max = max.max(depth);
            if max >= limit {
                return max;
            }
        }
    }
    max
}

pub(crate) fn load(
    path: &Path,
    mut doc: ParsedDocument,
    source: &str,
) -> Result<ParsedDocument, IngestError> {
    let depth = nesting_depth(source, MAX_HTML_DEPTH + 1);
    if depth > MAX_HTML_DEPTH {
        return Err(IngestError::TooDeep {
            path: path.to_path_buf(),
            depth,
            max: MAX_HTML_DEPTH,
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_without_parsing() {
        assert_eq!(
            nesting_depth("<html><body><div><p>a<p>b</div></body></html>", 100),
            1
        );
        assert_eq!(nesting_depth(&"<div>".repeat(50), 100), 50);
        assert_eq!(
            nesting_depth(&"<div>".repeat(50), 10),
            10,
            "stops at the limit"
        );
        assert_eq!(nesting_depth(&"<div></div>".repeat(5000), 100), 1);
        // Void, self-closing and optional-end elements, comments and raw text.
        assert_eq!(nesting_depth(&"<br><img src=x><x-y/>".repeat(100), 100), 0);
        assert_eq!(nesting_depth(&"<li>item".repeat(10_000), 100), 0);
        assert_eq!(nesting_depth("<!-- <div><div> --><span>x</span>", 100), 1);
        let script = format!(
            "<script>{}</SCRIPT><div>",
            "if (a<b) { x = '<div>'; }".repeat(100)
        );
        assert_eq!(nesting_depth(&script, 100), 1);
        assert_eq!(nesting_depth("<div <<<< >", 100), 1);
        assert_eq!(nesting_depth("a < b and c > d; <", 100), 0);
    }

    #[test]
    fn pages_nested_too_deep_are_skipped_with_the_reason() {
        let doc = || ParsedDocument {
            id: "deep.html".into(),
            title: String::new(),
            source: None,
            metadata: Default::default(),
            text: String::new(),
            sections: vec![],
            atomic: vec![],
            pages: vec![],
        };
        let deep = format!("{}text", "<div>".repeat(100_000));
        let err = load(Path::new("deep.html"), doc(), &deep).expect_err("refused");
        assert!(matches!(err, IngestError::TooDeep { .. }), "{err}");
        assert!(err.to_string().contains("nested"), "{err}");
        let fine = format!("{}text", "<div>".repeat(MAX_HTML_DEPTH));
        let d = load(Path::new("ok.html"), doc(), &fine).expect("at the limit: loaded");
        assert_eq!(d.text.trim(), "text");
    }
}
