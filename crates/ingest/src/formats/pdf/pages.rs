//! Page images for the inspector: a page of an indexed PDF rendered by PDFium, with the
//! characters of some ranges of the document text outlined.
//!
//! The document text was built from PDFium's characters ([`super::layout`]), so the
//! boxes of a range come from those characters: the page's characters are read again
//! with their boxes ([`super::binding::page_lines`]), the lines the layout left out
//! (running headers and footers) are set aside, and the rest is aligned to the page's
//! indexed text in order ([`align`]), character by character, whitespace skipped. The
//! layout joins hyphenated words (a `-` of the page missing from the text) and table
//! cells (a `|` of the text missing from the page): where the two disagree, the
//! alignment looks for the nearest point where the next few characters agree again and
//! leaves what lies between unmatched, so a stretch it cannot place gets no box rather
//! than a wrong one.
//!
//! Before anything is drawn, the PDF's text is extracted again, whole: it must be the
//! indexed text ([`PageRequest::text_hash`]), or the file changed since it was indexed
//! and the page is refused ([`PageError::Changed`]).

use std::io::Write as _;

use excerpt_core::{content_hash, Document};
use pdfium_render::prelude::{PdfColor, PdfPage, PdfPoints, PdfRenderConfig};
use serde::{Deserialize, Serialize};

use super::binding::{engine, open_reason, outline, page_lines, Glyph};
use super::layout::{assemble, running_furniture};

/// Default width of a page image, in pixels.
pub const DEFAULT_PAGE_WIDTH: u32 = 1000;
/// Narrowest page image, in pixels.
pub const MIN_PAGE_WIDTH: u32 = 200;
/// Widest page image, in pixels.
pub const MAX_PAGE_WIDTH: u32 = 2000;

/// Characters that must agree after a point where page and text went apart, before the
/// alignment takes them up again.
const CONFIRM: usize = 3;
/// Farthest the alignment looks ahead on one side (page or text) to find them agree.
const MAX_SKIP: usize = 4000;
/// Farthest it looks ahead on both sides at once (a character changed, swapped).
const MAX_BOTH_SKIP: usize = 24;

/// Outline colour (RGB) and its thickness and distance from the characters, in pixels.
const OUTLINE: [u8; 3] = [0xd9, 0x48, 0x0f];
const OUTLINE_WIDTH: u32 = 2;
const OUTLINE_PAD: u32 = 2;

/// What to render: one page of an indexed PDF, and the ranges to outline on it. Built by
/// [`PageRequest::new`] from the indexed document; sent to a PDF worker as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageRequest {
    /// The page, from 0.
    pub page: usize,
    /// Width of the image in pixels, between [`MIN_PAGE_WIDTH`] and [`MAX_PAGE_WIDTH`].
    pub width: u32,
    /// Refuse a PDF whose page tree claims more pages.
    pub max_pages: usize,
    /// [`content_hash`] of the indexed document text: the PDF must give that text again.
    pub text_hash: String,
    /// The indexed text of the page.
    pub page_text: String,
    /// Where the page starts in the document text, in characters.
    pub page_start: usize,
    /// Ranges of the document text to outline, in characters (start inclusive, end
    /// exclusive); the parts off this page are ignored.
    pub highlights: Vec<(usize, usize)>,
}

impl PageRequest {
    /// Page `page` (from 0) of `doc`, `highlights` outlined, `width` pixels wide
    /// (clamped), a PDF of at most `max_pages` pages.
    pub fn new(
        doc: &Document,
        page: usize,
        highlights: Vec<(usize, usize)>,
        width: u32,
        max_pages: usize,
    ) -> Result<PageRequest, PageError> {
        if doc.pages.is_empty() {
            return Err(PageError::NotPaged);
        }
        let range = doc.pages.get(page).ok_or(PageError::NoPage {
            page,
            pages: doc.pages.len(),
        })?;
        Ok(PageRequest {
            page,
            width: width.clamp(MIN_PAGE_WIDTH, MAX_PAGE_WIDTH),
            max_pages,
            text_hash: content_hash(&[doc.text.as_bytes()]),
            page_text: range.slice(&doc.text).to_string(),
            page_start: range.char_start,
            highlights,
        })
    }
}

/// A rectangle of a page image, in pixels from its top left corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PixelBox {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// A rendered page: the PNG and, for each range asked for, the boxes drawn around its
/// characters on this page (one per line it runs over; none when it is not on this
/// page, or where its characters could not be placed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageImage {
    /// Width of the image in pixels.
    pub width: u32,
    /// Height of the image in pixels.
    pub height: u32,
    /// The image, PNG (8-bit RGB), the outlines drawn in.
    #[serde(with = "base64_bytes")]
    pub png: Vec<u8>,
    /// The boxes of each range of [`PageRequest::highlights`], in its order.
    pub boxes: Vec<Vec<PixelBox>>,
}

/// Why a page cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageError {
    /// The document has no pages: it was not read from a PDF.
    #[error("the document has no pages: it was not read from a PDF")]
    NotPaged,
    /// No such page (`page` from 0; `pages` in the document).
    #[error("the document has {pages} pages; there is no page {}", page + 1)]
    NoPage {
        /// The page asked for, from 0.
        page: usize,
        /// Pages of the document.
        pages: usize,
    },
    /// PDFium is not available (or the worker cannot be started).
    #[error("{reason}")]
    Engine {
        /// Why, in words.
        reason: String,
    },
    /// The PDF's text is not the indexed text: the file changed since it was indexed
    /// (or was indexed by a version of Excerpt that read it otherwise).
    #[error("the source file changed since it was indexed: its text is not the indexed text; ingest it again")]
    Changed,
    /// The PDF cannot be rendered: corrupt, over a limit, its worker died.
    #[error("the PDF cannot be rendered: {reason}")]
    Pdf {
        /// Why, in words.
        reason: String,
    },
}

/// PNG bytes as base64 in JSON.
mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)
    }
}

/// Renders the page `req` asks for from the PDF `bytes`, in this process: see the module
/// documentation.
pub(crate) fn render_page(bytes: &[u8], req: &PageRequest) -> Result<PageImage, PageError> {
    let pdfium = engine().map_err(|reason| PageError::Engine { reason })?;
    let pdf = pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map_err(|e| PageError::Pdf {
            reason: open_reason(&e),
        })?;
    let n = pdf.pages().len() as usize;
    if n > req.max_pages {
        return Err(PageError::Pdf {
            reason: format!(
                "the PDF claims {n} pages, more than the limit of {}",
                req.max_pages
            ),
        });
    }
    if req.page >= n {
        return Err(PageError::Changed);
    }
    // Every page's lines, as the ingest read them (the text depends on all of them:
    // running headers are found across pages), the boxes of the one asked for.
    let mut glyphs: Vec<Vec<Glyph>> = Vec::new();
    let mut pages = Vec::with_capacity(n);
    for i in 0..n {
        let collect = (i == req.page).then_some(&mut glyphs);
        let lines = pdf
            .pages()
            .get(i as _)
            .and_then(|page| page.text().map(|t| page_lines(&t, collect)))
            .unwrap_or_default();
        pages.push(lines);
    }
    let assembled = assemble(&pages, &outline(&pdf));
    let same_page = assembled
        .pages
        .get(req.page)
        .is_some_and(|&(s, e)| assembled.text[s..e] == req.page_text);
    if content_hash(&[assembled.text.as_bytes()]) != req.text_hash || !same_page {
        return Err(PageError::Changed);
    }
    let furniture = running_furniture(&pages);
    let failed = |what: &str, e: pdfium_render::prelude::PdfiumError| PageError::Pdf {
        reason: format!("PDFium cannot {what} ({e:?})"),
    };
    let page = pdf
        .pages()
        .get(req.page as _)
        .map_err(|e| failed("read the page", e))?;
    let width = req.width.clamp(MIN_PAGE_WIDTH, MAX_PAGE_WIDTH);
    let config = PdfRenderConfig::new()
        .set_target_width(width as i32)
        .set_maximum_height(width as i32 * 4)
        .set_clear_color(PdfColor::WHITE)
        .render_form_data(true)
        .render_annotations(true);
    let bitmap = page
        .render_with_config(&config)
        .map_err(|e| failed("render the page", e))?;
    let (w, h) = (bitmap.width().max(0) as u32, bitmap.height().max(0) as u32);
    let mut rgb = rgb_of(&bitmap.as_rgba_bytes(), w, h);
    drop(bitmap);

    // The kept lines' characters in order, with their line and box in pixels.
    let mut chars = Vec::new();
    let mut line_of = Vec::new();
    let mut px = Vec::new();
    for (li, line) in glyphs.iter().enumerate() {
        if furniture.contains(&(req.page, li)) {
            continue;
        }
        for g in line {
            chars.push(g.c);
            line_of.push(li);
            px.push(g.bounds.and_then(|b| to_pixels(&page, &config, b)));
        }
    }
    let placed = align(&req.page_text, &chars);
    let n_chars = placed.len();
    let boxes: Vec<Vec<PixelBox>> = req
        .highlights
        .iter()
        .map(|&(s, e)| {
            let from = s.saturating_sub(req.page_start).min(n_chars);
            let to = e.saturating_sub(req.page_start).min(n_chars);
            line_runs(&placed[from..to.max(from)], &line_of, &px)
                .into_iter()
                .filter_map(|b| clip(b, w, h))
                .collect()
        })
        .collect();
    for b in boxes.iter().flatten() {
        draw_outline(&mut rgb, w, h, *b);
    }
    Ok(PageImage {
        width: w,
        height: h,
        png: encode_png(&rgb, w, h),
        boxes,
    })
}

/// A box in page points (left, bottom, right, top) in the pixels of the image `config`
/// renders: left, top, right, bottom.
fn to_pixels(page: &PdfPage<'_>, config: &PdfRenderConfig, b: [f32; 4]) -> Option<[f32; 4]> {
    let [l, bottom, r, top] = b;
    let (x0, y0) = page
        .points_to_pixels(PdfPoints::new(l), PdfPoints::new(top), config)
        .ok()?;
    let (x1, y1) = page
        .points_to_pixels(PdfPoints::new(r), PdfPoints::new(bottom), config)
        .ok()?;
    Some([
        x0.min(x1) as f32,
        y0.min(y1) as f32,
        x0.max(x1) as f32,
        y0.max(y1) as f32,
    ])
}

/// For each character of `text`, the index in `glyphs` of the character of the page it
/// stands for, or `None` where the alignment could not place it (whitespace is never
/// placed).
///
/// Both sides are walked in order, whitespace of the text skipped. Where they disagree,
/// the nearest point where [`CONFIRM`] characters agree again is looked for, ahead on
/// the page (characters the layout dropped: a hyphen at a line end), ahead in the text
/// (characters it added: the `|` between table cells), or ahead on both (a character
/// written otherwise); what is skipped stays unplaced. A match is only started where
/// [`CONFIRM`] characters agree (or the text ends), so one character that happens to be
/// the same is never taken for a match on its own. When no point agrees again, the rest
/// of the text stays unplaced.
pub(crate) fn align(text: &str, glyphs: &[char]) -> Vec<Option<usize>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = vec![None; chars.len()];
    let t: Vec<usize> = (0..chars.len())
        .filter(|&k| !chars[k].is_whitespace())
        .collect();
    let (nt, ng) = (t.len(), glyphs.len());
    let agree = |i: usize, j: usize| -> bool {
        if i >= nt || j >= ng {
            return false;
        }
        let k = CONFIRM.min(nt - i).min(ng - j);
        // Fewer than CONFIRM only where the text ends.
        (k == CONFIRM || i + k == nt) && (0..k).all(|m| chars[t[i + m]] == glyphs[j + m])
    };
    let (mut i, mut j) = (0, 0);
    let mut in_run = false;
    while i < nt && j < ng {
        if (in_run && chars[t[i]] == glyphs[j]) || agree(i, j) {
            out[t[i]] = Some(j);
            i += 1;
            j += 1;
            in_run = true;
            continue;
        }
        in_run = false;
        let Some((a, b)) = resync(i, j, nt, ng, &agree) else {
            break;
        };
        i += a;
        j += b;
    }
    out
}

/// The nearest skip `(in the text, on the page)` after which the two agree again.
fn resync(
    i: usize,
    j: usize,
    nt: usize,
    ng: usize,
    agree: &dyn Fn(usize, usize) -> bool,
) -> Option<(usize, usize)> {
    let far = MAX_SKIP.min((nt - i).max(ng - j));
    for d in 1..=far {
        // One side first: the layout drops or adds characters far more often than it
        // changes one.
        if j + d < ng && agree(i, j + d) {
            return Some((0, d));
        }
        if i + d < nt && agree(i + d, j) {
            return Some((d, 0));
        }
        if d <= MAX_BOTH_SKIP {
            for a in 1..d {
                if agree(i + a, j + d - a) {
                    return Some((a, d - a));
                }
            }
        }
    }
    None
}

/// The boxes of the placed characters `placed` (indices into `line_of` and `px`), one
/// per run of characters on one line: left, top, right, bottom in pixels.
fn line_runs(
    placed: &[Option<usize>],
    line_of: &[usize],
    px: &[Option<[f32; 4]>],
) -> Vec<[f32; 4]> {
    let mut out: Vec<[f32; 4]> = Vec::new();
    let mut line = None;
    for &g in placed.iter().flatten() {
        let Some(b) = px.get(g).copied().flatten() else {
            continue;
        };
        let l = line_of.get(g).copied();
        match out.last_mut() {
            Some(cur) if line == l => {
                cur[0] = cur[0].min(b[0]);
                cur[1] = cur[1].min(b[1]);
                cur[2] = cur[2].max(b[2]);
                cur[3] = cur[3].max(b[3]);
            }
            _ => {
                out.push(b);
                line = l;
            }
        }
    }
    out
}

/// A box in pixels (left, top, right, bottom) inside a `w`×`h` image, or `None` when
/// nothing of it is.
fn clip(b: [f32; 4], w: u32, h: u32) -> Option<PixelBox> {
    let x0 = b[0].floor().clamp(0.0, w as f32) as u32;
    let y0 = b[1].floor().clamp(0.0, h as f32) as u32;
    let x1 = b[2].ceil().clamp(0.0, w as f32) as u32;
    let y1 = b[3].ceil().clamp(0.0, h as f32) as u32;
    (x1 > x0 && y1 > y0).then_some(PixelBox {
        x: x0,
        y: y0,
        width: x1 - x0,
        height: y1 - y0,
    })
}

/// RGB bytes of a `w`×`h` RGBA bitmap (rows possibly padded), alpha dropped.
fn rgb_of(rgba: &[u8], w: u32, h: u32) -> Vec<u8> {
    let (w, h) = (w as usize, h as usize);
    let mut out = Vec::with_capacity(w * h * 3);
    if h == 0 {
        return out;
    }
    let stride = rgba.len() / h;
    for row in rgba.chunks(stride.max(1)).take(h) {
        for p in row.chunks_exact(4).take(w) {
            out.extend_from_slice(&p[..3]);
        }
    }
    out.resize(w * h * 3, 0xff);
    out
}

/// Draws the outline of `b` (grown by [`OUTLINE_PAD`]) into the `w`×`h` RGB image.
fn draw_outline(rgb: &mut [u8], w: u32, h: u32, b: PixelBox) {
    if w == 0 || h == 0 {
        return;
    }
    let x0 = b.x.saturating_sub(OUTLINE_PAD + OUTLINE_WIDTH);
    let y0 = b.y.saturating_sub(OUTLINE_PAD + OUTLINE_WIDTH);
    let x1 = (b.x + b.width + OUTLINE_PAD + OUTLINE_WIDTH).min(w);
    let y1 = (b.y + b.height + OUTLINE_PAD + OUTLINE_WIDTH).min(h);
    for y in y0..y1 {
        for x in x0..x1 {
            let edge = x < x0 + OUTLINE_WIDTH
                || x + OUTLINE_WIDTH >= x1
                || y < y0 + OUTLINE_WIDTH
                || y + OUTLINE_WIDTH >= y1;
            if edge {
                let at = (y as usize * w as usize + x as usize) * 3;
                rgb[at..at + 3].copy_from_slice(&OUTLINE);
            }
        }
    }
}

/// A `w`×`h` 8-bit RGB image as PNG: each row filtered with `Sub`, one zlib stream.
pub(crate) fn encode_png(rgb: &[u8], w: u32, h: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    let stride = w as usize * 3;
    let mut raw = Vec::with_capacity((stride + 1) * h as usize);
    for row in rgb.chunks_exact(stride.max(1)).take(h as usize) {
        raw.push(1);
        for (k, &v) in row.iter().enumerate() {
            raw.push(if k >= 3 {
                v.wrapping_sub(row[k - 3])
            } else {
                v
            });
        }
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = z.write_all(&raw);
    let data = z.finish().unwrap_or_default();
    png_chunk(&mut out, b"IDAT", &data);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends a PNG chunk: length, type, data, CRC-32 of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed_text(text: &str, glyphs: &str) -> String {
        let g: Vec<char> = glyphs.chars().collect();
        let chars: Vec<char> = text.chars().collect();
        align(text, &g)
            .iter()
            .enumerate()
            .map(|(k, p)| match p {
                Some(j) => {
                    assert_eq!(chars[k], g[*j], "a character placed on another");
                    chars[k]
                }
                None if chars[k].is_whitespace() => ' ',
                None => '_',
            })
            .collect()
    }

    #[test]
    fn the_same_characters_align_one_to_one_whitespace_skipped() {
        assert_eq!(placed_text("ab cd\n\nef", "abcdef"), "ab cd  ef");
        let p = align("ab cd", &['a', 'b', 'c', 'd']);
        assert_eq!(p, [Some(0), Some(1), None, Some(2), Some(3)]);
    }

    #[test]
    fn a_hyphen_the_layout_dropped_is_skipped() {
        // "exam-" at a line end, "ple" on the next: joined in the text.
        let glyphs: Vec<char> = "anexam-plehere".chars().collect();
        let p = align("an example here", &glyphs);
        let at: Vec<Option<usize>> = p.into_iter().collect();
        assert_eq!(at[7], Some(7), "the p after the hyphen: {at:?}");
        assert_eq!(at[3], Some(2));
        assert!(!at.contains(&Some(6)), "the hyphen stands for nothing");
    }

    #[test]
    fn table_bars_the_layout_added_stay_unplaced() {
        assert_eq!(placed_text("Depth | Tide", "DepthTide"), "Depth _ Tide");
    }

    #[test]
    fn a_changed_character_is_left_out_and_the_rest_placed() {
        assert_eq!(placed_text("abcdXfghij", "abcdYfghij"), "abcd_fghij");
    }

    #[test]
    fn text_the_page_does_not_have_gets_no_box() {
        // Nothing on the page agrees: nothing is placed, not a character.
        assert_eq!(placed_text("zzzz yyyy", "abcdefgh"), "____ ____");
        // A single character in common is not a match.
        assert_eq!(placed_text("xax", "bab"), "___");
        // Text past the end of the page's characters stays unplaced.
        assert_eq!(placed_text("abcdef ghijk", "abcdef"), "abcdef _____");
    }

    #[test]
    fn lines_dropped_from_the_page_are_skipped_over() {
        // A line of the page missing from the text (a caption the layout left out).
        assert_eq!(
            placed_text("first line. second line.", "firstline.Figure3.secondline."),
            "first line. second line."
        );
    }

    #[test]
    fn runs_make_one_box_per_line() {
        let placed = [Some(0), Some(1), None, Some(2), Some(3)];
        let line_of = [0, 0, 1, 1];
        let px = [
            Some([10.0, 10.0, 20.0, 30.0]),
            Some([20.0, 12.0, 30.0, 28.0]),
            Some([10.0, 40.0, 18.0, 60.0]),
            None,
        ];
        let runs = line_runs(&placed, &line_of, &px);
        assert_eq!(runs, [[10.0, 10.0, 30.0, 30.0], [10.0, 40.0, 18.0, 60.0]]);
        assert_eq!(
            clip([-5.0, 2.5, 8.2, 9.0], 8, 8),
            Some(PixelBox {
                x: 0,
                y: 2,
                width: 8,
                height: 6
            })
        );
        assert_eq!(clip([9.0, 0.0, 12.0, 4.0], 8, 8), None);
    }

    #[test]
    fn png_has_its_signature_size_and_checksums() {
        let (w, h) = (3u32, 2u32);
        let rgb: Vec<u8> = (0..(w * h * 3) as u8).collect();
        let png = encode_png(&rgb, w, h);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), w);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), h);
        // The IHDR CRC over type and data.
        let mut crc = flate2::Crc::new();
        crc.update(&png[12..29]);
        assert_eq!(crc.sum().to_be_bytes(), png[29..33]);
        // Decoded back: the Sub filter undone gives the pixels.
        let len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let mut raw = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::ZlibDecoder::new(&png[41..41 + len]),
            &mut raw,
        )
        .unwrap();
        let mut back = Vec::new();
        for row in raw.chunks(1 + 9) {
            assert_eq!(row[0], 1);
            let mut r: Vec<u8> = Vec::new();
            for (k, &v) in row[1..].iter().enumerate() {
                r.push(if k >= 3 { v.wrapping_add(r[k - 3]) } else { v });
            }
            back.extend(r);
        }
        assert_eq!(back, rgb);
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
    }

    #[test]
    fn outlines_stay_inside_the_image() {
        let (w, h) = (10u32, 10u32);
        let mut rgb = vec![0xffu8; (w * h * 3) as usize];
        draw_outline(
            &mut rgb,
            w,
            h,
            PixelBox {
                x: 6,
                y: 6,
                width: 10,
                height: 10,
            },
        );
        // The corner near the box is drawn; the far one is not.
        assert_eq!(&rgb[(2 * 10 + 2) * 3..(2 * 10 + 2) * 3 + 3], &OUTLINE);
        assert_eq!(&rgb[..3], &[0xff, 0xff, 0xff]);
    }
}
