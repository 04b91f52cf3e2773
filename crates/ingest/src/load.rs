//! Reading files and dispatching to the loader of their format: the top layer of
//! loading, above the format loaders (`formats`) and the types they produce
//! (`parsed`).

use std::path::{Path, PathBuf};

use crate::cage::{self, PdfWorker};
use crate::formats::pdf::{PageError, PageImage, PageRequest};
use crate::formats::{docx, html, jsonl, markdown, pdf, text};
use crate::parsed::{relative_id, Loaded, ParsedDocument};
use crate::IngestError;

/// The formats the loaders understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocFormat {
    /// Plain text, no structure.
    Text,
    /// CommonMark with YAML front matter.
    Markdown,
    /// HTML, text extracted.
    Html,
    /// One JSON document per line: `{"id", "title", "text", "metadata"?}`.
    Jsonl,
    /// PDF, text extracted page by page with PDFium (see [`pdfium_library_path`]).
    Pdf,
    /// Word (`.docx`, Office Open XML): paragraphs, lists and tables in reading order,
    /// `Title` and `Heading N` paragraphs as sections. The old binary `.doc` is not read.
    Docx,
}

impl DocFormat {
    /// The format of a path by its extension (`txt`, `md`, `markdown`, `html`, `htm`,
    /// `jsonl`, `pdf`, `docx`; case-insensitive), or one of `opts.text_extensions` as plain text.
    pub fn from_path(path: &Path, opts: &LoadOptions) -> Option<DocFormat> {
        let ext = extension(path);
        match ext.as_str() {
            "txt" => Some(DocFormat::Text),
            "md" | "markdown" => Some(DocFormat::Markdown),
            "html" | "htm" => Some(DocFormat::Html),
            "jsonl" => Some(DocFormat::Jsonl),
            "pdf" => Some(DocFormat::Pdf),
            "docx" => Some(DocFormat::Docx),
            _ if opts
                .text_extensions
                .iter()
                .any(|e| e.trim_start_matches('.').eq_ignore_ascii_case(&ext)) =>
            {
                Some(DocFormat::Text)
            }
            _ => None,
        }
    }
}

/// Default of [`LoadOptions::max_file_bytes`]: 64 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Default of [`LoadOptions::max_pdf_pages`]: more than any book or manual, far less
/// than the millions of pages a hostile page tree can claim.
pub const DEFAULT_MAX_PDF_PAGES: usize = 20_000;

/// Options of the loaders.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Further extensions (without the dot, case-insensitive; `""` for files without an
    /// extension) to load as plain text, e.g. `rst`, `log`. Off by default: unknown
    /// extensions are skipped with [`IngestError::UnknownExtension`].
    pub text_extensions: Vec<String>,
    /// Larger files are skipped with [`IngestError::TooLarge`] before they are read.
    pub max_file_bytes: u64,
    /// PDFs with more pages (as their page tree says) are refused with
    /// [`IngestError::Pdf`] before any page is read.
    pub max_pdf_pages: usize,
    /// Parse each PDF in a worker process ([`PdfWorker`]: a program, its arguments and
    /// its memory, CPU-time and wall-clock limits) instead of in this process.
    ///
    /// The trade-off: PDFium, in process (`None`, the default), costs no process start
    /// (a few milliseconds per PDF) but runs with this process's whole memory and no
    /// time limit, and a hostile PDF of a kilobyte (form XObjects drawing each other, a
    /// flate bomb) can take gigabytes and minutes, or crash it. In a worker, such a PDF
    /// only costs its worker, which is killed at its limits; the PDF is then skipped
    /// with [`IngestError::Pdf`] naming the limit. Set it whenever the PDFs are not
    /// your own, and always in a server. The worker program must speak the protocol of
    /// [`crate::run_pdf_worker`]; this crate never assumes which program that is (the
    /// `excerpt` binary passes itself with its hidden `pdf-worker` subcommand).
    pub pdf_worker: Option<PdfWorker>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            text_extensions: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_pdf_pages: DEFAULT_MAX_PDF_PAGES,
            pdf_worker: None,
        }
    }
}

/// True when [`load_file`] has a loader for `path` (by extension).
pub fn is_supported(path: &Path, opts: &LoadOptions) -> bool {
    DocFormat::from_path(path, opts).is_some()
}

/// Loads one file with default options; see [`load_file`].
///
/// `root` is the ingest root the document id is made relative to (pass the file's parent
/// directory for a file given directly). Bad lines of a JSONL file are dropped here; the
/// first one is returned as the error only when no line loaded. Use [`load_file`] to see
/// every problem.
pub fn load_path(path: &Path, root: &Path) -> Result<Vec<ParsedDocument>, IngestError> {
    let mut loaded = load_file(path, root, &LoadOptions::default())?;
    if loaded.documents.is_empty() && !loaded.problems.is_empty() {
        return Err(loaded.problems.remove(0));
    }
    Ok(loaded.documents)
}

/// Loads one file, choosing the loader by extension (see [`DocFormat::from_path`]).
///
/// The document id is `path` relative to `root` with `/` separators (the file name when
/// `path` is not under `root`); JSONL documents keep their own ids. Never panics on bad
/// input: binary files (a NUL byte in the first 8 KiB), empty or whitespace-only files,
/// invalid UTF-8, unreadable files and unknown extensions give a typed error naming the
/// path. A leading UTF-8 byte order mark is dropped; line ends are normalised to LF
/// except in JSONL, whose texts are kept exactly.
pub fn load_file(path: &Path, root: &Path, opts: &LoadOptions) -> Result<Loaded, IngestError> {
    load_file_with_progress(path, root, opts, &|_, _| {})
}

/// [`load_file`], calling `pages_read(done, total)` after each page of a PDF is read
/// (for a progress display on long files; other formats do not call it).
pub fn load_file_with_progress(
    path: &Path,
    root: &Path,
    opts: &LoadOptions,
    pages_read: &dyn Fn(usize, usize),
) -> Result<Loaded, IngestError> {
    let Some(format) = DocFormat::from_path(path, opts) else {
        return Err(IngestError::UnknownExtension {
            path: path.to_path_buf(),
            extension: extension(path),
        });
    };
    let io = |source| IngestError::Io {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > opts.max_file_bytes {
        return Err(IngestError::TooLarge {
            path: path.to_path_buf(),
            bytes: size,
            max: opts.max_file_bytes,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let id = relative_id(path, root);
    let title = file_stem(path, &id);
    let source = Some(path.display().to_string());
    if format == DocFormat::Pdf {
        return load_pdf(path, &id, &title, source, &bytes, opts, pages_read);
    }
    if format == DocFormat::Docx {
        return load_docx(path, &id, &title, source, &bytes);
    }
    let text = decode(path, &bytes)?;
    load_text(format, path, &id, &title, source, &text)
}

/// Loads in-memory bytes as if they were a file of `format` named `id`: PDF or DOCX
/// bytes, or the text formats as UTF-8 (refused like a file when binary or not UTF-8). Default
/// options: a PDF is parsed in this process; see [`load_bytes_with`].
pub fn load_bytes(format: DocFormat, id: &str, bytes: &[u8]) -> Result<Loaded, IngestError> {
    load_bytes_with(format, id, bytes, &LoadOptions::default())
}

/// [`load_bytes`] with options: a PDF is parsed under `opts.max_pdf_pages`, and in a
/// worker process when `opts.pdf_worker` is set.
pub fn load_bytes_with(
    format: DocFormat,
    id: &str,
    bytes: &[u8],
    opts: &LoadOptions,
) -> Result<Loaded, IngestError> {
    let path = PathBuf::from(id);
    let title = file_stem(&path, id);
    if format == DocFormat::Pdf {
        return load_pdf(&path, id, &title, None, bytes, opts, &|_, _| {});
    }
    if format == DocFormat::Docx {
        return load_docx(&path, id, &title, None, bytes);
    }
    let text = if format == DocFormat::Jsonl {
        std::str::from_utf8(bytes)
            .map_err(|e| IngestError::InvalidUtf8 {
                path: path.clone(),
                byte_offset: e.valid_up_to(),
            })?
            .to_string()
    } else {
        decode(&path, bytes)?
    };
    load_text(format, &path, id, &title, None, &text)
}

fn load_pdf(
    path: &Path,
    id: &str,
    title: &str,
    source: Option<String>,
    bytes: &[u8],
    opts: &LoadOptions,
    pages_read: &dyn Fn(usize, usize),
) -> Result<Loaded, IngestError> {
    let mut warnings = Vec::new();
    let base = ParsedDocument::empty(id, title, source);
    let doc = match &opts.pdf_worker {
        Some(worker) => cage::load(
            worker,
            path,
            base,
            bytes,
            opts.max_pdf_pages,
            &mut warnings,
            pages_read,
        )?,
        None => pdf::load(
            path,
            base,
            bytes,
            opts.max_pdf_pages,
            &mut warnings,
            pages_read,
        )?,
    };
    Ok(Loaded {
        documents: vec![doc],
        warnings,
        ..Loaded::default()
    })
}

/// Renders a page of an indexed PDF, `bytes` its file (named `name` in messages), with
/// the ranges of `req` outlined: in a worker process under its limits when
/// `opts.pdf_worker` is set, as a PDF is loaded, else in this process. The PDF's text
/// must be the indexed one ([`PageError::Changed`] otherwise).
pub fn render_pdf_page(
    name: &str,
    bytes: &[u8],
    req: &PageRequest,
    opts: &LoadOptions,
) -> Result<PageImage, PageError> {
    match &opts.pdf_worker {
        Some(worker) => cage::render_page(worker, Path::new(name), bytes, req),
        None => pdf::render_page(bytes, req),
    }
}

fn load_docx(
    path: &Path,
    id: &str,
    title: &str,
    source: Option<String>,
    bytes: &[u8],
) -> Result<Loaded, IngestError> {
    let doc = docx::load(path, ParsedDocument::empty(id, title, source), bytes)?;
    Ok(Loaded {
        documents: vec![doc],
        ..Loaded::default()
    })
}

/// Where PDFium, the PDF engine, is looked for: `EXCERPT_PDFIUM` (the library, or a
/// directory holding it), else `$EXCERPT_HOME/pdfium/libpdfium.so` (`EXCERPT_HOME`
/// defaulting to `$XDG_CACHE_HOME/excerpt`, then `~/.cache/excerpt`), where
/// `scripts/fetch-pdfium.sh` puts it.
pub fn pdfium_library_path() -> PathBuf {
    pdf::pdfium_library_path()
}

/// Loads an in-memory text as if it were a file of `format` named `id` (the id doubles
/// as the path in errors; its file stem is the fallback title).
pub fn load_str(format: DocFormat, id: &str, text: &str) -> Result<Loaded, IngestError> {
    let path = PathBuf::from(id);
    let title = file_stem(&path, id);
    let text = if format == DocFormat::Jsonl {
        text.to_string()
    } else {
        normalize_newlines(text.strip_prefix('\u{feff}').unwrap_or(text))
    };
    load_text(format, &path, id, &title, None, &text)
}

fn load_text(
    format: DocFormat,
    path: &Path,
    id: &str,
    title: &str,
    source: Option<String>,
    text: &str,
) -> Result<Loaded, IngestError> {
    if text.trim().is_empty() {
        return Err(IngestError::Empty {
            path: path.to_path_buf(),
        });
    }
    let one = |doc: Result<ParsedDocument, IngestError>| -> Result<Loaded, IngestError> {
        Ok(Loaded {
            documents: vec![doc?],
            ..Loaded::default()
        })
    };
    let base = ParsedDocument::empty(id, title, source);
    match format {
        DocFormat::Text => one(Ok(text::load(base, text))),
        DocFormat::Markdown => {
            let mut warnings = Vec::new();
            let mut loaded = one(markdown::load(path, base, text, &mut warnings))?;
            loaded.warnings = warnings;
            Ok(loaded)
        }
        DocFormat::Html => one(html::load(path, base, text)),
        DocFormat::Jsonl => Ok(jsonl::load(path, base.source.as_deref(), text)),
        DocFormat::Pdf => load_pdf(
            path,
            id,
            title,
            base.source,
            text.as_bytes(),
            &LoadOptions::default(),
            &|_, _| {},
        ),
        DocFormat::Docx => load_docx(path, id, title, base.source, text.as_bytes()),
    }
}

/// Checks the bytes of a file and turns them into text: binary and invalid UTF-8 are
/// refused, a BOM is dropped, line ends normalised (the caller keeps JSONL lines exact:
/// normalisation never touches escaped `\r` inside JSON strings, and raw CR is not
/// valid inside a JSON string anyway).
fn decode(path: &Path, bytes: &[u8]) -> Result<String, IngestError> {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return Err(IngestError::Binary {
            path: path.to_path_buf(),
        });
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| IngestError::InvalidUtf8 {
        path: path.to_path_buf(),
        byte_offset: e.valid_up_to(),
    })?;
    Ok(normalize_newlines(text))
}

/// CRLF and lone CR become LF.
fn normalize_newlines(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

fn file_stem(path: &Path, id: &str) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_normalised() {
        assert_eq!(normalize_newlines("a\r\nb\rc\n\r\n"), "a\nb\nc\n\n");
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;
    use std::fs;

    #[test]
    fn file_errors_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let write = |name: &str, bytes: &[u8]| {
            let p = r.join(name);
            fs::write(&p, bytes).unwrap();
            p
        };
        let bin = write("bin.txt", b"abc\0def");
        assert!(matches!(
            load_path(&bin, r),
            Err(IngestError::Binary { .. })
        ));
        let empty = write("empty.md", b"");
        assert!(matches!(
            load_path(&empty, r),
            Err(IngestError::Empty { .. })
        ));
        let ws = write("ws.txt", b" \r\n\t\n");
        let e = load_path(&ws, r).unwrap_err();
        assert!(e.is_skip());
        assert!(e.to_string().contains("ws.txt"));
        let bad = write("bad.txt", b"ok \xff\xfe");
        assert!(matches!(
            load_path(&bad, r),
            Err(IngestError::InvalidUtf8 { byte_offset: 3, .. })
        ));
        let unk = write("img.png", b"x");
        assert!(matches!(
            load_path(&unk, r),
            Err(IngestError::UnknownExtension { .. })
        ));
        assert!(matches!(
            load_path(&r.join("missing.txt"), r),
            Err(IngestError::Io { .. })
        ));
        // Allowed extra extension loads as text.
        let rst = write("notes.rst", b"\xEF\xBB\xBFline\r\nnext\r");
        let opts = LoadOptions {
            text_extensions: vec!["RST".into()],
            ..LoadOptions::default()
        };
        let l = load_file(&rst, r, &opts).unwrap();
        assert_eq!(l.documents[0].text, "line\nnext\n");
        assert_eq!(l.documents[0].title, "notes");
        assert_eq!(l.documents[0].id, "notes.rst");
        // Over the size limit: skipped before reading, with the sizes in the reason.
        let big = write("big.txt", &vec![b'a'; 3 << 20]);
        let small_limit = LoadOptions {
            max_file_bytes: 1 << 20,
            ..LoadOptions::default()
        };
        let err = load_file(&big, r, &small_limit).unwrap_err();
        assert!(matches!(err, IngestError::TooLarge { bytes, .. } if bytes == 3 << 20));
        assert!(
            err.to_string().contains("3 MiB, over the limit of 1 MiB"),
            "{err}"
        );
        assert!(load_file(&big, r, &LoadOptions::default()).is_ok());
    }

    #[test]
    fn ids_and_jsonl_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("sub")).unwrap();
        fs::write(r.join("sub/a.md"), "# Hi\ntext").unwrap();
        let d = load_path(&r.join("sub/a.md"), r).unwrap();
        assert_eq!(d[0].id, "sub/a.md");
        assert_eq!(d[0].title, "Hi");
        assert!(d[0].source.as_deref().is_some_and(|s| s.ends_with("a.md")));
        fs::write(
            r.join("c.jsonl"),
            "{\"id\":\"x\",\"text\":\"a\\r\\nb\"}\r\nnope\n",
        )
        .unwrap();
        let l = load_file(&r.join("c.jsonl"), r, &LoadOptions::default()).unwrap();
        assert_eq!(l.documents[0].text, "a\r\nb");
        assert_eq!(l.problems.len(), 1);
        fs::write(r.join("bad.jsonl"), "nope\n").unwrap();
        assert!(matches!(
            load_path(&r.join("bad.jsonl"), r),
            Err(IngestError::JsonlLine { line: 1, .. })
        ));
    }
}
