use serde::{Deserialize, Serialize};

use crate::{CharIndex, Error, Text, TextRange};

/// Index of a section in [`Document::sections`].
pub type SectionId = u32;

/// A heading and the text it governs.
///
/// Sections form a tree (through [`Section::parent`]) stored in reading order. A document
/// without headings has no sections; text before the first heading belongs to none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Heading text as displayed (markup removed).
    pub heading: String,
    /// Heading level, 1 (top) to 6.
    pub level: u8,
    /// Headings from the top of the tree down to this one.
    pub path: Vec<String>,
    /// From the heading to the next heading of the same or a higher level: the section
    /// with all its subsections.
    pub range: TextRange,
    /// From the heading to the next heading of any level: the text only this section
    /// governs. Chunks never cross the end of an `own` range.
    pub own: TextRange,
    /// The enclosing section.
    pub parent: Option<SectionId>,
}

impl Section {
    /// The heading path joined with `" > "`, e.g. `Methods > Cell segmentation`.
    pub fn path_string(&self) -> String {
        self.path.join(" > ")
    }
}

/// One piece of a document's partition into chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Position in the document, 0..n.
    pub ordinal: u32,
    /// Where the chunk lies in the document text.
    pub range: TextRange,
    /// The innermost section containing the chunk.
    pub section: Option<SectionId>,
    /// Tokens of the embedding model's tokenizer in the chunk text (without special
    /// tokens); 0 when the chunker did not count.
    pub tokens: u32,
    /// A short text situating the chunk within its document, written by an LLM at ingest
    /// (`excerpt ingest --contextualize`). Indexed with the chunk (see [`indexed_text`]),
    /// never part of its text or offsets. `None` when the index has no contextualizer.
    #[serde(default)]
    pub context: Option<String>,
}

/// How a collection was cut into chunks. Recorded in the index, so queries and later
/// ingests know how it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChunkerConfig {
    /// Zero-overlap chunks of at most `max_tokens` model tokens, never crossing a
    /// section, broken at paragraph, then line, sentence, word boundaries.
    Tokens {
        /// Token limit per chunk.
        max_tokens: usize,
    },
    /// Zero-overlap chunks of at most `size` characters, broken at the best boundary.
    Chars {
        /// Character limit per chunk.
        size: usize,
    },
    /// One chunk per sentence.
    Sentence,
    /// One chunk per section's own text, split by tokens only when over `max_tokens`.
    Section {
        /// Token limit per chunk.
        max_tokens: usize,
    },
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        ChunkerConfig::Tokens { max_tokens: 256 }
    }
}

impl std::fmt::Display for ChunkerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkerConfig::Tokens { max_tokens } => write!(f, "tokens:{max_tokens}"),
            ChunkerConfig::Chars { size } => write!(f, "chars:{size}"),
            ChunkerConfig::Sentence => write!(f, "sentence"),
            ChunkerConfig::Section { max_tokens } => write!(f, "section:{max_tokens}"),
        }
    }
}

impl std::str::FromStr for ChunkerConfig {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        let num = |default: usize| -> Result<usize, String> {
            if arg.is_empty() {
                return Ok(default);
            }
            match arg.parse::<usize>() {
                Ok(n) if n >= 8 => Ok(n),
                _ => Err(format!("chunker size must be a number >= 8, got {arg:?}")),
            }
        };
        match kind {
            "tokens" => Ok(ChunkerConfig::Tokens {
                max_tokens: num(256)?,
            }),
            "chars" => Ok(ChunkerConfig::Chars { size: num(800)? }),
            "sentence" if arg.is_empty() => Ok(ChunkerConfig::Sentence),
            "section" => Ok(ChunkerConfig::Section {
                max_tokens: num(256)?,
            }),
            _ => Err(format!(
                "unknown chunker {s:?}: expected tokens[:N], chars[:N], sentence or section[:N]"
            )),
        }
    }
}

/// The longest document id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 1024;

/// Checks a document id: not blank, at most [`MAX_ID_BYTES`] bytes, no control
/// characters (ids are printed by `excerpt docs`, shown in contexts and sent in headers;
/// a newline or escape sequence in one would forge output). The message says what is
/// wrong and shows the id escaped.
pub fn check_document_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err("a document has an empty id".into());
    }
    if id.len() > MAX_ID_BYTES {
        let head: String = id.chars().take(40).collect();
        return Err(format!(
            "document id {head:?}... is {} bytes long; the limit is {MAX_ID_BYTES}",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(format!(
            "document id {id:?} contains control characters (newline, tab, escape, NUL...)"
        ));
    }
    Ok(())
}

/// A source text with its structure: the unit of ingest, deletion and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Unique id: the path relative to the ingest root, or the `id` of a JSONL line.
    pub id: String,
    /// Display title (first heading, HTML `<title>`, front matter, or the file name).
    pub title: String,
    /// Where it came from (a path), if anywhere.
    pub source: Option<String>,
    /// Free-form metadata (front matter, JSONL `metadata`).
    #[serde(with = "metadata_serde")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The text every offset refers to.
    pub text: Text,
    /// Content hash of everything above and the chunker: unchanged hash, nothing to do.
    pub hash: String,
    /// Section tree in reading order.
    pub sections: Vec<Section>,
    /// The partition of `text` into chunks, in order.
    pub chunks: Vec<Chunk>,
    /// Sentence ranges in order; they partition the text too (whitespace between
    /// sentences belongs to the sentence before it).
    pub sentences: Vec<TextRange>,
    /// Page ranges for paged sources (PDF); empty otherwise.
    #[serde(default)]
    pub pages: Vec<TextRange>,
}

// What `excerpt docs --json`, the HTTP server's `GET /v1/documents` and the engine's
// listings print, whichever store the index is in (the PostgreSQL index counts it in
// SQL, without reading the texts). The doc comment is the OpenAPI description.
/// One line of a document listing.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentSummary {
    /// Document id.
    pub id: String,
    /// Display title.
    pub title: String,
    /// Where it came from (a path), if anywhere.
    pub source: Option<String>,
    /// Characters of text.
    pub chars: usize,
    /// Bytes of text (UTF-8).
    pub bytes: usize,
    /// Chunks.
    pub chunks: usize,
    /// Sections.
    pub sections: usize,
    /// Content hash.
    pub hash: String,
    /// Metadata.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl DocumentSummary {
    /// The summary of one document.
    pub fn of(d: &Document) -> DocumentSummary {
        DocumentSummary {
            id: d.id.clone(),
            title: d.title.clone(),
            source: d.source.clone(),
            chars: d.text.chars().count(),
            bytes: d.text.len(),
            chunks: d.chunks.len(),
            sections: d.sections.len(),
            hash: d.hash.clone(),
            metadata: d.metadata.clone(),
        }
    }
}

/// A [`Document`] as its serialised form reads, with the text's bytes borrowed from the
/// input instead of copied (and not checked to be UTF-8: [`Text`] checks on first read).
/// Its fields are [`Document`]'s, in the same order, so any serde format that encodes a
/// string and a byte string alike (postcard, the index's segment files) decodes a
/// `Document`'s encoding as this. The index decodes a segment's documents so and leaves
/// each text in the mapped file, at the offset of the borrowed bytes.
#[derive(Debug, Deserialize)]
pub struct DocumentInPlace<'a> {
    /// [`Document::id`].
    pub id: String,
    /// [`Document::title`].
    pub title: String,
    /// [`Document::source`].
    pub source: Option<String>,
    /// [`Document::metadata`].
    #[serde(with = "metadata_serde")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The bytes of [`Document::text`], borrowed from the input.
    #[serde(borrow)]
    pub text: &'a [u8],
    /// [`Document::hash`].
    pub hash: String,
    /// [`Document::sections`].
    pub sections: Vec<Section>,
    /// [`Document::chunks`].
    pub chunks: Vec<Chunk>,
    /// [`Document::sentences`].
    pub sentences: Vec<TextRange>,
    /// [`Document::pages`].
    #[serde(default)]
    pub pages: Vec<TextRange>,
}

impl DocumentInPlace<'_> {
    /// The document, with `text` standing for the borrowed bytes.
    pub fn into_document(self, text: Text) -> Document {
        Document {
            id: self.id,
            title: self.title,
            source: self.source,
            metadata: self.metadata,
            text,
            hash: self.hash,
            sections: self.sections,
            chunks: self.chunks,
            sentences: self.sentences,
            pages: self.pages,
        }
    }
}

impl Document {
    /// The text of chunk `ordinal`.
    pub fn chunk_text(&self, ordinal: usize) -> &str {
        self.chunks[ordinal].range.slice(&self.text)
    }

    /// The heading path of a chunk, `""` outside any section.
    pub fn section_path(&self, section: Option<SectionId>) -> String {
        section
            .and_then(|s| self.sections.get(s as usize))
            .map(Section::path_string)
            .unwrap_or_default()
    }

    /// Checks the invariants: ids usable, every range valid for `text`, chunks and
    /// sentences each partition `text` (no gap, no overlap, nothing empty unless the text
    /// is), ordinals 0..n, chunk sections existing.
    pub fn validate(&self) -> Result<(), Error> {
        if self.id.is_empty() {
            return Err(Error::BadId {
                id: self.id.clone(),
                reason: "empty",
            });
        }
        let idx = CharIndex::new(&self.text);
        let check = |r: &TextRange| -> Result<(), Error> {
            let again = idx.range(r.byte_start, r.byte_end)?;
            if again != *r {
                return Err(Error::BadRange {
                    start: r.byte_start,
                    end: r.byte_end,
                    len: self.text.len(),
                });
            }
            Ok(())
        };
        let partition = |what: &str, ranges: &mut dyn Iterator<Item = &TextRange>| {
            let mut at = 0usize;
            for (n, r) in ranges.enumerate() {
                check(r)?;
                if r.byte_start != at || r.is_empty() {
                    return Err(Error::NotAPartition {
                        doc_id: self.id.clone(),
                        detail: format!(
                            "{what} {n} starts at byte {} instead of {at}",
                            r.byte_start
                        ),
                    });
                }
                at = r.byte_end;
            }
            if at != self.text.len() {
                return Err(Error::NotAPartition {
                    doc_id: self.id.clone(),
                    detail: format!("{what}s end at byte {at} of {}", self.text.len()),
                });
            }
            Ok(())
        };
        partition("chunk", &mut self.chunks.iter().map(|c| &c.range))?;
        partition("sentence", &mut self.sentences.iter())?;
        for (i, c) in self.chunks.iter().enumerate() {
            if c.ordinal as usize != i {
                return Err(Error::NotAPartition {
                    doc_id: self.id.clone(),
                    detail: format!("chunk {i} has ordinal {}", c.ordinal),
                });
            }
            if let Some(s) = c.section {
                let Some(sec) = self.sections.get(s as usize) else {
                    return Err(Error::NotAPartition {
                        doc_id: self.id.clone(),
                        detail: format!("chunk {i} names missing section {s}"),
                    });
                };
                if c.range.byte_start < sec.own.byte_start || c.range.byte_end > sec.own.byte_end {
                    return Err(Error::NotAPartition {
                        doc_id: self.id.clone(),
                        detail: format!("chunk {i} crosses the boundary of section {s}"),
                    });
                }
            }
        }
        for s in &self.sections {
            check(&s.range)?;
            check(&s.own)?;
        }
        for p in &self.pages {
            check(p)?;
        }
        Ok(())
    }
}

/// Addresses one chunk of a snapshot: `doc` is the document's position in the snapshot's
/// id-sorted document list, `ordinal` the chunk's position in the document. Ordering by
/// key is ordering by (document id, reading order): the tie-break of every ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChunkKey {
    /// Position of the document in the snapshot (document-id order).
    pub doc: u32,
    /// Chunk ordinal in the document.
    pub ordinal: u32,
}

impl ChunkKey {
    /// A key.
    pub fn new(doc: u32, ordinal: u32) -> Self {
        ChunkKey { doc, ordinal }
    }
}

/// The header indexed (embedded and searched) with a chunk, never part of its text:
/// `Document: <title>` and, inside a section, ` / Section: <path>`.
pub fn chunk_header(doc: &Document, chunk: &Chunk) -> String {
    header_text(&doc.title, &doc.section_path(chunk.section))
}

/// Characters of a title kept in chunk headers (longer ones are cut, ending in `…`).
/// The header is indexed with every chunk of its document, so an uncapped title costs
/// its size once per chunk; the full title stays in [`Document::title`]. Long enough
/// for the titles people write (the meeting transcripts' topic lists run to 320
/// characters; a cap of 200 cut 5 of 35 and cost 1.1 recall points at 2000 characters,
/// docs/EVAL.md).
pub const HEADER_TITLE_MAX_CHARS: usize = 400;

/// Characters of a section path kept in chunk headers (cut like titles).
pub const HEADER_SECTION_MAX_CHARS: usize = 300;

/// `s` cut to at most `max` characters, the last one `…` when it was cut.
fn capped(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some(_) => {
            let keep: String = s.chars().take(max.saturating_sub(1)).collect();
            std::borrow::Cow::Owned(format!("{}…", keep.trim_end()))
        }
    }
}

/// A title as a context shows it: cut at [`HEADER_TITLE_MAX_CHARS`] like the chunk
/// header's, unchanged when shorter (a megabyte title would otherwise be printed whole
/// with every piece, outside any budget).
pub fn shown_title(title: &str) -> std::borrow::Cow<'_, str> {
    capped(title, HEADER_TITLE_MAX_CHARS)
}

/// A section path as a context shows it: cut at [`HEADER_SECTION_MAX_CHARS`].
pub fn shown_section(path: &str) -> std::borrow::Cow<'_, str> {
    capped(path, HEADER_SECTION_MAX_CHARS)
}

/// The header for a title and a section path (see [`chunk_header`]); `""` when both are
/// empty. The title is cut at [`HEADER_TITLE_MAX_CHARS`], the path at
/// [`HEADER_SECTION_MAX_CHARS`].
pub fn header_text(title: &str, section_path: &str) -> String {
    let title = capped(title.trim(), HEADER_TITLE_MAX_CHARS);
    let section_path = capped(section_path, HEADER_SECTION_MAX_CHARS);
    match (title.as_ref(), section_path.is_empty()) {
        ("", true) => String::new(),
        ("", false) => format!("Section: {section_path}"),
        (t, true) => format!("Document: {t}"),
        (t, false) => format!("Document: {t} / Section: {section_path}"),
    }
}

/// The text a chunk is indexed under (embedded and searched): its header on one line
/// (when `headers` is on and the header is not empty), then its LLM-written context on
/// one line (when it has one), then its text.
pub fn indexed_text(doc: &Document, chunk: &Chunk, headers: bool) -> String {
    let text = chunk.range.slice(&doc.text);
    let header = if headers {
        chunk_header(doc, chunk)
    } else {
        String::new()
    };
    let context = chunk.context.as_deref().map(str::trim).unwrap_or("");
    let mut out = String::with_capacity(header.len() + context.len() + text.len() + 2);
    for prefix in [header.as_str(), context] {
        if !prefix.is_empty() {
            out.push_str(prefix);
            out.push('\n');
        }
    }
    out.push_str(text);
    out
}

/// Metadata is arbitrary JSON: a map in human-readable formats, a JSON string in binary
/// ones (which cannot carry self-describing values such as postcard, used on disk).
mod metadata_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    type Map = serde_json::Map<String, serde_json::Value>;

    pub fn serialize<S: Serializer>(m: &Map, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            m.serialize(s)
        } else {
            serde_json::to_string(m)
                .map_err(serde::ser::Error::custom)?
                .serialize(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map, D::Error> {
        if d.is_human_readable() {
            Map::deserialize(d)
        } else {
            let s = String::deserialize(d)?;
            serde_json::from_str(&s).map_err(serde::de::Error::custom)
        }
    }
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(check_document_id("docs/a.md").is_ok());
        assert!(check_document_id("Ünïcode id with spaces").is_ok());
        for bad in ["", "  ", "a\0b", "a\nb", "a\u{1b}[31mred", "tab\there"] {
            let err = check_document_id(bad).expect_err(bad);
            assert!(!err.contains('\n') && !err.contains('\u{1b}'), "{err}");
        }
        let long = "x".repeat(MAX_ID_BYTES + 1);
        assert!(check_document_id(&long)
            .unwrap_err()
            .contains("limit is 1024"));
        assert!(check_document_id(&"x".repeat(MAX_ID_BYTES)).is_ok());
    }
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn headers_cap_long_titles_and_section_paths() {
        assert_eq!(header_text("  Short  ", ""), "Document: Short");
        assert_eq!(header_text("", "A > B"), "Section: A > B");
        let exact = "t".repeat(HEADER_TITLE_MAX_CHARS);
        assert_eq!(header_text(&exact, ""), format!("Document: {exact}"));
        // A megabyte title (multi-byte characters, cut on a character boundary).
        let huge = "é".repeat(1 << 20);
        let h = header_text(&huge, &"section ".repeat(100_000));
        let (title, path) = h.split_once(" / Section: ").unwrap();
        let title = title.strip_prefix("Document: ").unwrap();
        assert_eq!(title.chars().count(), HEADER_TITLE_MAX_CHARS);
        assert!(title.ends_with('…'));
        assert!(path.chars().count() <= HEADER_SECTION_MAX_CHARS && path.ends_with('…'));
        assert!(h.len() < 4 * (HEADER_TITLE_MAX_CHARS + HEADER_SECTION_MAX_CHARS));
    }
}
