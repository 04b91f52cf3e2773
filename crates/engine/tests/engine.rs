//! The engine as a library: real model, real index directory, and a real HTTP /rerank
//! server on 127.0.0.1 standing in for a remote reranker.

use std::path::Path;

use axum::routing::post;
use axum::{Json, Router};
use excerpt::{
    Engine, EngineOptions, IngestOptions, Mode, NoProgress, QueryRequest, RerankConfig,
    RerankerSpec,
};
use serde_json::{json, Value};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// Scores a passage 0.9 when it mentions "zebra", else 0.1 (Cohere response shape,
/// results sorted by score as real servers do).
async fn rerank(Json(body): Json<Value>) -> Json<Value> {
    let docs = body["documents"].as_array().cloned().unwrap_or_default();
    let mut results: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let s = if d.as_str().unwrap_or("").contains("zebra") {
                0.9
            } else {
                0.1
            };
            json!({"index": i, "relevance_score": s})
        })
        .collect();
    results.sort_by(|a, b| {
        b["relevance_score"]
            .as_f64()
            .partial_cmp(&a["relevance_score"].as_f64())
            .unwrap()
    });
    Json(json!({ "results": results }))
}

fn serve() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(l, Router::new().route("/rerank", post(rerank)))
                .await
                .unwrap();
        });
    });
    format!("http://{addr}")
}

#[test]
fn hybrid_query_then_rerank() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write(&docs, "animals.md", "# Animals\n\nThe lion hunts at night on the savanna.\n\n## Stripes\n\nA zebra has black and white stripes.\n");
    write(
        &docs,
        "cats.md",
        "# Cats\n\nHouse cats sleep most of the day and hunt mice at night.\n",
    );
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    let mut cfg = RerankConfig::new(serve(), "fake-reranker");
    cfg.api_key_env = None;
    opts.reranker = Some(RerankerSpec::Http(cfg));
    opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 24 });
    let engine = Engine::new(opts);
    let report = engine
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(report.added, 2);

    let mut req = QueryRequest::new("which animal hunts at night?");
    req.mode = Mode::Hybrid;
    let plain = engine.retrieve(&req).unwrap();
    assert!(plain.hits.len() >= 3);
    let first = plain.snapshot.doc(plain.hits[0].key.doc).unwrap();
    let first_text = first.chunk_text(plain.hits[0].key.ordinal as usize);
    assert!(
        !first_text.contains("zebra"),
        "without reranking a hunting chunk wins: {first_text:?}"
    );

    req.rerank_top = Some(10);
    let reranked = engine.retrieve(&req).unwrap();
    let top = &reranked.hits[0];
    let d = reranked.snapshot.doc(top.key.doc).unwrap();
    assert!(d.chunk_text(top.key.ordinal as usize).contains("zebra"));
    assert!((top.relevance - 0.9).abs() < 1e-6);
    assert!(reranked
        .hits
        .iter()
        .skip(1)
        .all(|h| (h.relevance - 0.1).abs() < 1e-6));

    // Without a configured reranker, asking for one is a clear error.
    let bare = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let err = bare.retrieve(&req).unwrap_err().to_string();
    assert!(err.contains("no reranker is configured"), "{err}");
}
