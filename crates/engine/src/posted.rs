//! Documents handed over in a request instead of read from files: the body of
//! `POST /v1/ingest`, MCP's `ingest` tool and the Python package's `ingest_documents`.
//! One type and one loader, so that every front end takes the same formats, checks the
//! same things and says the same thing when a document is refused.

use std::str::FromStr;

use excerpt_ingest::{load_bytes_with, load_str, DocFormat, LoadOptions, ParsedDocument};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::EngineError;

/// The format of a posted document.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = InputFormat))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PostedFormat {
    /// Plain text (the default).
    #[default]
    Text,
    /// Markdown: headings become sections; front matter becomes metadata.
    Markdown,
    /// HTML: headings become sections.
    Html,
    /// A PDF file, base64-encoded in `text`.
    Pdf,
    /// A Word (.docx) file, base64-encoded in `text`: headings become sections, tables
    /// rows.
    Docx,
}

impl PostedFormat {
    /// Every format, in the order messages list them.
    pub const ALL: [PostedFormat; 5] = [
        PostedFormat::Text,
        PostedFormat::Markdown,
        PostedFormat::Html,
        PostedFormat::Pdf,
        PostedFormat::Docx,
    ];

    /// The name requests spell it with (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            PostedFormat::Text => "text",
            PostedFormat::Markdown => "markdown",
            PostedFormat::Html => "html",
            PostedFormat::Pdf => "pdf",
            PostedFormat::Docx => "docx",
        }
    }

    fn doc_format(self) -> DocFormat {
        match self {
            PostedFormat::Text => DocFormat::Text,
            PostedFormat::Markdown => DocFormat::Markdown,
            PostedFormat::Html => DocFormat::Html,
            PostedFormat::Pdf => DocFormat::Pdf,
            PostedFormat::Docx => DocFormat::Docx,
        }
    }

    /// What the file is called, for the binary formats (carried base64-encoded).
    fn binary(self) -> Option<&'static str> {
        match self {
            PostedFormat::Pdf => Some("PDF"),
            PostedFormat::Docx => Some("Word"),
            _ => None,
        }
    }
}

impl FromStr for PostedFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.name()).collect();
                let (last, rest) = names.split_last().unwrap_or((&"", &[]));
                format!(
                    "unknown format {s:?}: expected {} or {last}",
                    rest.join(", ")
                )
            })
    }
}

/// One document of `POST /v1/ingest`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = InputDocument))]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostedDocument {
    /// The document id: a relative path such as `guides/setup.md` (an existing id is
    /// replaced); not blank, no control characters, at most 1024 bytes.
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$",
            max_length = 1024
        )
    )]
    pub id: String,
    /// The title; when absent or blank, the one found in the text (or the id).
    #[serde(default)]
    pub title: Option<String>,
    /// The text, in `format` (a PDF or a Word file: the file, base64-encoded); not blank.
    #[cfg_attr(feature = "openapi", schema(pattern = r"\S"))]
    pub text: String,
    /// Metadata, matched by query filters (`where`); keys here override front matter.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// How to read `text`: `text` (default), `markdown`, `html`, or `pdf` and `docx`
    /// (the file base64-encoded).
    #[serde(default)]
    pub format: Option<PostedFormat>,
}

impl PostedDocument {
    /// A plain-text document.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        PostedDocument {
            id: id.into(),
            title: None,
            text: text.into(),
            metadata: Map::new(),
            format: None,
        }
    }

    /// Loads the document the way a file of its format is loaded (`opts` as for files:
    /// the PDF page limit, the PDF worker); a given title replaces the one found in the
    /// text and given metadata keys override front matter. Returns the document and the
    /// loader's warnings. A bad id, undecodable base64, a document the loader refuses
    /// and one with no text at all are [`EngineError::BadRequest`], each naming the id.
    pub fn load(self, opts: &LoadOptions) -> Result<(ParsedDocument, Vec<String>), EngineError> {
        crate::check_document_id(&self.id).map_err(EngineError::BadRequest)?;
        let id = self.id;
        let format = self.format.unwrap_or_default();
        let loaded = match format.binary() {
            Some(kind) => {
                let name = format.name();
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(self.text.trim())
                    .map_err(|e| {
                        EngineError::BadRequest(format!(
                            "document {id:?}: format \"{name}\" takes the {kind} file \
                             base64-encoded in `text` ({e})"
                        ))
                    })?;
                load_bytes_with(format.doc_format(), &id, &bytes, opts)
            }
            None => load_str(format.doc_format(), &id, &self.text),
        }
        .map_err(|e| EngineError::BadRequest(format!("document {id:?}: {e}")))?;
        let mut docs = loaded.documents.into_iter();
        let mut doc = match (docs.next(), docs.next()) {
            (Some(doc), None) => doc,
            (None, _) => {
                let why = if loaded.warnings.is_empty() {
                    "it has no text".to_string()
                } else {
                    loaded.warnings.join("; ")
                };
                return Err(EngineError::BadRequest(format!(
                    "document {id:?} was not ingested: {why}"
                )));
            }
            (Some(_), Some(_)) => {
                return Err(EngineError::Internal(format!(
                    "document {id:?}: the loader made more than one document"
                )))
            }
        };
        if let Some(t) = self.title.filter(|t| !t.trim().is_empty()) {
            doc.title = t;
        }
        doc.metadata.extend(self.metadata);
        Ok((doc, loaded.warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(doc: PostedDocument) -> Result<ParsedDocument, String> {
        doc.load(&LoadOptions::default())
            .map(|(d, _)| d)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn formats_parse_by_name_and_serde_alike() {
        for format in PostedFormat::ALL {
            assert_eq!(format.name().parse::<PostedFormat>(), Ok(format));
            assert_eq!(serde_json::to_value(format).unwrap(), format.name());
        }
        let err = "rtf".parse::<PostedFormat>().unwrap_err();
        assert_eq!(
            err,
            "unknown format \"rtf\": expected text, markdown, html, pdf or docx"
        );
    }

    #[test]
    fn markdown_keeps_headings_and_the_given_title_and_metadata_win() {
        let doc = PostedDocument {
            title: Some("Given".into()),
            format: Some(PostedFormat::Markdown),
            metadata: serde_json::json!({"team": "infra"})
                .as_object()
                .unwrap()
                .clone(),
            ..PostedDocument::new(
                "a/b.md",
                "---\nteam: web\n---\n# Found\n\nText.\n\n## Part\n\nMore.\n",
            )
        };
        let d = load(doc).unwrap();
        assert_eq!(d.title, "Given");
        assert_eq!(d.metadata["team"], "infra");
        assert!(d.sections.len() >= 2, "{:?}", d.sections);
    }

    #[test]
    fn refusals_name_the_document() {
        let blank = load(PostedDocument::new("empty.txt", "  \n")).unwrap_err();
        assert!(
            blank.contains("\"empty.txt\"") && blank.contains("no text"),
            "{blank}"
        );
        let pdf = PostedDocument {
            format: Some(PostedFormat::Pdf),
            ..PostedDocument::new("x.pdf", "not base64!")
        };
        let err = load(pdf).unwrap_err();
        assert!(err.contains("\"x.pdf\"") && err.contains("base64"), "{err}");
        let bad_id = load(PostedDocument::new("a\u{7}b", "text")).unwrap_err();
        assert!(bad_id.contains("control"), "{bad_id}");
        let unknown: Result<PostedDocument, _> =
            serde_json::from_value(serde_json::json!({"id": "a", "text": "b", "tags": []}));
        assert!(unknown.unwrap_err().to_string().contains("tags"));
    }
}
