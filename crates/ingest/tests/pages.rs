//! Page images of an indexed PDF through the real PDFium (fetched by
//! `scripts/fetch-pdfium.sh`, which `scripts/test.sh` runs first): the page rendered, the
//! boxes of a range of its text where its characters are, the PDF's text checked.

use std::io::Read as _;

use excerpt_ingest::{
    load_bytes, render_pdf_page, DocFormat, LoadOptions, PageError, PageImage, PageRequest,
    ParsedDocument, PixelBox,
};
use excerpt_testkit::fixtures::report_pdf;

fn pdfium_present() {
    let lib = excerpt_ingest::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium is missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
}

/// The report PDF, loaded in this process.
fn report() -> (Vec<u8>, ParsedDocument) {
    let bytes = report_pdf();
    let mut loaded = load_bytes(DocFormat::Pdf, "report.pdf", &bytes).unwrap();
    (bytes, loaded.documents.remove(0))
}

/// The character range of `needle` in the document text.
fn range_of(d: &ParsedDocument, needle: &str) -> (usize, usize) {
    let at = d
        .text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {}", d.text));
    let start = d.text[..at].chars().count();
    (start, start + needle.chars().count())
}

/// A request for page `page` (from 0) of `d`, as the server builds one from the stored
/// document.
fn request(d: &ParsedDocument, page: usize, highlights: Vec<(usize, usize)>) -> PageRequest {
    let p = &d.pages[page];
    PageRequest {
        page,
        width: 800,
        max_pages: 100,
        text_hash: excerpt_core::content_hash(&[d.text.as_bytes()]),
        page_text: p.slice(&d.text).to_string(),
        page_start: p.char_start,
        highlights,
    }
}

/// Width, height and the unfiltered rows of an 8-bit RGB PNG, its chunks' CRCs checked.
fn decode_png(png: &[u8]) -> (u32, u32, Vec<Vec<u8>>) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    let (mut w, mut h, mut data) = (0, 0, Vec::new());
    let mut at = 8;
    loop {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let body = &png[at + 8..at + 8 + len];
        let mut crc = flate2::Crc::new();
        crc.update(&png[at + 4..at + 8 + len]);
        assert_eq!(
            crc.sum().to_be_bytes(),
            png[at + 8 + len..at + 12 + len],
            "CRC of {}",
            String::from_utf8_lossy(kind)
        );
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(body[0..4].try_into().unwrap());
                h = u32::from_be_bytes(body[4..8].try_into().unwrap());
                assert_eq!(&body[8..], [8, 2, 0, 0, 0], "8-bit RGB");
            }
            b"IDAT" => data.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = 1 + 3 * w as usize;
    assert_eq!(raw.len(), stride * h as usize, "rows of {w}×{h}");
    let mut rows = Vec::new();
    for r in raw.chunks(stride) {
        assert_eq!(r[0], 1, "the Sub filter");
        let mut row: Vec<u8> = Vec::with_capacity(3 * w as usize);
        for (k, &v) in r[1..].iter().enumerate() {
            let left = if k >= 3 { row[k - 3] } else { 0 };
            row.push(v.wrapping_add(left));
        }
        rows.push(row);
    }
    (w, h, rows)
}

fn inside(b: &PixelBox, page: &PageImage) {
    assert!(
        b.width > 0 && b.height > 0 && b.x + b.width <= page.width && b.y + b.height <= page.height,
        "{b:?} in {}×{}",
        page.width,
        page.height
    );
}

#[test]
fn a_page_renders_with_the_boxes_of_its_sentences_in_reading_order() {
    pdfium_present();
    let (bytes, d) = report();
    let first = range_of(
        &d,
        "The lamp room is inspected every morning by the keeper on duty.",
    );
    let second = range_of(&d, "Kerosene arrives by boat twice a month");
    // Two lines: one box each.
    let both_lines = range_of(
        &d,
        "Brass fittings are polished weekly and the lens is cleaned with\nalcohol.",
    );
    // On page 2: no box on page 1.
    let elsewhere = range_of(&d, "The compressor engine must be started");
    let t = std::time::Instant::now();
    let page = render_pdf_page(
        "report.pdf",
        &bytes,
        &request(&d, 0, vec![first, second, both_lines, elsewhere]),
        &LoadOptions::default(),
    )
    .unwrap();
    eprintln!(
        "page 1 rendered in {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    // A US Letter page (612×792 points), 800 pixels wide.
    assert_eq!(page.width, 800);
    assert!((1030..=1038).contains(&page.height), "{}", page.height);
    let (w, h, rows) = decode_png(&page.png);
    assert_eq!((w, h), (page.width, page.height));
    assert_eq!(page.boxes.len(), 4);
    assert_eq!(page.boxes[0].len(), 1, "{:?}", page.boxes);
    assert_eq!(page.boxes[1].len(), 1, "{:?}", page.boxes);
    assert_eq!(page.boxes[2].len(), 2, "{:?}", page.boxes);
    assert!(page.boxes[3].is_empty(), "{:?}", page.boxes);
    for b in page.boxes.iter().flatten() {
        inside(b, &page);
    }
    let (a, b) = (page.boxes[0][0], page.boxes[1][0]);
    // Reading order is top to bottom; the sentences start at the left margin (72 pt).
    assert!(a.y + a.height <= b.y, "{a:?} above {b:?}");
    let [l1, l2] = [page.boxes[2][0], page.boxes[2][1]];
    assert!(a.y + a.height <= l1.y && l1.y + l1.height <= l2.y && l2.y + l2.height <= b.y);
    let margin = 72.0 / 612.0 * 800.0;
    for x in [a.x, b.x, l1.x, l2.x] {
        assert!(
            (x as f32 - margin).abs() < 6.0,
            "{x} at the margin {margin}"
        );
    }
    // A full line of body text is wider than half the page; "alcohol." is short.
    assert!(
        a.width > 350 && l1.width > 350 && l2.width < 120,
        "{a:?} {l1:?} {l2:?}"
    );
    // Ink inside the first box (the text), and the outline drawn around it.
    let dark = |x: u32, y: u32| {
        rows[y as usize][x as usize * 3..x as usize * 3 + 3]
            .iter()
            .all(|&v| v < 128)
    };
    assert!((a.y..a.y + a.height).any(|y| (a.x..a.x + a.width).any(|x| dark(x, y))));
    let above = a.y - 3;
    let outline = &rows[above as usize][(a.x + 10) as usize * 3..(a.x + 10) as usize * 3 + 3];
    assert_eq!(
        outline,
        [0xd9, 0x48, 0x0f],
        "the outline above the first box"
    );
    // Without highlights, the same page has no outline colour.
    let plain = render_pdf_page(
        "report.pdf",
        &bytes,
        &request(&d, 0, vec![]),
        &LoadOptions::default(),
    )
    .unwrap();
    assert!(plain.boxes.is_empty());
    let (_, _, rows) = decode_png(&plain.png);
    assert!(!rows
        .iter()
        .any(|r| r.chunks(3).any(|p| p == [0xd9, 0x48, 0x0f])));
}

#[test]
fn a_heading_and_a_sentence_on_page_two() {
    pdfium_present();
    let (bytes, d) = report();
    let heading = range_of(&d, "2.1 Compressed air");
    let sentence = range_of(
        &d,
        "The compressor engine must be started twenty minutes before use.",
    );
    let page = render_pdf_page(
        "report.pdf",
        &bytes,
        &request(&d, 1, vec![heading, sentence]),
        &LoadOptions::default(),
    )
    .unwrap();
    let (h, s) = (page.boxes[0][0], page.boxes[1][0]);
    assert_eq!((page.boxes[0].len(), page.boxes[1].len()), (1, 1));
    assert!(h.y + h.height <= s.y, "{h:?} above {s:?}");
    // The heading is set larger: its box is taller.
    assert!(h.height > s.height, "{h:?} {s:?}");
}

#[test]
fn a_pdf_whose_text_changed_is_refused() {
    pdfium_present();
    let (bytes, d) = report();
    let mut req = request(&d, 0, vec![]);
    req.text_hash = excerpt_core::content_hash(&[b"another text"]);
    let err = render_pdf_page("report.pdf", &bytes, &req, &LoadOptions::default()).unwrap_err();
    assert_eq!(err, PageError::Changed);
    assert!(
        err.to_string().contains("changed since it was indexed"),
        "{err}"
    );
    // The page text of another page: refused too.
    let mut req = request(&d, 0, vec![]);
    req.page_text = d.pages[1].slice(&d.text).to_string();
    let err = render_pdf_page("report.pdf", &bytes, &req, &LoadOptions::default()).unwrap_err();
    assert_eq!(err, PageError::Changed);
    // Another PDF altogether.
    let other = excerpt_testkit::fixtures::pdf(&[vec![excerpt_testkit::fixtures::PdfLine {
        bold: false,
        size: 11.0,
        text: "Something else entirely.",
    }]]);
    let err = render_pdf_page(
        "report.pdf",
        &other,
        &request(&d, 0, vec![]),
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err, PageError::Changed);
    // Not a PDF.
    let err = render_pdf_page(
        "report.pdf",
        b"plain text",
        &request(&d, 0, vec![]),
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, PageError::Pdf { .. }), "{err:?}");
}
