//! Every view of the inspector against a real index, the same checks on an index
//! directory and on PostgreSQL: the README's question as a link (a card per piece of the
//! API, the text the LLM receives), a piece in its document (highlights equal to the
//! API's text at its offsets), two strategies side by side, the documents (list, text,
//! statistics, upload, delete).

use std::sync::Arc;

use excerpt::{Engine, EngineOptions};
use excerpt_server::ServerOptions;
use serde_json::{json, Value};

use super::super::{post, start_engine, TestServer};
use super::{
    enc, get_doc, open_and_check, query, sample_documents, sample_server, tools, Browser, QUESTION,
    SAMPLE,
};

/// Runs every view against `s`, whose index holds the `docs` of [`SAMPLE`]; the
/// screenshots are named after `backend`.
fn every_view(b: &Browser, s: &TestServer, docs: &[&str], backend: &str) {
    let shot = |name: &str| b.shot(&format!("{name}-{backend}"));
    // The README's question, as a link.
    let ctx = query(s, &json!({"query": QUESTION, "budget": 800}));
    let rendered = query(
        s,
        &json!({"query": QUESTION, "budget": 800, "format": "text"}),
    );
    let n = ctx["pieces"].as_array().unwrap().len();
    assert!(n > 0, "{ctx}");
    b.goto(&format!("/?q={}&budget=800", enc(QUESTION)));
    b.wait("document.querySelector('.run.side-a')", "the context");
    assert_eq!(
        b.count(".run.side-a .piece"),
        n,
        "a card per piece of the API"
    );
    assert_eq!(
        b.text_of(".run.side-a .rendered-text"),
        rendered["context"].as_str().unwrap(),
        "the text the LLM receives"
    );
    for (i, p) in ctx["pieces"].as_array().unwrap().iter().enumerate() {
        let card = format!(".run.side-a .piece[data-index=\"{i}\"]");
        assert_eq!(
            b.text_of(&format!("{card} .piece-text")),
            p["text"].as_str().unwrap()
        );
        assert_eq!(
            b.text_of(&format!("{card} .doc-id")),
            p["doc_id"].as_str().unwrap()
        );
    }
    assert_eq!(
        b.js("return document.getElementById('q').value;"),
        json!(QUESTION)
    );
    shot("query");

    // A piece in its document.
    open_and_check(b, s, "a", &[("a", &ctx)], n / 2);
    shot("document");
    // The open document is part of the link: opened again, the same piece is shown.
    let link = b.js("return location.pathname + location.search;");
    let link = link.as_str().unwrap().to_string();
    assert!(link.contains(&format!("open=a{}", n / 2)), "{link}");
    b.goto(&link);
    b.wait(
        &format!(
            "document.querySelector('#doc-text mark.p-a-{}.current')",
            n / 2
        ),
        "the linked piece in its document",
    );

    // The page asked nothing of anyone but its own server.
    let foreign = b.js_with(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(arguments[0] + '/'));",
        vec![json!(s.base)],
    );
    assert_eq!(foreign, json!([]), "requests outside the server");

    // Two strategies side by side.
    let a = query(
        s,
        &json!({"query": QUESTION, "strategy": "topk", "budget": 600}),
    );
    let bb = query(
        s,
        &json!({"query": QUESTION, "strategy": "section", "budget": 600}),
    );
    b.goto(&format!(
        "/?q={}&strategy=topk&budget=600&b_strategy=section&b_budget=600",
        enc(QUESTION)
    ));
    b.wait(
        "document.querySelector('.run.side-a') && document.querySelector('.run.side-b')",
        "both contexts",
    );
    let overlaps = |p: &Value, others: &Value| {
        others.as_array().unwrap().iter().any(|q| {
            q["doc_id"] == p["doc_id"]
                && q["start"].as_u64() < p["end"].as_u64()
                && p["start"].as_u64() < q["end"].as_u64()
        })
    };
    for (side, mine, other) in [("a", &a, &bb), ("b", &bb, &a)] {
        let pieces = mine["pieces"].as_array().unwrap();
        assert_eq!(
            b.count(&format!(".run.side-{side} .piece")),
            pieces.len(),
            "{side}"
        );
        let alone = pieces
            .iter()
            .filter(|p| !overlaps(p, &other["pieces"]))
            .count();
        assert_eq!(
            b.count(&format!(".run.side-{side} .badge.only-{side}")),
            alone,
            "pieces only {side} returned"
        );
    }
    shot("compare");
    open_and_check(b, s, "b", &[("a", &a), ("b", &bb)], 0);
    shot("compare-document");

    // The documents: the list, and one document's text.
    b.goto("/?view=docs");
    b.wait("document.querySelector('table.docs')", "the list");
    assert_eq!(b.count("table.docs tbody tr"), docs.len());
    b.click("table.docs tbody tr:first-child button.link");
    b.wait(
        "!document.getElementById('doc-view').hidden && document.getElementById('doc-text').textContent.length > 0",
        "a document",
    );
    let mut ids = docs.to_vec();
    ids.sort();
    let first = get_doc(s, ids[0]);
    assert_eq!(b.text_of("#doc-text"), first["text"].as_str().unwrap());
    // The statistics are the API's.
    let (st, stats) = super::super::get(s, "/v1/stats");
    assert_eq!(st, 200, "{stats}");
    let shown = b.js(
        "return Object.fromEntries([...document.querySelectorAll('#stats dl > div')].map(d => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]));",
    );
    for key in ["documents", "chunks", "model"] {
        assert_eq!(
            shown[key].as_str().map(str::to_string),
            Some(match &stats[key] {
                Value::String(v) => v.clone(),
                v => v.to_string(),
            }),
            "{key}: {shown}"
        );
    }
    shot("documents");

    // A file uploaded, then deleted.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("uploaded.md");
    std::fs::write(&file, "# Uploaded\n\nA note the inspector sent.\n").unwrap();
    b.type_into("#upload-files", &file.display().to_string());
    b.click("#upload-form button[type=submit]");
    let more = docs.len() + 1;
    b.wait(
        &format!("document.querySelectorAll('table.docs tbody tr').length === {more}"),
        "the uploaded document listed",
    );
    assert_eq!(
        get_doc(s, "uploaded.md")["text"],
        json!("# Uploaded\n\nA note the inspector sent.\n")
    );
    b.js("window.confirm = () => true; return 0;");
    let row = b.js(
        "return [...document.querySelectorAll('table.docs tbody tr')].findIndex(r => r.textContent.startsWith('uploaded.md'));",
    );
    let row = row.as_u64().expect("the uploaded row") + 1;
    b.click(&format!(
        "table.docs tbody tr:nth-child({row}) button.danger"
    ));
    b.wait(
        &format!(
            "document.querySelectorAll('table.docs tbody tr').length === {}",
            docs.len()
        ),
        "the document removed",
    );
    let (st, _) = super::super::get(s, "/v1/documents/uploaded.md");
    assert_eq!(st, 404);
}

#[test]
fn every_view_works_on_an_index_directory() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let (st, r) = post(&s, "/v1/ingest", &sample_documents(SAMPLE));
    assert_eq!(st, 200, "{r}");
    let b = Browser::start(&tools, &s, false);
    every_view(&b, &s, SAMPLE, "directory");
}

/// The same views on a PostgreSQL index (a real PostgreSQL with pgvector, from
/// `scripts/postgres.sh`; skipped without one unless `EXCERPT_REQUIRE_POSTGRES=1`). The
/// document that answers the README's question alone, to keep the test short.
#[test]
fn every_view_works_on_postgres() {
    let Some(tools) = tools() else { return };
    let Some(url) = excerpt_testkit::postgres::database("inspector") else {
        return;
    };
    let docs = ["docs/ARCHITECTURE.md"];
    let engine = Arc::new(Engine::new(EngineOptions::new(url)));
    let s = start_engine(
        engine,
        ServerOptions {
            log_requests: false,
            ..ServerOptions::default()
        },
    );
    let (st, r) = post(&s, "/v1/ingest", &sample_documents(&docs));
    assert_eq!(st, 200, "{r}");
    let (st, stats) = super::super::get(&s, "/v1/stats");
    assert_eq!(st, 200, "{stats}");
    assert!(
        stats["index"]
            .as_str()
            .is_some_and(|i| i.starts_with("postgres")),
        "a PostgreSQL index: {stats}"
    );
    let b = Browser::start(&tools, &s, false);
    every_view(&b, &s, &docs, "postgres");
}
