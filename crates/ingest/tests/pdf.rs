//! PDF loading through the real PDFium (fetched by `scripts/fetch-pdfium.sh`, which
//! `scripts/test.sh` runs first): pages, headings, running headers, bad PDFs.

use std::path::Path;

use proptest::strategy::Strategy as _;

use excerpt_ingest::{
    load_bytes, load_file, load_file_with_progress, DocFormat, IngestError, LoadOptions,
};
use excerpt_testkit::fixtures::{pdf, pdf_placed, report_pdf as report, PdfFace, PdfLine, PdfText};

fn pdfium_present() {
    let lib = excerpt_ingest::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium is missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
}

#[test]
fn generated_report_has_pages_sections_and_no_furniture() {
    pdfium_present();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.pdf");
    std::fs::write(&path, report()).unwrap();
    let loaded = load_file(&path, dir.path(), &LoadOptions::default()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let d = &loaded.documents[0];
    assert_eq!(d.id, "report.pdf");
    assert_eq!(d.title, "Lighthouse Maintenance");
    assert_eq!(d.metadata["pages"], 3);
    // Pages partition the text.
    assert_eq!(d.pages.len(), 3);
    assert_eq!(d.pages[0].byte_start, 0);
    assert_eq!(d.pages[2].byte_end, d.text.len());
    for w in d.pages.windows(2) {
        assert_eq!(w[0].byte_end, w[1].byte_start);
    }
    // Running header and page numbers are left out.
    assert!(!d.text.contains("Annual Report"), "{}", d.text);
    assert!(!d.text.lines().any(|l| l.trim() == "2"), "{}", d.text);
    let paths: Vec<String> = d.sections.iter().map(|s| s.path_string()).collect();
    assert_eq!(
        paths,
        [
            "Lighthouse Maintenance",
            "1 Introduction",
            "1 Introduction > 1.1 Fuel supply",
            "2 Fog signals",
            "2 Fog signals > 2.1 Compressed air",
            "3 Staffing",
        ]
    );
    let page_of = |needle: &str| {
        let at = d
            .text
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {}", d.text));
        d.pages
            .iter()
            .position(|p| p.byte_start <= at && at < p.byte_end)
    };
    assert_eq!(page_of("2.1 Compressed air"), Some(1));
    assert_eq!(page_of("Three keepers"), Some(2));
    for s in &d.sections {
        assert!(s.own.slice(&d.text).starts_with(&s.heading));
    }
}

/// A page with a bold title, body text, a heading set in italic at the body size and a
/// table written cell by cell (as PDF producers do), each row's first cell on two lines.
fn tide_table_pdf() -> Vec<u8> {
    let t = |x: f32, y: f32, size: f32, face: PdfFace, text: &'static str| PdfText {
        x,
        y,
        size,
        face,
        text,
    };
    let body = |y: f32, text: &'static str| t(72.0, y, 11.0, PdfFace::Regular, text);
    let mut page = vec![
        t(72.0, 740.0, 18.0, PdfFace::Bold, "Tide Tables"),
        body(
            710.0,
            "High and low water at the ports of the Channel, in local time,",
        ),
        body(
            696.0,
            "for the first day of the month. Times move by about fifty",
        ),
        body(
            682.0,
            "minutes a day, so read the week ahead with care and margin.",
        ),
        t(72.0, 654.0, 11.0, PdfFace::Italic, "Reading the table"),
        body(
            640.0,
            "Each row names a port and its country, then the time of high",
        ),
        body(
            626.0,
            "water and the time of low water that follows it on that day.",
        ),
        body(596.0, "Port High water Low water"),
    ];
    let rows = [
        ("Saint Malo", "France", "06:12", "12:40"),
        ("Plymouth", "England", "07:03", "13:25"),
        ("Cork", "Ireland", "07:48", "14:02"),
    ];
    for (r, (port, country, high, low)) in rows.into_iter().enumerate() {
        let y = 574.0 - 34.0 * r as f32;
        page.push(body(y, port));
        page.push(body(y - 13.0, country));
        page.push(t(220.0, y, 11.0, PdfFace::Regular, high));
        page.push(t(360.0, y, 11.0, PdfFace::Regular, low));
    }
    page.push(body(
        450.0,
        "Spring tides come two days after a new or a full moon.",
    ));
    pdf_placed(&[page])
}

#[test]
fn generated_table_stays_row_by_row_and_italic_heading_is_found() {
    pdfium_present();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tides.pdf");
    std::fs::write(&path, tide_table_pdf()).unwrap();
    let loaded = load_file(&path, dir.path(), &LoadOptions::default()).unwrap();
    let d = &loaded.documents[0];
    let paths: Vec<String> = d.sections.iter().map(|s| s.path_string()).collect();
    assert_eq!(paths.len(), 2, "{paths:?}\n{}", d.text);
    assert_eq!(paths[0], "Tide Tables");
    assert!(paths[1].ends_with("Reading the table"), "{paths:?}");
    // Each row's cells on one line, rows in order, one under another (cells that PDFium
    // already reads as one line, on one baseline, stay apart by a space).
    let rows = "Saint Malo France | 06:12 12:40\nPlymouth England | 07:03 13:25\nCork Ireland | 07:48 14:02\n";
    assert!(d.text.contains(rows), "{}", d.text);
    assert!(d.text.contains("Spring tides"), "{}", d.text);
}

#[test]
fn pages_read_are_reported_one_by_one() {
    pdfium_present();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.pdf");
    std::fs::write(&path, report()).unwrap();
    let calls = std::cell::RefCell::new(Vec::new());
    let loaded = load_file_with_progress(&path, dir.path(), &LoadOptions::default(), &|d, t| {
        calls.borrow_mut().push((d, t))
    })
    .unwrap();
    assert_eq!(loaded.documents[0].pages.len(), 3);
    assert_eq!(calls.into_inner(), [(1, 3), (2, 3), (3, 3)]);
}

#[test]
fn bad_pdfs_are_skipped_with_a_reason() {
    pdfium_present();
    let good = report();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "truncated.pdf",
            good[..good.len() / 3].to_vec(),
            "truncated",
        ),
        ("garbage.pdf", b"%PDF-1.4\nnot really".to_vec(), "corrupt"),
        ("zero.pdf", pdf(&[]), "zero pages"),
        (
            "scan.pdf",
            pdf(&[vec![], vec![]]),
            "no text layer on pages 1–2; OCR is not built in",
        ),
    ];
    for (name, bytes, reason) in cases {
        let err = load_bytes(DocFormat::Pdf, name, &bytes).expect_err(name);
        let msg = err.to_string();
        assert!(err.is_skip(), "{name}: {msg}");
        assert!(msg.contains(reason) && msg.contains(name), "{name}: {msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(matches!(err, IngestError::Pdf { .. }));
    }
}

/// Every file of the hard cases from Unstructured's examples either loads or is skipped
/// with a one-line reason (when the data is there: it is not part of the repository).
#[test]
fn unstructured_hard_cases_load_or_skip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pdf-unstructured");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("{} is not there; skipped", dir.display());
        return;
    };
    pdfium_present();
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    let (mut ok, mut skipped) = (0, Vec::new());
    for f in &files {
        match load_file(f, &dir, &LoadOptions::default()) {
            Ok(l) => {
                let d = &l.documents[0];
                assert!(!d.pages.is_empty() && d.pages.last().unwrap().byte_end == d.text.len());
                ok += 1;
            }
            Err(e) => {
                assert!(e.is_skip(), "{e}");
                assert!(!e.to_string().contains('\n'), "{e}");
                skipped.push(e.to_string());
            }
        }
    }
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0].contains("password.pdf: skipped: encrypted"),
        "{skipped:?}"
    );
    assert_eq!(ok, files.len() - 1);
}

/// A byte edit of a PDF: overwrite, delete or insert at a position (taken modulo the
/// length), or cut the file there.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Cut(usize),
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = bytes.len().max(1);
        match e {
            Edit::Set(at, b) => {
                if let Some(x) = bytes.get_mut(at % n) {
                    *x = *b;
                }
            }
            Edit::Delete(at, len) => {
                let s = (at % n).min(bytes.len());
                let e = (s + len).min(bytes.len());
                bytes.drain(s..e);
            }
            Edit::Insert(at, data) => {
                let s = (at % n).min(bytes.len());
                bytes.splice(s..s, data.iter().copied());
            }
            Edit::Cut(at) => bytes.truncate(at % n),
        }
    }
    bytes
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// A bounded fuzz run on stable through the real PDFium: damaged generated PDFs load
    /// with pages that partition the text, or are skipped with a one-line reason; never a
    /// panic.
    #[test]
    fn damaged_pdfs_load_or_skip_with_one_line(
        which in 0usize..2,
        edits in proptest::collection::vec(
            proptest::prop_oneof![
                (0usize..100_000, proptest::prelude::any::<u8>()).prop_map(|(a, b)| Edit::Set(a, b)),
                (0usize..100_000, 1usize..64).prop_map(|(a, l)| Edit::Delete(a, l)),
                (0usize..100_000, proptest::collection::vec(proptest::prelude::any::<u8>(), 1..16))
                    .prop_map(|(a, d)| Edit::Insert(a, d)),
                (0usize..100_000).prop_map(Edit::Cut),
            ],
            1..6,
        ),
    ) {
        let base = if which == 0 { report() } else { tide_table_pdf() };
        let bytes = apply(base, &edits);
        match load_bytes(DocFormat::Pdf, "damaged.pdf", &bytes) {
            Ok(loaded) => {
                for d in &loaded.documents {
                    let mut at = 0;
                    for p in &d.pages {
                        proptest::prop_assert_eq!(p.byte_start, at);
                        at = p.byte_end;
                    }
                    proptest::prop_assert_eq!(at, d.text.len());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                proptest::prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{msg}");
            }
        }
    }
}

/// A one-page PDF whose page tree claims `count` pages (the other pages do not exist:
/// PDFium cannot load them).
fn claiming_pages(count: usize) -> Vec<u8> {
    let good = pdf(&[vec![PdfLine {
        text: "The harbour opens at dawn.",
        size: 11.0,
        bold: false,
    }]]);
    let text = String::from_utf8_lossy(&good).into_owned();
    assert!(text.contains("/Count 1 >>"));
    // The cross-reference offsets after the page tree are off by a few bytes now:
    // PDFium rebuilds them, as it does for many real files.
    text.replace("/Count 1 >>", &format!("/Count {count} >>"))
        .into_bytes()
}

/// A 600-byte PDF claiming a million pages is refused at once, naming the limit; under
/// a raised limit, a hundred thousand claimed pages are read in linear time (the filter
/// of unreadable pages was quadratic: minutes for a few hundred thousand).
#[test]
fn a_page_tree_claiming_a_million_pages_is_refused() {
    pdfium_present();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claims.pdf");
    std::fs::write(&path, claiming_pages(1_000_000)).unwrap();
    let err = load_file(&path, dir.path(), &LoadOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(err.is_skip(), "{msg}");
    assert!(
        msg.contains("claims 1000000 pages, more than the limit of 20000"),
        "{msg}"
    );
    let low = LoadOptions {
        max_pdf_pages: 10,
        ..LoadOptions::default()
    };
    std::fs::write(&path, claiming_pages(11)).unwrap();
    assert!(load_file(&path, dir.path(), &low).is_err());

    std::fs::write(&path, claiming_pages(100_000)).unwrap();
    let raised = LoadOptions {
        max_pdf_pages: 100_000,
        ..LoadOptions::default()
    };
    let loaded = load_file(&path, dir.path(), &raised).unwrap();
    assert!(loaded.documents[0].text.contains("harbour"));
    assert!(
        loaded.warnings[0].contains("cannot read pages 2–100000"),
        "{:?}",
        loaded.warnings
    );
}
