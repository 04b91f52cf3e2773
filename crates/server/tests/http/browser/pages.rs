//! A piece of a PDF in its document: the page it is on shown as an image, fetched with
//! the tab's token (an `<img>` alone could not send it), its text outlined by the
//! server. PDFium is needed, as by the other PDF tests.

use std::sync::Arc;

use excerpt::{Engine, EngineOptions, IngestOptions, NoProgress};
use excerpt_server::ServerOptions;
use serde_json::json;

use super::super::{engine_options, start_engine};
use super::{enc, tools, Browser, Tools};

#[test]
fn a_pdf_piece_shows_its_page_with_an_outline() {
    let Some(tools) = tools() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::new(engine_options(&tmp.path().join("idx"))));
    page_view(&tools, engine, tmp.path(), "pdf-page");
}

/// The same on a PostgreSQL index (skipped without one unless
/// `EXCERPT_REQUIRE_POSTGRES=1`, as the other PostgreSQL views).
#[test]
fn a_pdf_piece_shows_its_page_on_postgres() {
    let Some(tools) = tools() else { return };
    let Some(url) = excerpt_testkit::postgres::database("pdfpage") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::new(EngineOptions::new(url)));
    page_view(&tools, engine, tmp.path(), "pdf-page-postgres");
}

/// Ingests the report PDF from a folder in `dir` into `engine`, serves it with a token,
/// opens the compressor piece and checks its page image; the screenshot is `shot`.
fn page_view(tools: &Tools, engine: Arc<Engine>, dir: &std::path::Path, shot: &str) {
    let lib = excerpt::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium is missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
    let docs = dir.join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("report.pdf"),
        excerpt_testkit::fixtures::report_pdf(),
    )
    .unwrap();
    let report = engine
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(report.added, 1, "{report:?}");
    let s = start_engine(
        engine,
        ServerOptions {
            log_requests: false,
            token: Some("page-s3cret".into()),
            ..ServerOptions::default()
        },
    );
    let b = Browser::start(tools, &s, false);
    let q = "compressor engine started before use";
    b.goto(&format!("/?q={}&strategy=topk&budget=60", enc(q)));
    b.wait("!document.getElementById('auth').hidden", "the token form");
    b.type_into("#token", "page-s3cret");
    b.click("#token-use");
    b.wait(
        "document.querySelector('.run.side-a .piece')",
        "the context",
    );
    // The card of the compressor piece names its page.
    let index = b.js(
        "return Array.from(document.querySelectorAll('.run.side-a .piece'))
           .findIndex((c) => c.textContent.includes('compressor'));",
    );
    let index = index.as_i64().expect("an index");
    assert!(index >= 0, "a card of the compressor piece");
    let card = format!(".run.side-a .piece[data-index=\"{index}\"]");
    assert!(b.text_of(&format!("{card} .piece-meta")).contains("p. 2"));
    b.click(&format!("{card} button.open"));
    b.wait(
        "document.querySelector('#doc-page img:not([hidden])') && document.querySelector('#doc-page img').complete && document.querySelector('#doc-page img').naturalWidth > 0",
        "the page image",
    );
    let caption = b.text_of("#doc-page figcaption");
    assert!(caption.starts_with("Page 2 of 3"), "{caption}");
    assert!(caption.contains("outlined"), "{caption}");
    assert!(!caption.contains("could not be placed"), "{caption}");
    let img = b.js(
        "const i = document.querySelector('#doc-page img');
         const c = document.createElement('canvas');
         c.width = i.naturalWidth; c.height = i.naturalHeight;
         const g = c.getContext('2d');
         g.drawImage(i, 0, 0);
         const d = g.getImageData(0, 0, c.width, c.height).data;
         let outline = 0;
         for (let k = 0; k < d.length; k += 4) {
           if (d[k] === 0xd9 && d[k + 1] === 0x48 && d[k + 2] === 0x0f) outline++;
         }
         const r = i.getBoundingClientRect();
         return {src: i.src, w: i.naturalWidth, h: i.naturalHeight, outline, shown: r.width, alt: i.alt};",
    );
    assert!(img["src"].as_str().unwrap().starts_with("blob:"), "{img}");
    assert_eq!(img["w"], json!(1000), "{img}");
    assert!(
        img["outline"].as_u64().unwrap() > 500,
        "the outline is drawn: {img}"
    );
    assert!(
        img["shown"].as_f64().unwrap() > 100.0,
        "the page is on screen: {img}"
    );
    assert!(
        img["alt"].as_str().unwrap().contains("Page 2 of 3"),
        "{img}"
    );
    b.shot(shot);
}
