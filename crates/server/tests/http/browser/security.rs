//! What the inspector must never do: run or format a hostile title as markup, or show
//! data before the token is given; and what the read token may not do (delete).

use excerpt_server::ServerOptions;
use serde_json::{json, Value};

use super::super::{agent, answer, post};
use super::{enc, query, sample_server, tools, Browser};

#[test]
fn the_inspector_shows_hostile_titles_as_text() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let id = "evil/<script>window.__pwned=3</script>\u{202e}gnp.exe";
    let title = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>\u{202e}txt.exe\u{2066}";
    let text = "Zebra crossing notes.\n\nThe zebra herd crossed the river at dawn, <b>bold</b> & \u{202e}reversed.\n";
    let (st, r) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": id, "title": title, "text": text}]}),
    );
    assert_eq!(st, 200, "{r}");
    let b = Browser::start(&tools, &s, false);
    let ctx = query(
        &s,
        &json!({"query": "zebra herd river", "filter": {"doc_ids": [id]}}),
    );
    assert!(!ctx["pieces"].as_array().unwrap().is_empty(), "{ctx}");
    b.goto(&format!("/?q=zebra+herd+river&doc_id={}", enc(id)));
    b.wait(
        "document.querySelector('.run.side-a .piece')",
        "the hostile piece",
    );
    let shown = b.text_of(".run.side-a .piece[data-index=\"0\"] button.open");
    let expected = title
        .replace('\u{202e}', "⟨U+202E⟩")
        .replace('\u{2066}', "⟨U+2066⟩");
    assert_eq!(shown, expected, "the title as text, its controls visible");
    assert_eq!(
        b.text_of(".run.side-a .piece[data-index=\"0\"] .doc-id"),
        id.replace('\u{202e}', "⟨U+202E⟩")
    );
    b.click(".run.side-a .piece[data-index=\"0\"] button.open");
    b.wait(
        "document.querySelector('#doc-text mark.current')",
        "the document",
    );
    assert_eq!(b.text_of("#doc-head h2"), expected);
    assert_eq!(
        b.text_of("#doc-text"),
        text,
        "the text exactly, markup as text"
    );
    assert_eq!(
        b.js("return typeof window.__pwned;"),
        json!("undefined"),
        "nothing ran"
    );
    assert_eq!(b.count("img"), 0, "no element made from the data");
    assert_eq!(b.count("b"), 0);
    assert_eq!(b.count("script"), 1, "only the page's own module");
    b.shot("hostile");
}

#[test]
fn the_inspector_shows_no_data_until_a_token_is_given() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(
        dir.path(),
        ServerOptions {
            token: Some("write-s3cret".into()),
            read_token: Some("read-s3cret".into()),
            ..ServerOptions::default()
        },
    );
    let send = |path: &str, token: &str, body: &Value| {
        answer(
            agent()
                .post(format!("{}{path}", s.base))
                .header("Authorization", &format!("Bearer {token}"))
                .send_json(body),
        )
    };
    let (st, r) = send("/v1/ingest", "write-s3cret", &super::super::ingest_body());
    assert_eq!(st, 200, "{r}");
    let (st, ctx) = send(
        "/v1/query",
        "read-s3cret",
        &json!({"query": "restart the database cluster"}),
    );
    assert_eq!(st, 200, "{ctx}");
    // On a phone's screen, which the page must fit too.
    let b = Browser::start(&tools, &s, true);

    b.goto("/?q=restart+the+database+cluster");
    b.wait("!document.getElementById('auth').hidden", "the token form");
    assert_eq!(b.count(".piece"), 0, "no pieces without a token");
    let body = b.text_of("body");
    assert!(
        !body.contains("replica"),
        "document text shown without a token"
    );
    b.shot("token-asked");

    b.type_into("#token", "read-s3cret");
    b.click("#token-use");
    b.wait(
        "document.querySelector('.run.side-a')",
        "the context with the token",
    );
    assert_eq!(
        b.count(".run.side-a .piece"),
        ctx["pieces"].as_array().unwrap().len()
    );
    assert_eq!(
        b.js("return [sessionStorage.getItem('excerpt.token'), localStorage.length, document.cookie];"),
        json!(["read-s3cret", 0, ""]),
        "the token is kept for this tab only"
    );
    assert!(
        !b.js("return location.href;")
            .as_str()
            .unwrap()
            .contains("s3cret"),
        "the token never goes into the URL"
    );
    assert_eq!(
        b.js("return [window.innerWidth, document.documentElement.scrollWidth <= window.innerWidth];"),
        json!([390, true]),
        "a phone's width, and nothing wider than it"
    );
    b.shot("token-given-phone");

    // The read token may look, not change: a delete is refused and says why.
    let count = |b: &Browser| b.count("table.docs tbody tr");
    b.click("#tab-docs");
    b.wait("document.querySelector('table.docs')", "the list");
    let before = count(&b);
    b.click("table.docs tbody tr:first-child button.danger");
    b.accept_dialog();
    b.wait(
        "document.getElementById('status').textContent.includes('write token')",
        "the read-only refusal",
    );
    assert_eq!(
        super::super::ingest_body()["documents"]
            .as_array()
            .unwrap()
            .len(),
        before
    );

    // With the write token: upload a file, delete a document.
    b.click("#token-button");
    b.type_into("#token", "write-s3cret");
    b.click("#token-use");
    b.wait("document.querySelector('table.docs')", "the list again");
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "# Notes\n\nUploaded from the inspector.\n").unwrap();
    b.type_into("#upload-files", &file.display().to_string());
    b.click("#upload-form button[type=submit]");
    b.wait(
        &format!(
            "document.querySelectorAll('table.docs tbody tr').length === {}",
            before + 1
        ),
        "the uploaded document listed",
    );
    let (st, d) = answer(
        agent()
            .get(format!("{}/v1/documents/notes.md", s.base))
            .header("Authorization", "Bearer read-s3cret")
            .call(),
    );
    assert_eq!(st, 200, "{d}");
    assert_eq!(
        d["text"],
        json!("# Notes\n\nUploaded from the inspector.\n")
    );
    b.click("table.docs tbody tr:first-child button.danger");
    b.accept_dialog();
    b.wait(
        &format!("document.querySelectorAll('table.docs tbody tr').length === {before}"),
        "the document removed",
    );
    b.shot("documents-written-phone");
}
