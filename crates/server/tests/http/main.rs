//! The server end to end: a real server on 127.0.0.1, a real on-disk index, the real
//! local model, and ureq as the client.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use excerpt::{ChunkerConfig, Engine, EngineOptions, QuerySpec};
use excerpt_server::{Server, ServerOptions};
use serde_json::{json, Value};

mod ask;
mod browser;
mod capacity;
mod guards;
mod mcp;
mod openapi;
mod operations;
mod pages;
mod report;

/// A server running on its own thread and runtime; stopped (gracefully) on drop.
struct TestServer {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The engine, dropped after the server's thread has ended: a PostgreSQL index
    /// closes its blocking connections on drop, which must not happen on a runtime
    /// thread (as `excerpt_server::run_blocking` keeps it too).
    _engine: Arc<Engine>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn engine_options(index: &Path) -> EngineOptions {
    let mut o = EngineOptions::new(index);
    // Small chunks: several per document, so strategies have something to choose.
    o.chunker = Some(ChunkerConfig::Tokens { max_tokens: 48 });
    o
}

fn start_with(index: &Path, options: ServerOptions) -> TestServer {
    start_engine(Arc::new(Engine::new(engine_options(index))), options)
}

/// A server over `engine`, its model loaded first.
fn start_engine(engine: Arc<Engine>, options: ServerOptions) -> TestServer {
    excerpt_server::warm_up(&engine).expect("the model loads");
    let keep = Arc::clone(&engine);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("a runtime");
        rt.block_on(async move {
            let server = Server::bind("127.0.0.1:0", engine, options)
                .await
                .expect("binds");
            addr_tx.send(server.local_addr().unwrap()).unwrap();
            server
                .run_until(async {
                    let _ = stop_rx.await;
                })
                .await
                .expect("serves");
        });
    });
    let addr = addr_rx.recv().expect("the server reports its address");
    TestServer {
        base: format!("http://{addr}"),
        stop: Some(stop_tx),
        thread: Some(thread),
        _engine: keep,
    }
}

fn start(index: &Path) -> TestServer {
    start_with(
        index,
        ServerOptions {
            log_requests: false,
            ..ServerOptions::default()
        },
    )
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// Status and JSON body of a response.
fn answer(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    let mut r = r.expect("the server answers");
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().expect("a body");
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

fn get(s: &TestServer, path: &str) -> (u16, Value) {
    answer(agent().get(format!("{}{path}", s.base)).call())
}

fn post(s: &TestServer, path: &str, body: &Value) -> (u16, Value) {
    answer(agent().post(format!("{}{path}", s.base)).send_json(body))
}

fn post_raw(s: &TestServer, path: &str, body: &str) -> (u16, Value) {
    answer(
        agent()
            .post(format!("{}{path}", s.base))
            .header("Content-Type", "application/json")
            .send(body),
    )
}

fn delete(s: &TestServer, path: &str) -> (u16, Value) {
    answer(agent().delete(format!("{}{path}", s.base)).call())
}

/// Asserts an error answer: the status, a code, a non-empty message containing `needle`.
fn assert_error(got: (u16, Value), status: u16, needle: &str) {
    let (st, v) = got;
    assert_eq!(st, status, "{v}");
    let code = v["error"]["code"].as_str().unwrap_or("");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(!code.is_empty(), "no error code: {v}");
    assert!(
        msg.contains(needle),
        "message {msg:?} does not mention {needle:?}"
    );
}

/// The small corpus most tests ingest: id → (text, metadata).
fn corpus() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "infra/runbook",
            "Restarting the database cluster.\n\nTo restart the database cluster, drain the \
             primary first, then restart each replica in turn. Check replication lag before \
             promoting a replica.\n\nBackups run nightly at two o'clock and are kept for \
             thirty days.\n",
            json!({"team": "infra", "year": 2023}),
        ),
        (
            "infra/oncall",
            "On-call rotation.\n\nThe on-call engineer is paged when error rates exceed the \
             alert threshold. Escalate to the secondary after fifteen minutes without an \
             acknowledgement.\n",
            json!({"team": "infra", "year": 2021}),
        ),
        (
            "product/roadmap",
            "Roadmap for the next quarter.\n\nWe will launch the mobile app, redesign the \
             onboarding flow and add dark mode. Pricing changes are planned for the autumn.\n",
            json!({"team": "product", "year": 2024}),
        ),
    ]
}

fn ingest_body() -> Value {
    let mut docs: Vec<Value> = corpus()
        .into_iter()
        .map(|(id, text, meta)| json!({"id": id, "text": text, "metadata": meta}))
        .collect();
    docs.push(json!({
        "id": "notes/zebra.md",
        "format": "markdown",
        "text": "---\nteam: biology\n---\n# Zebras\n\nA zebra has black and white stripes.\n\n## Diet\n\nZebras graze on grasses for most of the day.\n",
    }));
    json!({ "documents": docs })
}

fn chars(text: &str, start: usize, end: usize) -> String {
    text.chars().skip(start).take(end - start).collect()
}

/// Every piece is an exact slice of its document (as served by GET /v1/documents/{id}).
fn check_pieces(s: &TestServer, ctx: &Value) -> Vec<String> {
    let mut texts: HashMap<String, String> = HashMap::new();
    let mut ids = Vec::new();
    for p in ctx["pieces"].as_array().expect("pieces") {
        let id = p["doc_id"].as_str().unwrap().to_string();
        let text = texts.entry(id.clone()).or_insert_with(|| {
            let (st, d) = get(s, &format!("/v1/documents/{id}"));
            assert_eq!(st, 200, "{d}");
            d["text"].as_str().unwrap().to_string()
        });
        let (start, end) = (
            p["start"].as_u64().unwrap() as usize,
            p["end"].as_u64().unwrap() as usize,
        );
        assert!(start < end && end <= text.chars().count(), "{p}");
        assert_eq!(p["text"].as_str().unwrap(), chars(text, start, end));
        ids.push(id);
    }
    ids
}

#[test]
fn ingest_query_filter_and_delete_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let s = start(&index);

    assert_eq!(get(&s, "/healthz"), (200, json!({"status": "ok"})));
    assert_eq!(get(&s, "/v1/documents"), (200, json!([])));
    assert_error(get(&s, "/v1/stats"), 404, "no index");
    assert_error(
        post(&s, "/v1/query", &json!({"query": "database"})),
        404,
        "no index",
    );

    let (st, report) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{report}");
    assert_eq!(report["added"], 4, "{report}");
    assert_eq!(report["documents"], 4);
    assert!(report["failed"].as_array().unwrap().is_empty(), "{report}");

    // Listing: id, title, chunks, bytes.
    let (st, list) = get(&s, "/v1/documents");
    assert_eq!(st, 200);
    let list = list.as_array().unwrap().clone();
    let ids: Vec<&str> = list.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "infra/oncall",
            "infra/runbook",
            "notes/zebra.md",
            "product/roadmap"
        ]
    );
    for (id, text, _) in corpus() {
        let d = list.iter().find(|d| d["id"] == id).unwrap();
        assert_eq!(d["bytes"], text.len(), "{d}");
        assert!(d["chunks"].as_u64().unwrap() >= 1);
    }

    // One document: metadata, sections, text; the id's slash raw or percent-encoded.
    let (st, zebra) = get(&s, "/v1/documents/notes/zebra.md");
    assert_eq!(st, 200, "{zebra}");
    assert_eq!(get(&s, "/v1/documents/notes%2Fzebra.md").1, zebra);
    assert_eq!(zebra["title"], "Zebras");
    assert_eq!(zebra["metadata"]["team"], "biology");
    let sections: Vec<&str> = zebra["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(sections, ["Zebras", "Zebras > Diet"]);
    let ztext = zebra["text"].as_str().unwrap();
    assert!(ztext.starts_with("# Zebras"), "front matter is not text");
    for sec in zebra["sections"].as_array().unwrap() {
        let start = sec["start"].as_u64().unwrap() as usize;
        let end = sec["end"].as_u64().unwrap() as usize;
        assert!(chars(ztext, start, end).contains(sec["heading"].as_str().unwrap()));
    }
    let (_, no_text) = get(&s, "/v1/documents/notes/zebra.md?text=false");
    assert!(no_text.get("text").is_none() && no_text["sections"] == zebra["sections"]);

    // A query: the same JSON as the engine (and so `excerpt query --format json`) gives,
    // pieces exact slices of the documents.
    let q = json!({"query": "how do I restart the database cluster?", "budget": 300});
    let (st, ctx) = post(&s, "/v1/query", &q);
    assert_eq!(st, 200, "{ctx}");
    let direct = {
        let e = Engine::new(EngineOptions::new(&index));
        let spec: QuerySpec = serde_json::from_value(q.clone()).unwrap();
        let req = spec.to_request().unwrap();
        excerpt::context_value(&req.text, &e.query(&req).unwrap())
    };
    assert_eq!(ctx, direct);
    assert_eq!(ctx["query"], q["query"]);
    let ids = check_pieces(&s, &ctx);
    assert_eq!(ids.first().map(String::as_str), Some("infra/runbook"));
    for (id, text, _) in corpus() {
        for p in ctx["pieces"].as_array().unwrap() {
            if p["doc_id"] == id {
                let (a, b) = (p["start"].as_u64().unwrap(), p["end"].as_u64().unwrap());
                assert_eq!(
                    p["text"].as_str().unwrap(),
                    chars(text, a as usize, b as usize),
                    "plain text is stored as sent"
                );
            }
        }
    }

    // Filters: metadata, prefixes, document ids; every strategy and mode spelled as in
    // the CLI.
    let only = |filter: Value, extra: Value| -> Vec<String> {
        let mut body = json!({"query": "database replicas, pages and stripes", "filter": filter});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (st, ctx) = post(&s, "/v1/query", &body);
        assert_eq!(st, 200, "{ctx}");
        let ids = check_pieces(&s, &ctx);
        assert!(!ids.is_empty(), "{ctx}");
        ids
    };
    assert!(only(json!({"where": ["team=infra"]}), json!({}))
        .iter()
        .all(|id| id.starts_with("infra/")));
    assert!(only(json!({"where": ["year>=2022"]}), json!({}))
        .iter()
        .all(|id| id == "infra/runbook" || id == "product/roadmap"));
    assert!(only(
        json!({"prefixes": ["notes/"]}),
        json!({"mode": "bm25", "strategy": "topk"})
    )
    .iter()
    .all(|id| id == "notes/zebra.md"));
    assert!(only(
        json!({"doc_ids": ["infra/oncall"]}),
        json!({"mode": "dense", "strategy": "adjacent", "fusion": "minmax:0.3"})
    )
    .iter()
    .all(|id| id == "infra/oncall"));
    assert!(only(
        json!({"where": ["team=infra|product"]}),
        json!({"strategy": "rse:precision", "top_k": 5, "candidates": 20, "fusion": "dbsf"})
    )
    .iter()
    .all(|id| id != "notes/zebra.md"));

    // Text and Markdown renderings.
    let (st, t) = post(
        &s,
        "/v1/query",
        &json!({"query": "zebra stripes", "format": "text", "instruction": "Answer briefly."}),
    );
    assert_eq!(st, 200, "{t}");
    let text = t["context"].as_str().unwrap();
    assert!(text.starts_with("=== RELEVANT INFORMATION FROM DOCUMENTS ==="));
    assert!(text.contains("black and white stripes") && text.ends_with("Answer briefly.\n"));
    assert_eq!(t["format"], "text");
    let (st, m) = post(
        &s,
        "/v1/query",
        &json!({"query": "zebra stripes", "format": "markdown"}),
    );
    assert_eq!(st, 200, "{m}");
    assert!(m["context"].as_str().unwrap().starts_with("# Context"));

    // Re-sending the same documents changes nothing; a changed one is updated.
    let (st, again) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!((st, &again["unchanged"]), (200, &json!(4)), "{again}");
    let (st, upd) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": "infra/oncall", "title": "On call", "text": "Pager duty rotates weekly.\n"}]}),
    );
    assert_eq!((st, &upd["updated"]), (200, &json!(1)), "{upd}");
    assert_eq!(get(&s, "/v1/documents/infra/oncall").1["title"], "On call");

    // Delete: gone from listings and queries; a second delete is 404.
    let (st, del) = delete(&s, "/v1/documents/infra/runbook");
    assert_eq!(st, 200, "{del}");
    assert_eq!(del["removed"], json!(["infra/runbook"]));
    assert_eq!(del["documents"], 3);
    assert_error(get(&s, "/v1/documents/infra/runbook"), 404, "infra/runbook");
    assert_error(
        delete(&s, "/v1/documents/infra/runbook"),
        404,
        "infra/runbook",
    );
    let (st, ctx) = post(&s, "/v1/query", &q);
    assert_eq!(st, 200, "{ctx}");
    let ids = check_pieces(&s, &ctx);
    assert!(!ids.contains(&"infra/runbook".to_string()), "{ids:?}");
    let (st, stats) = get(&s, "/v1/stats");
    assert_eq!(st, 200);
    assert_eq!(stats["documents"], 3);
    assert_eq!(stats["chunker"], "tokens:48");
}

/// `explain` in a query's body: the answer's `explain` lists the best hits with each
/// list's rank, as `excerpt query --explain`; the pieces do not change; a value that is
/// not a count is a 400.
#[test]
fn query_explain_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("idx"));
    let (st, r) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{r}");
    let (st, plain) = post(&s, "/v1/query", &json!({"query": "database"}));
    assert_eq!(st, 200, "{plain}");
    assert!(plain.get("explain").is_none());
    let (st, ctx) = post(&s, "/v1/query", &json!({"query": "database", "explain": 2}));
    assert_eq!(st, 200, "{ctx}");
    assert_eq!(ctx["pieces"], plain["pieces"]);
    let hits = ctx["explain"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 2, "{ctx}");
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(h["rank"], i + 1);
        assert!(h["bm25_rank"].is_u64() || h["dense_rank"].is_u64(), "{h}");
        let (st, d) = get(
            &s,
            &format!("/v1/documents/{}", h["doc_id"].as_str().unwrap()),
        );
        assert_eq!(st, 200, "{d}");
        let text = chars(
            d["text"].as_str().unwrap(),
            h["start"].as_u64().unwrap() as usize,
            h["end"].as_u64().unwrap() as usize,
        );
        assert!(text.starts_with(h["preview"].as_str().unwrap()), "{h}");
    }
    assert_error(
        post(
            &s,
            "/v1/query",
            &json!({"query": "database", "explain": "all"}),
        ),
        400,
        "explain",
    );
}

#[test]
fn bad_requests_get_json_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(
        &tmp.path().join("idx"),
        ServerOptions {
            body_limit: 4096,
            log_requests: false,
            ..ServerOptions::default()
        },
    );
    let (st, r) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{r}");

    let q = |body: Value| post(&s, "/v1/query", &body);
    assert_error(q(json!({"query": "  "})), 400, "empty");
    assert_error(q(json!({"query": "x", "strategy": "nope"})), 400, "nope");
    assert_error(
        q(json!({"query": "x", "strategy": "rse:bogus=1"})),
        400,
        "bogus",
    );
    assert_error(q(json!({"query": "x", "fusion": "sum"})), 400, "sum");
    assert_error(q(json!({"query": "x", "fusion": "minmax:7"})), 400, "alpha");
    assert_error(q(json!({"query": "x", "mode": "sparse"})), 400, "sparse");
    assert_error(
        q(json!({"query": "x", "filter": {"team": "infra"}})),
        400,
        "team",
    );
    assert_error(
        q(json!({"query": "x", "filter": {"where": ["no operator"]}})),
        400,
        "no operator",
    );
    assert_error(
        q(json!({"query": "x", "filter": {"doc_ids": ["missing"]}})),
        400,
        "missing",
    );
    assert_error(q(json!({"query": "x", "topk": 3})), 400, "topk");
    assert_error(q(json!({"query": "x", "budget": -1})), 400, "-1");
    assert_error(q(json!({"query": "x", "format": "yaml"})), 400, "yaml");
    assert_error(q(json!({"query": "x", "candidates": 0})), 400, "candidates");
    assert_error(q(json!({"text": "x"})), 400, "query");
    assert_error(q(json!(["x"])), 400, "invalid");
    assert_error(post_raw(&s, "/v1/query", "{\"query\": "), 400, "JSON");
    assert_error(
        q(json!({"query": "x", "rerank": 5})),
        400,
        "no reranker is configured",
    );

    let ingest = |docs: Value| post(&s, "/v1/ingest", &json!({ "documents": docs }));
    assert_error(ingest(json!([])), 400, "empty");
    assert_error(ingest(json!([{"id": " ", "text": "t"}])), 400, "empty id");
    assert_error(
        ingest(json!([{"id": "a", "text": "   \n"}])),
        400,
        "no text",
    );
    assert_error(
        ingest(json!([{"id": "a", "text": "t", "format": "pdf"}])),
        400,
        "base64",
    );
    assert_error(
        ingest(json!([{"id": "a", "text": "JVBERi0xLjQK", "format": "pdf"}])),
        400,
        "corrupt",
    );
    assert_error(
        ingest(json!([{"id": "a", "text": "t"}, {"id": "a", "text": "u"}])),
        400,
        "twice",
    );
    assert_error(ingest(json!([{"id": "a", "body": "t"}])), 400, "`body`");
    // Nothing of a refused request was ingested.
    assert_error(get(&s, "/v1/documents/a"), 404, "\"a\"");

    // Over the body limit.
    let big = json!({"documents": [{"id": "big", "text": "word ".repeat(2000)}]});
    assert_error(post(&s, "/v1/ingest", &big), 413, "4096");

    // Unknown routes and methods.
    assert_error(get(&s, "/v2/query"), 404, "/v2/query");
    assert_error(get(&s, "/v1/query"), 405, "GET");
    assert_error(get(&s, "/v1/documents/no/such/doc"), 404, "no/such/doc");

    // The server is still fine.
    assert_eq!(get(&s, "/healthz").0, 200);
}

#[test]
fn a_writer_in_another_process_gives_409_and_queries_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let s = start(&index);
    assert_eq!(post(&s, "/v1/ingest", &ingest_body()).0, 200);

    // Hold the index's writer lock as `excerpt ingest` in another process would.
    let config = excerpt::Snapshot::open(&index).unwrap().config().clone();
    let writer = excerpt_index::IndexWriter::open(&index, config).unwrap();
    let doc = json!({"documents": [{"id": "late", "text": "A late document about kites.\n"}]});
    assert_error(post(&s, "/v1/ingest", &doc), 409, "LOCK");
    assert_error(delete(&s, "/v1/documents/infra/oncall"), 409, "LOCK");
    let (st, ctx) = post(&s, "/v1/query", &json!({"query": "on-call escalation"}));
    assert_eq!(st, 200, "{ctx}");
    check_pieces(&s, &ctx);

    drop(writer);
    let (st, r) = post(&s, "/v1/ingest", &doc);
    assert_eq!((st, &r["added"]), (200, &json!(1)), "{r}");
}

/// A deterministic text of `words` words about `topic`.
fn filler(topic: &str, seed: u64, words: usize) -> String {
    const VOCAB: [&str; 24] = [
        "system", "latency", "queue", "worker", "schedule", "budget", "replica", "cache", "shard",
        "ticket", "release", "metric", "window", "policy", "vendor", "invoice", "sensor", "harbor",
        "garden", "violin", "recipe", "planet", "glacier", "canyon",
    ];
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = format!("{topic}.\n\n");
    for i in 0..words {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(VOCAB[(x >> 33) as usize % VOCAB.len()]);
        out.push_str(if i % 12 == 11 { ".\n" } else { " " });
    }
    out.push('\n');
    out
}

#[test]
fn queries_succeed_while_ingesting() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let s = Arc::new(start(&index));
    assert_eq!(post(&s, "/v1/ingest", &ingest_body()).0, 200);

    // Two large ingests at once: serialized by the server, both succeed (no 409).
    let batch = |name: &'static str| -> Value {
        let docs: Vec<Value> = (0..20)
            .map(|i| {
                json!({"id": format!("{name}/{i:02}"),
                       "text": filler(&format!("{name} report {i}"), i as u64 + name.len() as u64, 400)})
            })
            .collect();
        json!({ "documents": docs })
    };
    let done = Arc::new(AtomicUsize::new(0));
    let ingests: Vec<JoinHandle<(u16, Value)>> = ["alpha", "beta"]
        .into_iter()
        .map(|name| {
            let s = s.clone();
            let done = done.clone();
            let body = batch(name);
            std::thread::spawn(move || {
                let r = post(&s, "/v1/ingest", &body);
                done.fetch_add(1, Ordering::SeqCst);
                r
            })
        })
        .collect();

    // Meanwhile: queries keep being answered from the last committed snapshot.
    let mut answered_during = 0;
    let mut total = 0;
    while done.load(Ordering::SeqCst) < 2 {
        let (st, ctx) = post(
            &s,
            "/v1/query",
            &json!({"query": "restart the database replicas", "budget": 200}),
        );
        assert_eq!(st, 200, "{ctx}");
        check_pieces(&s, &ctx);
        total += 1;
        if done.load(Ordering::SeqCst) == 0 {
            answered_during += 1;
        }
        assert!(total < 10_000, "bounded loop");
    }
    for h in ingests {
        let (st, r) = h.join().unwrap();
        assert_eq!(st, 200, "{r}");
        assert_eq!(r["added"], 20, "{r}");
    }
    assert!(
        answered_during > 0,
        "no query was answered before the first ingest finished"
    );
    eprintln!("{answered_during} of {total} queries answered before the first ingest finished");

    let (_, list) = get(&s, "/v1/documents");
    assert_eq!(list.as_array().unwrap().len(), 44);
    let (st, ctx) = post(
        &s,
        "/v1/query",
        &json!({"query": "beta report 7", "filter": {"prefixes": ["beta/"]}, "mode": "bm25"}),
    );
    assert_eq!(st, 200, "{ctx}");
    assert!(check_pieces(&s, &ctx)
        .iter()
        .all(|id| id.starts_with("beta/")));
}

/// A Word file posted base64-encoded with `format: "docx"` is loaded like a file: its
/// headings become the pieces' sections; undecodable base64 is a 400 naming the format.
#[test]
fn docx_over_http_has_sections() {
    use base64::Engine as _;
    use docx_rs::{Docx, Paragraph, Run, Style, StyleType};
    let para = |t: &str| Paragraph::new().add_run(Run::new().add_text(t));
    let docx = Docx::new()
        .add_style(Style::new("Heading1", StyleType::Paragraph).name("heading 1"))
        .add_paragraph(para("Fog signals").style("Heading1"))
        .add_paragraph(para(
            "The compressor must be started ten minutes before use.",
        ))
        .add_paragraph(para("Lamps").style("Heading1"))
        .add_paragraph(para("Lamp wicks are trimmed every morning."));
    let mut bytes = std::io::Cursor::new(Vec::new());
    docx.build().pack(&mut bytes).unwrap();
    let text = base64::engine::general_purpose::STANDARD.encode(bytes.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("idx"));
    let (st, body) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": "manual.docx", "text": "not base64!", "format": "docx"}]}),
    );
    assert_eq!(st, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"format "docx" takes the Word file"#),
        "{body}"
    );
    let (st, report) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": "manual.docx", "text": text, "format": "docx"}]}),
    );
    assert_eq!(st, 200, "{report}");
    assert_eq!(report["added"], 1, "{report}");
    let (st, q) = post(
        &s,
        "/v1/query",
        &json!({"query": "when is the compressor started?", "strategy": "topk", "budget": 60}),
    );
    assert_eq!(st, 200, "{q}");
    let top = &q["pieces"][0];
    assert!(top["text"].as_str().unwrap().contains("ten minutes"), "{q}");
    assert_eq!(top["section"], "Fog signals", "{q}");
}

/// A PDF posted base64-encoded in `text` with `format: "pdf"` is loaded like a file:
/// pages and sections, and pieces report their pages.
#[test]
fn pdf_over_http_has_pages() {
    use base64::Engine as _;
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("idx"));
    let pdf =
        base64::engine::general_purpose::STANDARD.encode(excerpt_testkit::fixtures::report_pdf());
    let (st, report) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": "report.pdf", "text": pdf, "format": "pdf"}]}),
    );
    assert_eq!(st, 200, "{report}");
    assert_eq!(report["added"], 1, "{report}");
    let (st, q) = post(
        &s,
        "/v1/query",
        &json!({"query": "compressor engine started before use", "strategy": "topk", "budget": 60}),
    );
    assert_eq!(st, 200, "{q}");
    let pieces = q["pieces"].as_array().unwrap();
    let top = pieces
        .iter()
        .find(|p| p["text"].as_str().unwrap().contains("compressor"))
        .expect("the compressor piece");
    assert_eq!(top["page_start"], 2, "{q}");
    assert_eq!(top["page_end"], 2, "{q}");
    assert_eq!(top["section"], "2 Fog signals > 2.1 Compressed air", "{q}");
}
