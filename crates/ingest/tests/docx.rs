//! Word (.docx) loading: documents written in memory with docx-rs (the crate the loader
//! reads with), and hand-made hostile packages written with zip.

use std::io::{Cursor, Write};

use docx_rs::{
    AbstractNumbering, BreakType, Delete, Docx, Hyperlink, HyperlinkType, IndentLevel, Insert,
    Level, LevelJc, LevelText, NumberFormat, Numbering, NumberingId, Paragraph, Run, Start, Style,
    StyleType, Table, TableCell, TableRow,
};
use excerpt_ingest::{
    chunk, is_supported, load_bytes, load_file, ChunkOptions, DocFormat, IngestError, LoadOptions,
    ParsedDocument, MAX_DOCX_DEPTH, MAX_DOCX_UNPACKED_BYTES,
};
use zip::write::SimpleFileOptions;

fn para(text: &str) -> Paragraph {
    Paragraph::new().add_run(Run::new().add_text(text))
}

fn styled(text: &str, style: &str) -> Paragraph {
    para(text).style(style)
}

fn cell(text: &str) -> TableCell {
    TableCell::new().add_paragraph(para(text))
}

fn row(cells: &[&str]) -> TableRow {
    TableRow::new(cells.iter().map(|c| cell(c)).collect())
}

/// Packs a document; `core_title` replaces the core properties (docx-rs writes no title).
fn pack(docx: Docx, core_title: Option<&str>) -> Vec<u8> {
    let mut xml = docx.build();
    if let Some(title) = core_title {
        xml.doc_props.core = format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></cp:coreProperties>"#
        )
        .into_bytes();
    }
    let mut out = Cursor::new(Vec::new());
    xml.pack(&mut out).expect("packed");
    out.into_inner()
}

/// The styles of the report: `Title`, and the two heading levels under localized ids
/// (as a German Word writes them) whose names are the built-in English ones; a bullet
/// list (10) and a numbered one (11), off the ids docx-rs writes its default list under.
fn styles(docx: Docx) -> Docx {
    docx.add_style(Style::new("Title", StyleType::Paragraph).name("Title"))
        .add_style(Style::new("berschrift1", StyleType::Paragraph).name("heading 1"))
        .add_style(Style::new("berschrift2", StyleType::Paragraph).name("heading 2"))
        .add_abstract_numbering(
            AbstractNumbering::new(10)
                .add_level(Level::new(
                    0,
                    Start::new(1),
                    NumberFormat::new("bullet"),
                    LevelText::new("•"),
                    LevelJc::new("left"),
                ))
                .add_level(Level::new(
                    1,
                    Start::new(1),
                    NumberFormat::new("bullet"),
                    LevelText::new("o"),
                    LevelJc::new("left"),
                )),
        )
        .add_abstract_numbering(AbstractNumbering::new(11).add_level(Level::new(
            0,
            Start::new(1),
            NumberFormat::new("decimal"),
            LevelText::new("%1."),
            LevelJc::new("left"),
        )))
        .add_numbering(Numbering::new(10, 10))
        .add_numbering(Numbering::new(11, 11))
}

fn report(core_title: Option<&str>) -> Vec<u8> {
    let item = |text: &str, num: usize, level: usize| {
        para(text).numbering(NumberingId::new(num), IndentLevel::new(level))
    };
    let docx = styles(Docx::new())
        .add_paragraph(styled("Quarterly  Report", "Title"))
        .add_paragraph(para("Intro paragraph."))
        .add_paragraph(styled("Results", "berschrift1"))
        .add_paragraph(
            Paragraph::new()
                .add_run(Run::new().add_text("Sales grew "))
                .add_insert(Insert::new(Run::new().add_text("by 12% ")))
                .add_delete(Delete::new().add_run(Run::new().add_text("GONE ")))
                .add_hyperlink(
                    Hyperlink::new("https://example.com", HyperlinkType::External)
                        .add_run(Run::new().add_text("(source)")),
                ),
        )
        .add_paragraph(styled("By region", "berschrift2"))
        .add_table(Table::new(vec![
            row(&["Region", "Sales"]),
            row(&["North", "10"]),
            row(&["South", "20"]),
        ]))
        .add_paragraph(para(""))
        .add_paragraph(styled("Next steps", "berschrift1"))
        .add_paragraph(item("Hire", 10, 0))
        .add_paragraph(item("Build", 10, 0))
        .add_paragraph(item("Nested item", 10, 1))
        .add_paragraph(item("First", 11, 0))
        .add_paragraph(item("Second", 11, 0))
        .add_paragraph(
            Paragraph::new().add_run(
                Run::new()
                    .add_text("R&D <team>")
                    .add_break(BreakType::TextWrapping)
                    .add_text("ends."),
            ),
        );
    pack(docx, core_title)
}

const REPORT_TEXT: &str = "Quarterly  Report\n\n\
Intro paragraph.\n\n\
Results\n\n\
Sales grew by 12% (source)\n\n\
By region\n\n\
Region | Sales\nNorth | 10\nSouth | 20\n\n\
Next steps\n\n\
- Hire\n- Build\n  - Nested item\n\n\
1. First\n2. Second\n\n\
R&D <team>\nends.";

fn load_docx(bytes: &[u8]) -> Result<ParsedDocument, IngestError> {
    let mut loaded = load_bytes(DocFormat::Docx, "reports/q3.docx", bytes)?;
    assert_eq!(loaded.documents.len(), 1);
    Ok(loaded.documents.remove(0))
}

/// Every section's ranges slice the text exactly at char boundaries, starting with its
/// heading, nested in its parent's.
fn assert_sections_exact(d: &ParsedDocument) {
    for s in &d.sections {
        for r in [&s.range, &s.own] {
            assert!(r.byte_start <= r.byte_end && r.byte_end <= d.text.len());
            assert_eq!(r.slice(&d.text), &d.text[r.byte_start..r.byte_end]);
            assert_eq!(
                d.text[..r.byte_start].chars().count(),
                r.char_start,
                "char offsets"
            );
        }
        assert!(
            s.own.slice(&d.text).trim_start().starts_with(&s.heading) || s.own.byte_start == 0,
            "{:?} does not start at its heading",
            s.heading
        );
        if let Some(p) = s.parent {
            let p = &d.sections[p as usize];
            assert!(
                p.range.byte_start <= s.range.byte_start && s.range.byte_end <= p.range.byte_end
            );
        }
    }
}

#[test]
fn report_loads_with_sections_tables_and_lists() {
    let d = load_docx(&report(None)).expect("loaded");
    assert_eq!(d.text, REPORT_TEXT);
    assert_eq!(d.id, "reports/q3.docx");
    assert_eq!(
        d.title, "Quarterly Report",
        "the Title paragraph, whitespace collapsed"
    );
    let heads: Vec<(&str, u8, Vec<&str>)> = d
        .sections
        .iter()
        .map(|s| {
            (
                s.heading.as_str(),
                s.level,
                s.path.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        heads,
        vec![
            ("Quarterly Report", 1, vec!["Quarterly Report"]),
            ("Results", 1, vec!["Results"]),
            ("By region", 2, vec!["Results", "By region"]),
            ("Next steps", 1, vec!["Next steps"]),
        ]
    );
    assert_sections_exact(&d);
    let slice = |i: usize| d.sections[i].range.slice(&d.text);
    assert_eq!(slice(0), "Quarterly  Report\n\nIntro paragraph.\n\n");
    assert_eq!(
        slice(1),
        "Results\n\nSales grew by 12% (source)\n\nBy region\n\nRegion | Sales\nNorth | 10\nSouth | 20\n\n"
    );
    assert_eq!(
        d.sections[2].own.slice(&d.text),
        "By region\n\nRegion | Sales\nNorth | 10\nSouth | 20\n\n"
    );
    assert!(slice(3).starts_with("Next steps\n\n- Hire"));
    assert!(slice(3).ends_with("ends."));
    // The table is one atomic range: the chunker keeps it whole when it fits.
    assert_eq!(d.atomic.len(), 1);
    let (a, b) = d.atomic[0];
    assert_eq!(&d.text[a..b], "Region | Sales\nNorth | 10\nSouth | 20");
    // And the document chunks under the usual invariants.
    let doc = chunk(d, &ChunkOptions::default()).expect("chunked");
    let joined: String = (0..doc.chunks.len()).map(|i| doc.chunk_text(i)).collect();
    assert_eq!(joined, REPORT_TEXT);
}

#[test]
fn title_from_core_properties_then_title_then_heading_then_stem() {
    let d = load_docx(&report(Some("Q3 &amp; beyond"))).unwrap();
    assert_eq!(d.title, "Q3 & beyond");
    assert_eq!(d.text, REPORT_TEXT, "the core title is not text");
    let blank_core = load_docx(&report(Some("  "))).unwrap();
    assert_eq!(blank_core.title, "Quarterly Report");
    let headed = pack(
        styles(Docx::new())
            .add_paragraph(para("Preface."))
            .add_paragraph(styled("Chapter One", "berschrift2")),
        None,
    );
    assert_eq!(load_docx(&headed).unwrap().title, "Chapter One");
    let plain = pack(Docx::new().add_paragraph(para("Just text.")), None);
    let d = load_docx(&plain).unwrap();
    assert_eq!(d.title, "q3", "the file stem");
    assert!(d.sections.is_empty());
    assert_eq!(d.text, "Just text.");
}

#[test]
fn headings_by_style_id_and_outline_level_without_style_names() {
    // No styles defined: `Heading1` as an id is read as the name; an outline level on
    // the paragraph itself makes a heading too.
    let docx = Docx::new()
        .add_paragraph(styled("Top", "Heading1"))
        .add_paragraph(para("a"))
        .add_paragraph(para("Outlined").outline_lvl(1))
        .add_paragraph(para("b"))
        .add_paragraph(styled("Not a heading", "Quote"))
        .add_paragraph(para("c"));
    let d = load_docx(&pack(docx, None)).unwrap();
    let paths: Vec<Vec<String>> = d.sections.iter().map(|s| s.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            vec!["Top".to_string()],
            vec!["Top".into(), "Outlined".into()]
        ]
    );
    assert_eq!(d.text, "Top\n\na\n\nOutlined\n\nb\n\nNot a heading\n\nc");
    assert_sections_exact(&d);
}

#[test]
fn lists_numbered_by_their_style() {
    // Word's `List Number` and `List Bullet` styles carry the numbering themselves.
    let mut number = Style::new("ListNumber", StyleType::Paragraph).name("List Number");
    number.paragraph_property = number
        .paragraph_property
        .numbering(NumberingId::new(11), IndentLevel::new(0));
    let mut bullet = Style::new("ListBullet", StyleType::Paragraph).name("List Bullet");
    bullet.paragraph_property = bullet
        .paragraph_property
        .numbering(NumberingId::new(10), IndentLevel::new(0));
    let docx = styles(Docx::new())
        .add_style(number)
        .add_style(bullet)
        .add_paragraph(styled("one", "ListNumber"))
        .add_paragraph(styled("two", "ListNumber"))
        .add_paragraph(styled("dot", "ListBullet"))
        // docx-rs writes the numbering part only when a paragraph has its own numbering.
        .add_paragraph(para("own").numbering(NumberingId::new(10), IndentLevel::new(0)))
        .add_paragraph(para("after"));
    let d = load_docx(&pack(docx, None)).unwrap();
    assert_eq!(d.text, "1. one\n2. two\n\n- dot\n- own\n\nafter");
}

#[test]
fn nested_tables_are_written_inline_in_their_cell() {
    let inner = Table::new(vec![row(&["x", "y"]), row(&["z", "w"])]);
    let docx = Docx::new().add_table(Table::new(vec![TableRow::new(vec![
        cell("outer"),
        TableCell::new().add_table(inner),
    ])]));
    let d = load_docx(&pack(docx, None)).unwrap();
    assert_eq!(d.text, "outer | x | y / z | w");
}

#[test]
fn files_load_by_extension_and_doc_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Report.DOCX");
    std::fs::write(&path, report(None)).unwrap();
    let opts = LoadOptions::default();
    assert!(is_supported(&path, &opts));
    let loaded = load_file(&path, dir.path(), &opts).unwrap();
    let d = &loaded.documents[0];
    assert_eq!(d.id, "Report.DOCX");
    assert_eq!(
        d.source.as_deref(),
        Some(path.display().to_string().as_str())
    );
    assert_eq!(d.text, REPORT_TEXT);

    let old = dir.path().join("old.doc");
    std::fs::write(&old, [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]).unwrap();
    assert!(!is_supported(&old, &opts));
    let err = load_file(&old, dir.path(), &opts).unwrap_err();
    assert!(matches!(err, IngestError::UnknownExtension { .. }), "{err}");
    assert!(err.is_skip());
    let msg = err.to_string();
    assert!(
        msg.contains("old binary Word") && msg.contains(".docx"),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);
}

/// A hostile or broken package: a one-line skip reason naming the file, no panic.
fn refused(bytes: &[u8], expect: &str) -> String {
    let err = load_docx(bytes).expect_err("refused");
    assert!(matches!(err, IngestError::Docx { .. }), "{err}");
    assert!(err.is_skip());
    let msg = err.to_string();
    assert!(msg.starts_with("reports/q3.docx: skipped: "), "{msg}");
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.contains(expect), "{msg:?} should mention {expect:?}");
    msg
}

/// A zip of the given parts (deflated).
fn zip_of(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in parts {
        w.start_file(*name, SimpleFileOptions::default()).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn corrupt_and_foreign_packages_are_skipped_with_the_reason() {
    refused(b"", "not a DOCX package");
    refused(b"PK\x03\x04 this is no zip at all", "not a DOCX package");
    refused(
        &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0, 0, 0],
        "old binary Word",
    );
    let good = report(None);
    refused(&good[..good.len() / 2], "not a DOCX package");
    // A spreadsheet, or any zip without the main document part.
    refused(
        &zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("xl/workbook.xml", b"<workbook/>"),
        ]),
        "no word/document.xml",
    );
    // A main document that is not XML.
    refused(
        &zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("word/document.xml", b"<w:document><w:body><w:p a=\"1\""),
        ]),
        "malformed XML",
    );
    // A damaged deflate stream inside an intact zip: flip bytes in the middle of the
    // main document's compressed data.
    let mut damaged = good.clone();
    let at = find(&damaged, b"word/document.xml").expect("local header") + 40;
    for b in &mut damaged[at..at + 16] {
        *b ^= 0x5A;
    }
    refused(&damaged, "");
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn empty_document_is_skipped_as_empty() {
    let err = load_docx(&pack(Docx::new().add_paragraph(para("   ")), None)).unwrap_err();
    assert!(matches!(err, IngestError::Empty { .. }), "{err}");
}

#[test]
fn zip_bombs_are_refused_before_they_are_read() {
    // One part inflating past the limit: a few hundred kilobytes of zip.
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().large_file(true);
    w.start_file("[Content_Types].xml", opts).unwrap();
    w.write_all(b"<Types/>").unwrap();
    w.start_file("word/document.xml", opts).unwrap();
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..=(MAX_DOCX_UNPACKED_BYTES >> 20) {
        w.write_all(&zeros).unwrap();
    }
    let bomb = w.finish().unwrap().into_inner();
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    refused(&bomb, "MiB");
    // Many parts, each small, together past the limit.
    let chunk = vec![b'a'; 16 << 20];
    let names: Vec<String> = (0..17).map(|i| format!("word/media/part{i}.bin")).collect();
    let mut parts: Vec<(&str, &[u8])> = vec![("word/document.xml", b"<w:document/>")];
    parts.extend(names.iter().map(|n| (n.as_str(), chunk.as_slice())));
    refused(&zip_of(&parts), "over the limit");
}

/// The body of a document holding tables nested `depth` deep around one word.
fn nested_tables_xml(depth: usize) -> Vec<u8> {
    let ns = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let open = "<w:tbl><w:tr><w:tc>".repeat(depth);
    let close = "<w:p/></w:tc></w:tr></w:tbl>".repeat(depth);
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document {ns}><w:body>{open}<w:p><w:r><w:t>core</w:t></w:r></w:p>{close}<w:p><w:r><w:t>after</w:t></w:r></w:p></w:body></w:document>"#
    )
    .into_bytes()
}

fn with_document(document: Vec<u8>) -> Vec<u8> {
    let mut xml = Docx::new().add_paragraph(para("placeholder")).build();
    xml.document = document;
    let mut out = Cursor::new(Vec::new());
    xml.pack(&mut out).unwrap();
    out.into_inner()
}

#[test]
fn tables_nested_too_deep_are_refused_and_deep_ones_load_on_a_small_stack() {
    let msg = refused(&with_document(nested_tables_xml(10_000)), "nests elements");
    assert!(msg.contains(&MAX_DOCX_DEPTH.to_string()), "{msg}");
    // Just under the limit (3 elements a level, 4 around them): loads, even when the
    // caller's thread has a small stack, since docx-rs runs on a thread of its own.
    let depth = (MAX_DOCX_DEPTH - 8) / 3;
    let bytes = with_document(nested_tables_xml(depth));
    let d = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || load_docx(&bytes))
        .unwrap()
        .join()
        .expect("no stack overflow")
        .expect("loaded");
    assert_eq!(d.text, "core\n\nafter");
}

#[test]
fn reads_a_file_given_by_path_with_the_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.docx");
    std::fs::write(&path, b"not a zip").unwrap();
    let err = load_file(&path, dir.path(), &LoadOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with(&path.display().to_string()),
        "{err}"
    );
    assert!(matches!(err, IngestError::Docx { .. }));
}
