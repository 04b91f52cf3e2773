//! `excerpt eval --html`'s report in the browser: opened from its file, and served by
//! `excerpt serve --report` behind the inspector's link.

use excerpt::{Engine, EngineOptions};
use excerpt_server::ServerOptions;
use serde_json::{json, Value};

use super::{chars, sample_server, tools, Browser};

/// `excerpt eval --html`'s report, opened from its file: one section per question, the
/// gold evidence highlighted in a returned piece as the corpus has it, a hostile query
/// shown as text, and nothing run or fetched.
#[test]
fn an_evaluation_report_opens_with_its_evidence_highlighted() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let zoo = "The zebra herd crossed the river at dawn. Lions waited in the tall grass.\n";
    let garden = "Tomatoes need sun and water. Basil grows well beside them in summer.\n";
    let corpus = [
        json!({"id": "zoo.md", "text": zoo}),
        json!({"id": "garden.md", "text": garden}),
    ];
    let hostile = "<img src=x onerror=\"window.__pwned=1\"> what grows beside tomatoes?";
    let span = |text: &str, needle: &str| {
        let at = text.find(needle).unwrap();
        (
            text[..at].chars().count(),
            text[..at].chars().count() + needle.chars().count(),
        )
    };
    let (z0, z1) = span(zoo, "The zebra herd crossed the river at dawn.");
    let (g0, g1) = span(garden, "Basil grows well beside them in summer.");
    let queries = [
        json!({"id": "q-zebra", "query": "When did the zebra herd cross the river?",
               "evidence": [{"doc_id": "zoo.md", "start": z0, "end": z1}]}),
        json!({"id": "q-basil", "query": hostile,
               "evidence": [{"doc_id": "garden.md", "start": g0, "end": g1}]}),
    ];
    let lines = |v: &[Value]| v.iter().map(|x| format!("{x}\n")).collect::<String>();
    std::fs::write(data.join("corpus.jsonl"), lines(&corpus)).unwrap();
    std::fs::write(data.join("queries.jsonl"), lines(&queries)).unwrap();
    let engine = Engine::new(EngineOptions::new(data.join("index")));
    let mut opts = excerpt_eval::EvalOptions::new(
        data.join("corpus.jsonl"),
        data.join("queries.jsonl"),
        data.join("out"),
    );
    opts.quiet = true;
    opts.strategies = vec!["topk".into(), "rse".into()];
    opts.budgets = vec![100];
    let page = data.join("report.html");
    opts.html = Some(page.clone());
    excerpt_eval::run_eval(&engine, &opts, &excerpt::NoProgress).unwrap();

    // The server of `excerpt serve --report`: the inspector links to the same page.
    let report = excerpt_server::read_report(&page).expect("the report reads");
    let s = sample_server(
        &data.join("server"),
        ServerOptions {
            report: Some(report),
            ..ServerOptions::default()
        },
    );
    let b = Browser::start(&tools, &s, false);
    b.goto_url(&format!("file://{}", page.display()));
    check_report(&b, hostile, [(zoo, (z0, z1)), (garden, (g0, g1))]);
    b.shot("eval-report");

    b.goto("/");
    b.wait(
        "!document.getElementById('report-link').hidden",
        "the report's link",
    );
    b.click("#report-link");
    b.wait(
        "location.pathname === '/v1/report' && document.querySelector('section.q')",
        "the served report",
    );
    check_report(&b, hostile, [(zoo, (z0, z1)), (garden, (g0, g1))]);
    // Its own style sheet and embedded images load under its policy; it has no origin
    // of its own (the sandbox), so it could not read the API.
    assert_eq!(
        b.js("return [getComputedStyle(document.body).maxWidth !== 'none', [...document.images].every(i => i.complete && i.naturalWidth > 0), self.origin];"),
        json!([true, true, "null"]),
    );
    b.shot("eval-report-served");
}

/// The report's questions, the hostile query as text, nothing run, the evidence of each
/// question (`(text, (start, end))` in its document) highlighted inside a returned piece.
fn check_report(b: &Browser, hostile: &str, evidence: [(&str, (usize, usize)); 2]) {
    b.wait("document.querySelector('section.q')", "the questions");
    assert_eq!(b.count("section.q"), 2);
    let ids =
        b.js("return [...document.querySelectorAll('section.q h3')].map(h => h.textContent);");
    assert_eq!(ids, json!(["q-zebra", "q-basil"]));
    // The hostile query is its text, and nothing it holds ran.
    let shown = b.js("return document.querySelector('#q1 p.t').textContent;");
    assert_eq!(shown, json!(hostile));
    assert_eq!(b.js("return typeof window.__pwned;"), json!("undefined"));
    assert_eq!(b.count("script"), 0, "the report has no script");
    // Each question's evidence is highlighted inside a returned piece, as the corpus
    // has it.
    for (i, (text, (a, c))) in evidence.into_iter().enumerate() {
        let want = chars(text, a, c);
        let marks = b.js_with(
            "return [...document.querySelectorAll(`#q${arguments[0]} .piece mark`)].map(m => m.textContent);",
            vec![json!(i)],
        );
        let marks: Vec<String> = serde_json::from_value(marks).unwrap();
        assert!(
            marks
                .iter()
                .any(|m| want.contains(m.as_str()) && m.len() * 2 >= want.len()),
            "question {i}: {marks:?} against {want:?}"
        );
    }
    // Every image is the embedded chart; no address outside the page.
    let srcs = b.js("return [...document.querySelectorAll('[src]')].map(e => e.getAttribute('src').slice(0, 5));");
    for src in srcs.as_array().unwrap() {
        assert_eq!(src, &json!("data:"), "{srcs}");
    }
}
