//! What the format loaders produce, and the pieces every loader builds it from: the
//! bottom layer of loading. The format loaders (`formats`) sit above it and the
//! dispatcher (`load`) above them; nothing here imports from either.

use std::path::Path;

use excerpt_core::{CharIndex, Section, SectionId};
use serde::{Deserialize, Serialize};

use crate::IngestError;

/// A loaded document before chunking: its text and the structure found in it.
///
/// Every range refers to `text`, which is exactly what the chunked
/// [`excerpt_core::Document`] stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedDocument {
    /// Unique id: the path relative to the ingest root (`/` separators), or the `id` of a
    /// JSONL line.
    pub id: String,
    /// Display title.
    pub title: String,
    /// Where the document came from (the file path), if anywhere.
    pub source: Option<String>,
    /// Front matter or JSONL `metadata`.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The text all offsets refer to.
    pub text: String,
    /// Sections in reading order, with exact `range`/`own` into `text`.
    pub sections: Vec<Section>,
    /// Byte ranges (start, end) of `text` the chunker should not split when they fit in
    /// one chunk: fenced code blocks (Markdown), `<pre>` blocks (HTML). Sorted.
    #[serde(default)]
    pub atomic: Vec<(usize, usize)>,
    /// Page ranges for paged sources (PDF), partitioning `text`; empty otherwise.
    #[serde(default)]
    pub pages: Vec<excerpt_core::TextRange>,
}

impl ParsedDocument {
    /// A document with its id, title and source and nothing else yet: what a loader
    /// starts from before it fills the text, sections and pages.
    pub(crate) fn empty(id: &str, title: &str, source: Option<String>) -> ParsedDocument {
        ParsedDocument {
            id: id.to_string(),
            title: title.to_string(),
            source,
            metadata: serde_json::Map::new(),
            text: String::new(),
            sections: Vec::new(),
            atomic: Vec::new(),
            pages: Vec::new(),
        }
    }
}

/// What loading one file produced: its documents and the problems that did not stop
/// the rest (bad lines of a JSONL file).
#[derive(Debug, Default)]
pub struct Loaded {
    /// Documents in file order.
    pub documents: Vec<ParsedDocument>,
    /// Per-line problems.
    pub problems: Vec<IngestError>,
    /// What was loaded but not as written, each naming the file (front matter that is
    /// not a YAML mapping, kept as text).
    pub warnings: Vec<String>,
}

/// A heading found by a loader: where its line starts in the text, its level and text.
#[derive(Debug, Clone)]
pub(crate) struct Heading {
    pub start: usize,
    pub level: u8,
    pub text: String,
}

/// Builds the section tree from headings in reading order (starts strictly increasing
/// and on char boundaries; others are dropped). `own` runs to the next heading, `range`
/// to the next heading of the same or a higher level. When the text before the first
/// heading is only whitespace, the first section starts at 0 so that no tiny
/// whitespace-only region is left outside every section.
pub(crate) fn build_sections(
    text: &str,
    headings: Vec<Heading>,
) -> Result<Vec<Section>, excerpt_core::Error> {
    let mut hs: Vec<Heading> = Vec::with_capacity(headings.len());
    for h in headings {
        let ok_order = hs.last().is_none_or(|p| h.start > p.start);
        if ok_order && h.start < text.len() && text.is_char_boundary(h.start) {
            hs.push(Heading {
                level: h.level.clamp(1, 6),
                ..h
            });
        }
    }
    if let Some(first) = hs.first_mut() {
        if text[..first.start].trim().is_empty() {
            first.start = 0;
        }
    }
    let idx = CharIndex::new(text);
    let mut sections: Vec<Section> = Vec::with_capacity(hs.len());
    for (i, h) in hs.iter().enumerate() {
        let own_end = hs.get(i + 1).map_or(text.len(), |n| n.start);
        let range_end = hs[i + 1..]
            .iter()
            .find(|n| n.level <= h.level)
            .map_or(text.len(), |n| n.start);
        // Parent: nearest earlier section of a lower level.
        let mut parent: Option<SectionId> = None;
        let mut j = i;
        while j > 0 {
            j -= 1;
            if sections[j].level < h.level {
                parent = Some(j as SectionId);
                break;
            }
        }
        let mut path = parent
            .map(|p| sections[p as usize].path.clone())
            .unwrap_or_default();
        path.push(h.text.clone());
        sections.push(Section {
            heading: h.text.clone(),
            level: h.level,
            path,
            range: idx.range(h.start, range_end)?,
            own: idx.range(h.start, own_end)?,
            parent,
        });
    }
    Ok(sections)
}

/// Collapses runs of whitespace to one space and trims.
pub(crate) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The document id of the file `path` ingested under `root`: `path` relative to `root`
/// with `/` separators, or the file name when `path` is not under `root` (the ids
/// [`crate::walk`]'s files get from [`crate::load_file`]; JSONL documents keep their own).
pub fn relative_id(path: &Path, root: &Path) -> String {
    let parts = |p: &Path| -> String {
        p.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    if let Ok(rel) = path.strip_prefix(root) {
        let id = parts(rel);
        if !id.is_empty() {
            return id;
        }
    }
    match path.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => parts(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_relative_with_slashes() {
        let root = Path::new("/data/docs");
        assert_eq!(relative_id(Path::new("/data/docs/a/b.md"), root), "a/b.md");
        assert_eq!(relative_id(Path::new("/elsewhere/c.md"), root), "c.md");
        assert_eq!(
            relative_id(Path::new("/data/docs/x.txt"), Path::new("/data/docs/x.txt")),
            "x.txt"
        );
    }

    #[test]
    fn section_tree() {
        let text = "intro\n# A\na\n## B\nb\n### C\nc\n## D\nd\n# E\ne";
        let starts = |s: &str| text.find(s).unwrap_or(0);
        let hs = vec![
            Heading {
                start: starts("# A"),
                level: 1,
                text: "A".into(),
            },
            Heading {
                start: starts("## B"),
                level: 2,
                text: "B".into(),
            },
            Heading {
                start: starts("### C"),
                level: 3,
                text: "C".into(),
            },
            Heading {
                start: starts("## D"),
                level: 2,
                text: "D".into(),
            },
            Heading {
                start: starts("# E"),
                level: 1,
                text: "E".into(),
            },
        ];
        let s = build_sections(text, hs).unwrap();
        assert_eq!(s.len(), 5);
        assert_eq!(s[2].path, vec!["A", "B", "C"]);
        assert_eq!(s[2].parent, Some(1));
        assert_eq!(s[3].parent, Some(0));
        assert_eq!(s[4].parent, None);
        assert_eq!(
            s[0].range.slice(text),
            "# A\na\n## B\nb\n### C\nc\n## D\nd\n"
        );
        assert_eq!(s[1].range.slice(text), "## B\nb\n### C\nc\n");
        assert_eq!(s[1].own.slice(text), "## B\nb\n");
        assert_eq!(s[4].own.slice(text), "# E\ne");
    }

    #[test]
    fn leading_whitespace_joins_first_section() {
        let text = "\n\n# A\nx";
        let s = build_sections(
            text,
            vec![Heading {
                start: 2,
                level: 1,
                text: "A".into(),
            }],
        )
        .unwrap();
        assert_eq!(s[0].own.byte_start, 0);
    }
}
