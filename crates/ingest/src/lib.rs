//! Ingest for Excerpt: from files to validated [`excerpt_core::Document`]s.
//!
//! The pipeline has four stages, each usable on its own:
//!
//! 1. **Walk** ([`walk`]): expand the paths given by the user into a sorted list of files,
//!    respecting `.gitignore`/`.ignore`, skipping hidden files, applying include/exclude
//!    globs. Problems (a missing path, an unreadable directory) are reported per path.
//! 2. **Load** ([`load_path`], [`load_file`]): read one file into one or more
//!    [`ParsedDocument`]s, choosing the loader by extension:
//!    - plain text (`.txt`), CRLF/CR normalised to LF;
//!    - Markdown (`.md`, `.markdown`): YAML front matter becomes metadata and is removed,
//!      ATX and setext headings become [`excerpt_core::Section`]s, fenced code blocks
//!      become *atomic* ranges the chunker avoids splitting;
//!    - HTML (`.html`, `.htm`): visible text extracted with blocks separated by blank
//!      lines, `h1`–`h6` become sections, `<pre>` blocks are atomic;
//!    - JSONL (`.jsonl`, the eval corpus format): one document per line, text kept
//!      byte-for-byte; ATX headings (if any) become sections without changing the text;
//!    - PDF (`.pdf`): text extracted page by page with PDFium, loaded at run time
//!      ([`pdfium_library_path`]); `pages` maps the text to pages, headings come from the
//!      outline or font sizes, running headers/footers are left out. Encrypted, scanned
//!      (no text layer), corrupt and empty PDFs are skipped with the reason. With
//!      [`LoadOptions::pdf_worker`] set, PDFium runs in a worker process under memory,
//!      CPU and wall-clock limits ([`PdfWorker`], the `cage` module): a hostile PDF
//!      costs its worker, never the loading process.
//!    - Word (`.docx`): read with docx-rs after a check of the package (a zip bomb over
//!      [`MAX_DOCX_UNPACKED_BYTES`], XML nested deeper than [`MAX_DOCX_DEPTH`], a corrupt
//!      zip are skipped with the reason); paragraphs separated by blank lines, list
//!      items one per line, table rows one per line with cells joined by ` | ` (atomic),
//!      `Title` and `Heading N` paragraphs (by style name, so localized style ids work)
//!      become sections; the title is the core properties' title, else the first
//!      `Title` or heading paragraph. The old binary `.doc` is not read.
//!
//!    Every offset in a [`ParsedDocument`] refers to its `text`, which is exactly what is
//!    stored. Loading is layered: the parsed types and the section builder at the bottom
//!    (`parsed`), one loader per format above them (`formats`), the dispatcher that
//!    reads, decodes and picks the loader on top (`load`); no layer imports from one
//!    above it. Binary, empty, non-UTF-8 and unknown files are refused with a typed
//!    [`IngestError`] naming the path ([`IngestError::is_skip`] tells benign skips apart).
//! 3. **Sentences** ([`split_sentences`]): byte ranges partitioning the text, based on
//!    Unicode sentence boundaries, also broken after every line end; whitespace after a
//!    sentence belongs to it.
//! 4. **Chunk** ([`chunk`]): turn a [`ParsedDocument`] into a [`excerpt_core::Document`]
//!    whose chunks partition the text exactly, never cross the end of a section's own
//!    text, avoid splitting atomic ranges, and fit the configured limit. [`ChunkOptions`]
//!    carries the chunker, the token counter and the tokens to keep free for text indexed
//!    with each chunk; see [`chunk`] for the rules of each
//!    [`excerpt_core::ChunkerConfig`].

// One exception, in `cage`: the limits set in a PDF worker between fork and exec.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cage;
mod chunk;
mod error;
mod formats;
mod load;
mod parsed;
mod sentences;
mod walk;

pub use cage::{
    run_pdf_page_worker, run_pdf_worker, PdfLimits, PdfWorker, DEFAULT_PDF_MEMORY_BYTES,
    DEFAULT_PDF_TIMEOUT_SECS, MAX_WORKER_REPLY_BYTES,
};
pub use chunk::{chunk, ChunkOptions, CHARS_PER_TOKEN_ESTIMATE};

/// The metadata key of a document's language (its ISO 639-3 code), detected at ingest
/// unless the document or the ingest names one.
pub const LANGUAGE_KEY: &str = excerpt_analysis::LANGUAGE_KEY;

/// The ISO 639-3 code of the language `name` names: an ISO 639-1 or 639-3 code or an
/// English name (`de`, `deu`, `German`); `None` for a language the text analysis does
/// not know.
pub fn language_code(name: &str) -> Option<&'static str> {
    excerpt_analysis::Language::parse(name).map(|l| l.code())
}
pub use error::IngestError;
pub use formats::docx::{MAX_DOCX_DEPTH, MAX_DOCX_UNPACKED_BYTES};
pub use formats::html::MAX_HTML_DEPTH;
pub use formats::pdf::{
    PageError, PageImage, PageRequest, PixelBox, DEFAULT_PAGE_WIDTH, MAX_PAGE_WIDTH,
    MIN_PAGE_WIDTH, PDFIUM_ENV,
};
pub use load::{
    is_supported, load_bytes, load_bytes_with, load_file, load_file_with_progress, load_path,
    load_str, pdfium_library_path, render_pdf_page, DocFormat, LoadOptions, DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_PDF_PAGES,
};
pub use parsed::{relative_id, Loaded, ParsedDocument};
pub use sentences::split_sentences;
pub use walk::{walk, WalkItem, WalkOptions};
