//! Markdown: YAML front matter, headings (ATX and setext) and fenced code blocks, found
//! with pulldown-cmark's offset iterator so that `#` inside code is never a heading.

use std::path::Path;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::parsed::{build_sections, collapse_ws, Heading, ParsedDocument};
use crate::IngestError;

/// Structure of a Markdown text: headings and fenced code block ranges.
#[derive(Debug, Default)]
pub(crate) struct Structure {
    pub headings: Vec<Heading>,
    pub fences: Vec<(usize, usize)>,
}

/// Finds top-level headings (not inside block quotes or lists) and fenced code blocks.
/// With `atx_only`, setext headings are ignored.
pub(crate) fn structure(text: &str, atx_only: bool) -> Structure {
    let mut out = Structure::default();
    let mut depth = 0usize;
    // (level, start, text) of the heading being read.
    let mut current: Option<(u8, usize, String)> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::BlockQuote(_) | Tag::List(_) | Tag::FootnoteDefinition(_)) => {
                depth += 1
            }
            Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::FootnoteDefinition) => {
                depth = depth.saturating_sub(1)
            }
            Event::Start(Tag::Heading { level, .. }) if depth == 0 => {
                let start = range.start.min(text.len());
                let atx = text
                    .get(start..)
                    .is_some_and(|s| s.trim_start_matches(' ').starts_with('#'));
                if !atx_only || atx {
                    current = Some((level as u8, line_start(text, start), String::new()));
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, t)) = current.take() {
                    out.headings.push(Heading {
                        start,
                        level,
                        text: collapse_ws(&t),
                    });
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, _, buf)) = current.as_mut() {
                    buf.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, buf)) = current.as_mut() {
                    buf.push(' ');
                }
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let start = line_start(text, range.start);
                let mut end = range.end.min(text.len());
                // Include the closing fence's line end: the block then ends at a line start.
                let bytes = text.as_bytes();
                if !bytes[..end].ends_with(b"\n") && bytes.get(end) == Some(&b'\n') {
                    end += 1;
                }
                if start < end && text.is_char_boundary(end) {
                    out.fences.push((start, end));
                }
            }
            _ => {}
        }
    }
    out.fences.sort_unstable();
    out
}

/// Front matter's metadata and the byte offset where the body starts.
type FrontMatter = (serde_json::Map<String, serde_json::Value>, usize);

/// Front matter that was found but refused: why (it stays in the text).
pub(crate) struct Refused(pub(crate) String);

/// Splits YAML front matter off: `---` on the first line, closed by a `---` or `...`
/// line. Returns the metadata and the byte offset where the body starts (blank lines
/// after the front matter are dropped too). `None` when there is no front matter;
/// `Err` when it is not a YAML mapping (then it stays in the text).
pub(crate) fn front_matter(text: &str) -> Option<Result<FrontMatter, Refused>> {
    let rest = text.strip_prefix("---\n")?;
    let mut at = 4usize;
    let mut body_start = None;
    let mut yaml_end = 0usize;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n').trim_end();
        if bare == "---" || bare == "..." {
            yaml_end = at;
            body_start = Some(at + line.len());
            break;
        }
        at += line.len();
    }
    let body_start = body_start?;
    let yaml = &text[4..yaml_end];
    let meta = if yaml.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_norway::from_str::<serde_json::Value>(yaml) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(serde_json::Value::Null) => serde_json::Map::new(),
            Ok(other) => {
                let kind = match other {
                    serde_json::Value::Array(_) => "a list",
                    serde_json::Value::String(_) => "a string",
                    _ => "a scalar",
                };
                return Some(Err(Refused(format!(
                    "front matter is {kind}, not a YAML mapping; kept as text"
                ))));
            }
            Err(e) => {
                return Some(Err(Refused(format!(
                    "front matter is not valid YAML ({e}); kept as text"
                ))))
            }
        }
    };
    // Drop the blank lines separating the front matter from the body.
    let mut start = body_start;
    for line in text[body_start..].split_inclusive('\n') {
        if line.trim().is_empty() && line.ends_with('\n') {
            start += line.len();
        } else {
            break;
        }
    }
    Some(Ok((meta, start)))
}

/// Loads a Markdown file; a refused front matter is kept as text and pushed to
/// `warnings` (naming the file).
pub(crate) fn load(
    path: &Path,
    mut doc: ParsedDocument,
    text: &str,
    warnings: &mut Vec<String>,
) -> Result<ParsedDocument, IngestError> {
    let body = match front_matter(text) {
        Some(Ok((meta, start))) => {
            doc.metadata = meta;
            &text[start..]
        }
        Some(Err(Refused(why))) => {
            warnings.push(format!("{}: {why}", path.display()));
            text
        }
        None => text,
    };
    if body.trim().is_empty() {
        return Err(IngestError::Empty {
            path: path.to_path_buf(),
        });
    }
    let st = structure(body, false);
    let meta_title = doc
        .metadata
        .get("title")
        .and_then(|t| match t {
            serde_json::Value::String(s) => Some(collapse_ws(s)),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .filter(|t| !t.is_empty());
    let h1 = st
        .headings
        .iter()
        .find(|h| h.level == 1 && !h.text.is_empty())
        .map(|h| h.text.clone());
    if let Some(t) = meta_title.or(h1) {
        doc.title = t;
    }
    doc.sections = build_sections(body, st.headings).map_err(|source| IngestError::Invalid {
        doc_id: doc.id.clone(),
        source,
    })?;
    doc.atomic = st.fences;
    doc.text = body.to_string();
    Ok(doc)
}

/// Byte offset of the start of the line containing `pos`.
fn line_start(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    text.as_bytes()[..pos]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}
