use std::path::PathBuf;

use excerpt_core::ErrorKind;

/// Why a file, a line of a JSONL file, a path given to the walker, or a document could not
/// be ingested. Every variant names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The file or directory could not be read (missing, permissions, ...).
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file looks binary (a NUL byte in its first 8 KiB). Skipped.
    #[error("{}: skipped: binary file", path.display())]
    Binary {
        /// The file.
        path: PathBuf,
    },
    /// The file is empty or holds only whitespace (after front matter, or after HTML
    /// text extraction). Skipped.
    #[error("{}: skipped: no text", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// An HTML page nests elements deeper than the parser's budget
    /// ([`crate::MAX_HTML_DEPTH`]): parsing time grows with the square of the depth, and
    /// no real page comes near it. Skipped.
    #[error("{}: skipped: HTML nested {depth} elements deep (the limit is {max})", path.display())]
    TooDeep {
        /// The file.
        path: PathBuf,
        /// The depth found (a lower bound: the scan stops at the limit).
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// The file is larger than the loader's limit ([`crate::LoadOptions`]). Skipped
    /// before it is read.
    #[error("{}: skipped: {} MiB, over the limit of {} MiB", path.display(), bytes.div_ceil(1 << 20), max / (1 << 20))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// A PDF that cannot be ingested: encrypted, corrupt or truncated, zero pages, no
    /// text layer (scans; OCR is not built in). Skipped with the reason.
    #[error("{}: skipped: {reason}", path.display())]
    Pdf {
        /// The file.
        path: PathBuf,
        /// Why, in one line.
        reason: String,
    },
    /// PDFium, the PDF engine, is not available (not fetched, or the library does not
    /// load): PDFs are skipped with how to fetch it.
    #[error("{}: skipped: {reason}", path.display())]
    PdfEngine {
        /// The file.
        path: PathBuf,
        /// Why, with how to fetch PDFium.
        reason: String,
    },
    /// A Word file that cannot be ingested: not a zip, no main document part, a zip bomb
    /// (over [`crate::MAX_DOCX_UNPACKED_BYTES`] unpacked), XML nested deeper than
    /// [`crate::MAX_DOCX_DEPTH`], corrupt parts. Skipped with the reason.
    #[error("{}: skipped: {reason}", path.display())]
    Docx {
        /// The file.
        path: PathBuf,
        /// Why, in one line.
        reason: String,
    },
    /// The file is not valid UTF-8.
    #[error("{}: not valid UTF-8 (first bad byte at offset {byte_offset})", path.display())]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// Offset of the first invalid byte.
        byte_offset: usize,
    },
    /// No loader handles the file's extension. Skipped.
    #[error("{}: skipped: unsupported file type {extension:?}{}", path.display(), unsupported_hint(extension))]
    UnknownExtension {
        /// The file.
        path: PathBuf,
        /// The extension (without the dot, possibly empty).
        extension: String,
    },
    /// One line of a JSONL corpus is malformed; the other lines still load.
    #[error("{}:{line}: {message}", path.display())]
    JsonlLine {
        /// The JSONL file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The walker met a problem at a path (e.g. a directory that cannot be listed).
    #[error("{}: {message}", path.display())]
    Walk {
        /// The path.
        path: PathBuf,
        /// What happened.
        message: String,
    },
    /// An include or exclude glob does not parse.
    #[error("invalid glob {glob:?}: {message}")]
    Glob {
        /// The glob as given.
        glob: String,
        /// What is wrong.
        message: String,
    },
    /// The chunked document fails its invariants (a bug, or an inconsistent hand-made
    /// [`crate::ParsedDocument`]).
    #[error("document {doc_id}: {source}")]
    Invalid {
        /// The document.
        doc_id: String,
        /// The violated invariant.
        #[source]
        source: excerpt_core::Error,
    },
}

impl IngestError {
    /// Whose fault it is: always the input's ([`ErrorKind::BadInput`]), a path, a file,
    /// a line or a document handed in.
    pub fn kind(&self) -> ErrorKind {
        match self {
            IngestError::Io { .. }
            | IngestError::Binary { .. }
            | IngestError::Empty { .. }
            | IngestError::TooDeep { .. }
            | IngestError::TooLarge { .. }
            | IngestError::Pdf { .. }
            | IngestError::PdfEngine { .. }
            | IngestError::Docx { .. }
            | IngestError::InvalidUtf8 { .. }
            | IngestError::UnknownExtension { .. }
            | IngestError::JsonlLine { .. }
            | IngestError::Walk { .. }
            | IngestError::Glob { .. }
            | IngestError::Invalid { .. } => ErrorKind::BadInput,
        }
    }

    /// True for the "skipped" reasons (binary, empty, unsupported type, a PDF that is
    /// encrypted, has no text layer or cannot be parsed, PDFium missing, a DOCX that
    /// cannot be read): the file is
    /// left out with its reason and the rest of the ingest goes on.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            IngestError::Binary { .. }
                | IngestError::Empty { .. }
                | IngestError::UnknownExtension { .. }
                | IngestError::Pdf { .. }
                | IngestError::PdfEngine { .. }
                | IngestError::Docx { .. }
        )
    }
}

/// What to do about an unsupported extension, when there is something to say.
fn unsupported_hint(extension: &str) -> &'static str {
    match extension {
        "doc" | "dot" => {
            " (old binary Word format, not read: save it as .docx in Word or LibreOffice)"
        }
        _ => "",
    }
}
