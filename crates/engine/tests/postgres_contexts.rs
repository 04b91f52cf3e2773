//! `ingest --contextualize` on a PostgreSQL index (a real PostgreSQL 18 + pgvector from
//! `scripts/postgres.sh`, a database of its own) with the real local model and a fake
//! OpenAI-compatible chat server on 127.0.0.1: contexts are stored with the chunks,
//! searched, cached on this machine, and the contextualizer is checked like the
//! directory index checks it. Skipped with a message when PostgreSQL cannot start,
//! unless `EXCERPT_REQUIRE_POSTGRES=1`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use excerpt::{
    ChatConfig, ContextualizeOptions, Engine, EngineError, EngineOptions, IngestOptions, Mode,
    NoProgress, QueryRequest,
};
use excerpt_testkit::axum::extract::State;
use excerpt_testkit::axum::routing::post;
use excerpt_testkit::axum::{Json, Router};
use excerpt_testkit::fixtures::write_file;
use excerpt_testkit::{openai, FakeServer};
use serde_json::Value;

/// The first word of a passage, as a marker no source text contains.
fn marker(text: &str) -> String {
    let w = text
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_lowercase();
    format!("zz{w}zz")
}

async fn chat(State(asked): State<Arc<AtomicUsize>>, Json(body): Json<Value>) -> Json<Value> {
    asked.fetch_add(1, SeqCst);
    let passage = openai::last_passage(&body);
    let reply = format!("This passage is about {}.", marker(&passage));
    Json(openai::chat_completion(&body["model"], &reply, None))
}

#[test]
fn contextualized_ingest_on_postgres() {
    let Some(url) = excerpt_testkit::postgres::database("contexts") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let animals = ["Penguins", "Giraffes", "Otters"];
    let mut text = String::from("# Zoo\n\n");
    for a in animals {
        text.push_str(&format!(
            "{a} live here and the keepers look after them every day of the year.\n\n"
        ));
    }
    write_file(&docs, "zoo.md", text);

    let asked = Arc::new(AtomicUsize::new(0));
    let server = FakeServer::start(
        Router::new()
            .route(openai::CHAT_PATH, post(chat))
            .with_state(asked.clone()),
    );
    let mut chat = ChatConfig::new(server.url(), "fake-llm");
    chat.endpoint.api_key_env = None;
    let mut cx = ContextualizeOptions::new(chat);
    cx.max_tokens = 16;
    let with_contexts = IngestOptions {
        contextualize: Some(cx),
        ..IngestOptions::default()
    };
    let mut eo = EngineOptions::new(&url);
    eo.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 40 });
    let engine = Engine::new(eo);
    let cache = engine.context_cache_home();
    assert!(!cache.to_string_lossy().contains("excerpt@"), "{cache:?}");
    let _ = std::fs::remove_dir_all(&cache);

    let first = engine
        .ingest(std::slice::from_ref(&docs), &with_contexts, &NoProgress)
        .unwrap();
    assert_eq!(first.added, 1);
    let doc = engine.document("zoo.md").unwrap().expect("stored");
    let chunks = doc.chunks.len();
    assert!(chunks >= 2, "{chunks} chunks");
    let mut markers = std::collections::BTreeSet::new();
    assert_eq!(first.chunks_contextualized, chunks);
    assert_eq!(asked.load(SeqCst), chunks);
    for c in &doc.chunks {
        let m = marker(doc.chunk_text(c.ordinal as usize));
        assert!(markers.insert(m.clone()), "first words must differ: {m}");
        assert_eq!(
            c.context.as_deref(),
            Some(format!("This passage is about {m}.").as_str())
        );
        assert!(!doc.text.contains(&m));
        // Only the context holds the marker: lexical search finds the chunk by it.
        let mut req = QueryRequest::new(&m);
        req.mode = Mode::Bm25;
        let hits = engine.retrieve(&req).unwrap().hits;
        assert_eq!(hits.len(), 1, "{m}");
        assert_eq!(hits[0].key.ordinal, c.ordinal, "{m}");
    }
    assert!(cache.join("contextualize/cache.jsonl").is_file());

    // Removed and ingested again: every context comes from the cache.
    engine.remove(&["zoo.md".to_string()]).unwrap();
    let again = engine
        .ingest(std::slice::from_ref(&docs), &with_contexts, &NoProgress)
        .unwrap();
    assert_eq!(again.added, 1);
    assert_eq!(again.context_cache_hits, chunks);
    assert_eq!(asked.load(SeqCst), chunks);
    assert_eq!(engine.document("zoo.md").unwrap().as_deref(), Some(&*doc));

    // The index has contexts: an ingest without the contextualizer is refused, in one
    // line naming the database without its password.
    write_file(&docs, "more.md", "# More\n\nSeals sleep on rocks.\n");
    let err = engine
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap_err();
    assert!(matches!(err, EngineError::ContextsRequired { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("postgres://") && !msg.contains(":excerpt@"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}
