//! The PDFium binding (Chrome's PDF engine), bound at run time with `pdfium-render`: the
//! shared library `libpdfium.so` is found through `EXCERPT_PDFIUM` or in the cache
//! (`$EXCERPT_HOME/pdfium/libpdfium.so`, fetched by `scripts/fetch-pdfium.sh`).
//!
//! [`load`] opens a PDF's bytes, reads each page's characters into [`Line`]s (font, size,
//! position, ligatures and presentation forms normalised, Arabic lam-alef ligatures put
//! back in logical order) and the outline into [`OutlineEntry`]s, refuses PDFs without a
//! text layer, and hands the lines to [`layout`](super::layout) for the text, headings
//! and pages.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pdfium_render::prelude::{
    PdfBookmark, PdfDocument, PdfFontWeight, PdfPageTextChar, Pdfium, PdfiumError,
    PdfiumInternalError,
};
use unicode_normalization::UnicodeNormalization;

use super::layout::{assemble, Line, OutlineEntry};
use crate::parsed::{build_sections, collapse_ws, ParsedDocument};
use crate::IngestError;

/// The environment variable naming the PDFium library (a file, or a directory holding
/// `libpdfium.so`).
pub const PDFIUM_ENV: &str = "EXCERPT_PDFIUM";

/// Most bookmarks read from an outline (a malformed outline can loop).
const MAX_OUTLINE: usize = 5000;

/// Where PDFium is looked for: `EXCERPT_PDFIUM` (a file, or a directory holding the
/// library), else `$EXCERPT_HOME/pdfium/libpdfium.so` (`EXCERPT_HOME` defaulting to
/// `$XDG_CACHE_HOME/excerpt`, then `~/.cache/excerpt`).
pub fn pdfium_library_path() -> PathBuf {
    let name = Pdfium::pdfium_platform_library_name();
    if let Some(p) = std::env::var_os(PDFIUM_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_dir() { p.join(&name) } else { p };
    }
    let home = match std::env::var_os("EXCERPT_HOME").filter(|p| !p.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(|| PathBuf::from(".cache"))
            .join("excerpt"),
    };
    home.join("pdfium").join(name)
}

/// The process-wide PDFium instance, bound on first use; the reason when it cannot be.
pub(super) fn engine() -> Result<&'static Pdfium, String> {
    static ENGINE: OnceLock<Result<Pdfium, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let path = pdfium_library_path();
            if !path.is_file() {
                return Err(format!(
                    "PDF support needs PDFium, not found at {}; run `excerpt pdfium fetch` (or `excerpt setup`) or set {PDFIUM_ENV} to a libpdfium",
                    path.display()
                ));
            }
            match Pdfium::bind_to_library(&path) {
                Ok(bindings) => Ok(Pdfium::new(bindings)),
                Err(e) => Err(format!(
                    "PDF support needs PDFium; {} could not be loaded ({e:?})",
                    path.display()
                )),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads a PDF file's bytes, calling `pages_read(done, total)` after each page. Pages
/// without a text layer (scans) are named in `warnings`; a PDF with none at all is
/// refused, and so is one whose page tree claims more than `max_pages` pages (before
/// any is read).
pub(crate) fn load(
    path: &Path,
    mut doc: ParsedDocument,
    bytes: &[u8],
    max_pages: usize,
    warnings: &mut Vec<String>,
    pages_read: &dyn Fn(usize, usize),
) -> Result<ParsedDocument, IngestError> {
    let fail = |reason: String| IngestError::Pdf {
        path: path.to_path_buf(),
        reason,
    };
    let pdfium = engine().map_err(|reason| IngestError::PdfEngine {
        path: path.to_path_buf(),
        reason,
    })?;
    let pdf = pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map_err(|e| fail(open_reason(&e)))?;
    let n = pdf.pages().len() as usize;
    if n == 0 {
        return Err(fail("the PDF has zero pages".into()));
    }
    if n > max_pages {
        return Err(fail(format!(
            "the PDF claims {n} pages, more than the limit of {max_pages}"
        )));
    }
    let (pages, unreadable) = read_pages(&pdf, path, warnings, pages_read);
    let outline = outline(&pdf);
    drop(pdf);
    check_text_layer(path, &pages, &unreadable, warnings).map_err(fail)?;
    let a = assemble(&pages, &outline);
    if a.text.trim().is_empty() {
        return Err(IngestError::Empty {
            path: path.to_path_buf(),
        });
    }
    if let Some(h) = a.headings.iter().min_by_key(|h| (h.level, h.start)) {
        if a.pages.first().is_some_and(|&(_, end)| h.start < end) {
            doc.title = h.text.clone();
        }
    }
    doc.metadata
        .insert("pages".into(), serde_json::Value::from(n));
    let invalid = |source| IngestError::Invalid {
        doc_id: doc.id.clone(),
        source,
    };
    let sections = build_sections(&a.text, a.headings).map_err(invalid)?;
    let idx = excerpt_core::CharIndex::new(&a.text);
    let mut page_ranges = Vec::with_capacity(a.pages.len());
    for (s, e) in a.pages {
        page_ranges.push(idx.range(s, e).map_err(invalid)?);
    }
    doc.sections = sections;
    doc.pages = page_ranges;
    doc.text = a.text;
    Ok(doc)
}

/// The lines of every page of `pdf`, calling `pages_read(done, total)` after each, and
/// the pages PDFium cannot read (in order; empty in `pages`, named in `warnings`
/// unless none can be read).
fn read_pages(
    pdf: &PdfDocument<'_>,
    path: &Path,
    warnings: &mut Vec<String>,
    pages_read: &dyn Fn(usize, usize),
) -> (Vec<Vec<Line>>, Vec<usize>) {
    let n = pdf.pages().len() as usize;
    let mut pages = Vec::with_capacity(n);
    let mut unreadable = Vec::new();
    for i in 0..n {
        let lines = pdf
            .pages()
            .get(i as _)
            .and_then(|page| page.text().map(|t| page_lines(&t, None)));
        pages.push(lines.unwrap_or_else(|_| {
            unreadable.push(i);
            Vec::new()
        }));
        pages_read(i + 1, n);
    }
    if !unreadable.is_empty() && unreadable.len() < n {
        warnings.push(format!(
            "{}: PDFium cannot read {}; left out",
            path.display(),
            pages_phrase(&unreadable)
        ));
    }
    (pages, unreadable)
}

/// Why a PDF whose pages hold no text at all is refused; pages without a text layer
/// among readable ones (scans) are named in `warnings`. `unreadable`: the pages PDFium
/// could not read, sorted.
fn check_text_layer(
    path: &Path,
    pages: &[Vec<Line>],
    unreadable: &[usize],
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let n = pages.len();
    // `is_unreadable` says it in constant time: the filters stay linear in the page
    // count.
    let mut is_unreadable = vec![false; n];
    for &i in unreadable {
        is_unreadable[i] = true;
    }
    let no_text: Vec<usize> = (0..n)
        .filter(|&i| pages[i].iter().all(|l| l.text.trim().is_empty()))
        .collect();
    if no_text.len() == n {
        return Err(if unreadable.len() == n {
            "corrupt PDF: PDFium cannot read any of its pages".to_string()
        } else {
            format!(
                "no text layer on {}; OCR is not built in",
                pages_phrase(&no_text)
            )
        });
    }
    let scanned: Vec<usize> = no_text.into_iter().filter(|&i| !is_unreadable[i]).collect();
    if !scanned.is_empty() {
        warnings.push(format!(
            "{}: no text layer on {} (of {n}); OCR is not built in, left out",
            path.display(),
            pages_phrase(&scanned)
        ));
    }
    Ok(())
}

/// Why PDFium could not open a document, in words.
pub(super) fn open_reason(e: &PdfiumError) -> String {
    match e {
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::PasswordError) => {
            "encrypted (a password is needed to open it)".into()
        }
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::SecurityError) => {
            "encrypted (unsupported security handler)".into()
        }
        PdfiumError::PdfiumLibraryInternalError(
            PdfiumInternalError::FormatError | PdfiumInternalError::FileError,
        ) => "corrupt or truncated PDF (PDFium cannot parse it)".into(),
        other => format!("PDFium cannot open it ({other:?})"),
    }
}

/// "page 4" or "pages 1–3, 7" for 0-based pages.
fn pages_phrase(pages: &[usize]) -> String {
    let word = if pages.len() == 1 { "page" } else { "pages" };
    format!("{word} {}", page_list(pages))
}

/// "1–3, 7" for the 0-based pages [0, 1, 2, 6].
pub(crate) fn page_list(pages: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let mut j = i;
        while j + 1 < pages.len() && pages[j + 1] == pages[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            format!("{}", pages[i] + 1)
        } else {
            format!("{}–{}", pages[i] + 1, pages[j] + 1)
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// The lines of one page from PDFium's characters (in its reading order; it ends lines
/// with a generated CR LF). With `glyphs`, the visible characters of each line are
/// pushed there too, one list a line, each with its box on the page (in the order of
/// the line's text, whitespace left out): what the page images of the inspector outline.
pub(super) fn page_lines(
    text: &pdfium_render::prelude::PdfPageText<'_>,
    mut glyphs: Option<&mut Vec<Vec<Glyph>>>,
) -> Vec<Line> {
    let collect = glyphs.is_some();
    let mut lines = Vec::new();
    let mut cur = Line::default();
    let mut cur_glyphs: Vec<Glyph> = Vec::new();
    let mut sizes: Vec<f32> = Vec::new();
    let mut finish = |cur: &mut Line,
                      cur_glyphs: &mut Vec<Glyph>,
                      sizes: &mut Vec<f32>,
                      lines: &mut Vec<Line>| {
        if !cur.text.trim().is_empty() {
            cur.size = mode(sizes);
            lines.push(std::mem::take(cur));
            if let Some(g) = glyphs.as_deref_mut() {
                g.push(std::mem::take(cur_glyphs));
            }
        } else {
            *cur = Line::default();
        }
        cur_glyphs.clear();
        sizes.clear();
    };
    let mut last: Option<(PdfPageTextChar<'_>, f32, f32)> = None;
    // Where the characters of the glyph last seen start in `cur.text` (and in
    // `cur_glyphs`), and its origin.
    let mut glyph: Option<(usize, usize, f32, f32, char)> = None;
    let chars = text.chars();
    for ch in chars.iter() {
        let c = match char::from_u32(ch.unicode_value()) {
            Some('\n') => {
                cur.x_end = right_edge(last.take());
                finish(&mut cur, &mut cur_glyphs, &mut sizes, &mut lines);
                glyph = None;
                continue;
            }
            // PDFium marks a hyphen at a line end with U+0002.
            Some('\u{2}') => '-',
            Some('\t' | '\u{a0}') => ' ',
            Some(c) if c.is_control() || c == '\u{fffe}' || c == '\u{feff}' => continue,
            Some(c) => c,
            None => continue,
        };
        if c.is_whitespace() {
            glyph = None;
            push_normalised(&mut cur.text, c);
            continue;
        }
        let (ox, oy) = ch.origin().map_or((0.0, 0.0), |(x, y)| (x.value, y.value));
        // The font is asked at the start of each word (a change inside a word is rare).
        let word_start = glyph.is_none();
        if sizes.is_empty() {
            start_line(&mut cur, &ch, ox, oy);
        } else if word_start && cur.uniform && strip_subset(&ch.font_name()) != cur.face {
            cur.uniform = false;
        }
        let size = ch.scaled_font_size().value;
        sizes.push(size);
        // A glyph that stands for several characters of a right-to-left script (the
        // Arabic lam-alef ligature) comes out in visual order: put them back in logical
        // order by inserting each at the start of its glyph's characters.
        let bounds = if collect { char_box(&ch) } else { None };
        match glyph {
            Some((at, at_glyph, gx, gy, prev))
                if (gx - ox).abs() < 0.01
                    && (gy - oy).abs() < 0.01
                    && right_to_left(prev)
                    && right_to_left(c) =>
            {
                let mut piece = String::new();
                push_normalised(&mut piece, c);
                cur.text.insert_str(at, &piece);
                if collect {
                    cur_glyphs.splice(at_glyph..at_glyph, boxed(&piece, bounds));
                }
            }
            _ => {
                glyph = Some((cur.text.len(), cur_glyphs.len(), ox, oy, c));
                let from = cur.text.len();
                push_normalised(&mut cur.text, c);
                if collect {
                    let piece = boxed(&cur.text[from..], bounds);
                    cur_glyphs.extend(piece);
                }
            }
        }
        last = Some((ch, ox, size));
    }
    cur.x_end = right_edge(last.take());
    finish(&mut cur, &mut cur_glyphs, &mut sizes, &mut lines);
    lines
}

/// The right edge of a line's last visible character, asked of PDFium once per line.
fn right_edge(last: Option<(PdfPageTextChar<'_>, f32, f32)>) -> f32 {
    last.map_or(0.0, |(ch, ox, size)| {
        ch.tight_bounds()
            .map_or(ox + size * 0.5, |r| r.right().value)
            .max(ox)
    })
}

/// The visible characters of `piece`, each with the box of the PDF character.
fn boxed(piece: &str, bounds: Option<[f32; 4]>) -> Vec<Glyph> {
    piece
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| Glyph { c, bounds })
        .collect()
}

/// Sets what a line takes from its first visible character `ch` at origin `(ox, oy)`:
/// position, face, fixed pitch, bold.
fn start_line(cur: &mut Line, ch: &PdfPageTextChar<'_>, ox: f32, oy: f32) {
    let face = strip_subset(&ch.font_name()).to_string();
    cur.y = oy;
    cur.x = ox;
    cur.mono = ch.font_is_fixed_pitch();
    cur.bold = ch.font_is_bold_reenforced()
        || face.contains("Bold")
        || matches!(
            ch.font_weight(),
            Some(
                PdfFontWeight::Weight600
                    | PdfFontWeight::Weight700Bold
                    | PdfFontWeight::Weight800
                    | PdfFontWeight::Weight900
            )
        );
    cur.uniform = true;
    cur.face = face;
}

/// A visible character of a line (after the normalisation the text has) and the box of
/// the PDF character it comes from, in page points: left, bottom, right, top.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Glyph {
    pub c: char,
    pub bounds: Option<[f32; 4]>,
}

/// The box of a character: its loose bounds (the line's height, as a text selection
/// shows it), else its tight bounds.
fn char_box(ch: &PdfPageTextChar<'_>) -> Option<[f32; 4]> {
    let r = ch.loose_bounds().or_else(|_| ch.tight_bounds()).ok()?;
    let b = [
        r.left().value,
        r.bottom().value,
        r.right().value,
        r.top().value,
    ];
    b.iter().all(|v| v.is_finite()).then_some(b)
}

/// A letter of a right-to-left script (Hebrew, Arabic and their supplements).
fn right_to_left(c: char) -> bool {
    matches!(c, '\u{0590}'..='\u{08ff}' | '\u{fb1d}'..='\u{fdff}' | '\u{fe70}'..='\u{feff}')
}

/// A font name without its subset tag ("ABCDEF+Times-Roman" → "Times-Roman").
fn strip_subset(name: &str) -> &str {
    match name.split_once('+') {
        Some((tag, rest)) if tag.len() == 6 && tag.chars().all(|c| c.is_ascii_uppercase()) => rest,
        _ => name,
    }
}

/// Pushes `c`, with presentation forms (ligatures ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ, Hebrew and Arabic
/// presentation forms) decomposed by NFKC.
fn push_normalised(out: &mut String, c: char) {
    if matches!(c, '\u{fb00}'..='\u{fdff}' | '\u{fe70}'..='\u{fefe}') {
        out.extend(std::iter::once(c).nfkc());
    } else {
        out.push(c);
    }
}

/// The most common value, to a tenth of a point (0 when empty).
fn mode(values: &[f32]) -> f32 {
    let mut counts: HashMap<i32, usize> = HashMap::new();
    for v in values {
        *counts.entry((v * 10.0).round() as i32).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(k, n)| (n, k))
        .map_or(0.0, |(k, _)| k as f32 / 10.0)
}

/// The outline in reading order (depth first), at most [`MAX_OUTLINE`] entries, depth 6.
pub(super) fn outline(pdf: &PdfDocument<'_>) -> Vec<OutlineEntry> {
    let mut out = Vec::new();
    let mut stack: Vec<(PdfBookmark<'_>, u8)> = Vec::new();
    if let Some(root) = pdf.bookmarks().root() {
        stack.push((root, 1));
    }
    let mut visited = 0usize;
    while let Some((b, level)) = stack.pop() {
        visited += 1;
        if visited > MAX_OUTLINE {
            break;
        }
        let page = b
            .destination()
            .and_then(|d| d.page_index().ok())
            .or_else(|| {
                b.action().and_then(|a| {
                    a.as_local_destination_action()
                        .and_then(|l| l.destination().ok())
                        .and_then(|d| d.page_index().ok())
                })
            })
            .map(|p| p as usize);
        if let Some(title) = b.title() {
            out.push(OutlineEntry {
                title: collapse_ws(&title),
                level,
                page,
            });
        }
        // Sibling after the children: push it first.
        if let Some(s) = b.next_sibling() {
            stack.push((s, level));
        }
        if level < 6 {
            if let Some(c) = b.first_child() {
                stack.push((c, level + 1));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_lists_and_presentation_forms() {
        assert_eq!(page_list(&[0, 1, 2, 6]), "1–3, 7");
        let mut s = String::new();
        push_normalised(&mut s, '\u{fb01}');
        assert_eq!(s, "fi");
        let mut s = String::new();
        push_normalised(&mut s, '\u{fefb}');
        assert_eq!(s, "\u{644}\u{627}");
    }

    #[test]
    fn font_names_and_scripts() {
        assert_eq!(strip_subset("GUCMMW+Times-Roman"), "Times-Roman");
        assert_eq!(strip_subset("Calibri,Bold"), "Calibri,Bold");
        assert!(right_to_left('\u{644}') && !right_to_left('a'));
    }
}
