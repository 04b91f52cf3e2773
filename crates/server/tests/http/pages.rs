//! `GET /v1/pages/{page}/{id}`: a page of an indexed PDF as a PNG, read again from the
//! file the index was built from (PDFium needed, as by the other PDF tests: fetched by
//! `scripts/fetch-pdfium.sh`).

use std::path::PathBuf;
use std::sync::Arc;

use excerpt::{Engine, IngestOptions, NoProgress};
use excerpt_server::ServerOptions;
use serde_json::{json, Value};

use super::{agent, answer, assert_error, engine_options, start_engine, TestServer};

const TOKEN: &str = "page-token";

fn pdfium_present() {
    let lib = excerpt::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium is missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
}

/// A page answer: status, content type, the `X-Highlight-Boxes` and `Cache-Control`
/// headers, and the body.
struct Got {
    status: u16,
    content_type: String,
    boxes: Option<String>,
    cache: Option<String>,
    body: Vec<u8>,
}

fn fetch(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut r = agent().get(format!("{}{path}", s.base));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let mut r = r.call().expect("the server answers");
    let h = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (content_type, boxes, cache) = (
        h("content-type").unwrap_or_default(),
        h("x-highlight-boxes"),
        h("cache-control"),
    );
    Got {
        status: r.status().as_u16(),
        content_type,
        boxes,
        cache,
        body: r.body_mut().read_to_vec().unwrap(),
    }
}

fn json_of(g: &Got) -> (u16, Value) {
    let v = serde_json::from_slice(&g.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&g.body)));
    (g.status, v)
}

/// Width and height of a PNG, from its header.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert_eq!(&png[12..16], b"IHDR");
    let n = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (n(16), n(20))
}

/// The character range of `needle` in `text`.
fn chars_of(text: &str, needle: &str) -> (usize, usize) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {text}"));
    let start = text[..at].chars().count();
    (start, start + needle.chars().count())
}

#[test]
fn pages_of_a_pdf_on_disk_render_with_their_pieces_outlined() {
    pdfium_present();
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let file: PathBuf = docs.join("report.pdf");
    std::fs::write(&file, excerpt_testkit::fixtures::report_pdf()).unwrap();
    let engine = Arc::new(Engine::new(engine_options(&tmp.path().join("idx"))));
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
            token: Some(TOKEN.into()),
            ..ServerOptions::default()
        },
    );
    let auth = format!("Bearer {TOKEN}");
    let with = [("Authorization", auth.as_str())];

    // The document lists its pages.
    let doc = fetch(&s, "/v1/documents/report.pdf", &with);
    let (st, doc) = json_of(&doc);
    assert_eq!(st, 200, "{doc}");
    let pages = doc["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 3, "{doc}");
    let text = doc["text"].as_str().unwrap();
    let (a, b) = chars_of(
        text,
        "The compressor engine must be started twenty minutes before use.",
    );
    assert!(pages[1]["start"].as_u64().unwrap() as usize <= a);

    // Page 2, the sentence outlined; a range on page 1 gets no box there.
    let (c, d) = chars_of(text, "The lamp room is inspected");
    let t = std::time::Instant::now();
    let g = fetch(
        &s,
        &format!("/v1/pages/2/report.pdf?highlight={a}-{b},{c}-{d}"),
        &with,
    );
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(g.status, 200, "{}", String::from_utf8_lossy(&g.body));
    eprintln!("page 2 over HTTP in {ms:.0} ms, {} bytes", g.body.len());
    assert_eq!(g.content_type, "image/png");
    assert_eq!(g.cache.as_deref(), Some("no-store"));
    assert_eq!(g.boxes.as_deref(), Some("1,0"));
    assert_eq!(png_size(&g.body), (1000, 1294));
    // A width asked for; the id percent-encoded as the inspector sends it.
    let g = fetch(&s, "/v1/pages/1/report%2Epdf?width=400", &with);
    assert_eq!(g.status, 200);
    assert_eq!(png_size(&g.body).0, 400);
    assert_eq!(g.boxes.as_deref(), Some(""));

    // The guards: a read behind the token and the Origin check.
    assert_error(
        json_of(&fetch(&s, "/v1/pages/1/report.pdf", &[])),
        401,
        "token",
    );
    assert_error(
        json_of(&fetch(
            &s,
            "/v1/pages/1/report.pdf",
            &[("Authorization", &auth), ("Origin", "https://evil.example")],
        )),
        403,
        "",
    );

    // Bad requests.
    let err = |path: &str| json_of(&fetch(&s, path, &with));
    assert_error(err("/v1/pages/0/report.pdf"), 400, "from 1");
    assert_error(err("/v1/pages/two/report.pdf"), 400, "from 1");
    assert_error(
        err("/v1/pages/1/report.pdf?highlight=9-3"),
        400,
        "START-END",
    );
    assert_error(
        err("/v1/pages/1/report.pdf?highlight=a-b"),
        400,
        "START-END",
    );
    assert_error(err("/v1/pages/1/report.pdf?width=50"), 400, "width");
    assert_error(
        err("/v1/pages/1/report.pdf?zoom=2"),
        400,
        "highlight and width",
    );
    assert_error(err("/v1/pages/4/report.pdf"), 404, "3 pages");
    assert_error(err("/v1/pages/1/missing.pdf"), 404, "missing.pdf");

    // A text document has no pages; a PDF posted over HTTP has no file to read again.
    let pdf = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(excerpt_testkit::fixtures::report_pdf())
    };
    let posted = agent()
        .post(format!("{}/v1/ingest", s.base))
        .header("Authorization", &auth)
        .send_json(json!({"documents": [
            {"id": "notes.txt", "text": "Plain notes about the fog."},
            {"id": "posted.pdf", "text": pdf, "format": "pdf"},
        ]}));
    let (st, v) = answer(posted);
    assert_eq!(st, 200, "{v}");
    let (st, v) = err("/v1/pages/1/notes.txt");
    assert_error((st, v.clone()), 422, "not read from a PDF");
    assert_eq!(v["error"]["code"], "not_a_pdf");
    let (st, v) = err("/v1/pages/1/posted.pdf");
    assert_error((st, v.clone()), 409, "no source file");
    assert_eq!(v["error"]["code"], "no_source");

    // The file changed since it was indexed: refused, not drawn wrong.
    std::fs::write(
        &file,
        excerpt_testkit::fixtures::pdf(&[vec![excerpt_testkit::fixtures::PdfLine {
            bold: false,
            size: 11.0,
            text: "Another report altogether.",
        }]]),
    )
    .unwrap();
    let (st, v) = err("/v1/pages/1/report.pdf");
    assert_error((st, v.clone()), 409, "changed since it was indexed");
    assert_eq!(v["error"]["code"], "source_changed");
    // Gone.
    std::fs::remove_file(&file).unwrap();
    let (st, v) = err("/v1/pages/1/report.pdf");
    assert_error((st, v.clone()), 409, "cannot be read");
    assert_eq!(v["error"]["code"], "no_source");
}
