//! The engine as a library: real model, real index directory, and a real HTTP /rerank
//! server on 127.0.0.1 standing in for a remote reranker.

use excerpt::{
    Engine, EngineError, EngineOptions, ErrorKind, IngestOptions, Mode, NoProgress, QueryRequest,
    RerankConfig, RerankerSpec,
};
use excerpt_testkit::axum::routing::post;
use excerpt_testkit::axum::{self, Json, Router};
use excerpt_testkit::fixtures::write_file;
use excerpt_testkit::openai::{self, Usage};
use excerpt_testkit::{rerank as shapes, FakeServer};
use serde_json::Value;

/// Scores a passage 0.9 when it mentions "zebra", else 0.1 (Cohere response shape,
/// results sorted by score as real servers do).
async fn rerank(Json(body): Json<Value>) -> Json<Value> {
    let scores: Vec<f64> = shapes::documents(&body)
        .iter()
        .map(|d| if d.contains("zebra") { 0.9 } else { 0.1 })
        .collect();
    Json(shapes::cohere(&scores))
}

fn serve() -> FakeServer {
    FakeServer::start(Router::new().route("/rerank", post(rerank)))
}

#[test]
fn hybrid_query_then_rerank() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(&docs, "animals.md", "# Animals\n\nThe lion hunts at night on the savanna.\n\n## Stripes\n\nA zebra has black and white stripes.\n");
    write_file(
        &docs,
        "cats.md",
        "# Cats\n\nHouse cats sleep most of the day and hunt mice at night.\n",
    );
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    let server = serve();
    let mut cfg = RerankConfig::new(server.url(), "fake-reranker");
    cfg.endpoint.api_key_env = None;
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
    let first = plain
        .corpus
        .as_corpus()
        .document(plain.hits[0].key.doc)
        .unwrap();
    let first_text = first.chunk_text(plain.hits[0].key.ordinal as usize);
    assert!(
        !first_text.contains("zebra"),
        "without reranking a hunting chunk wins: {first_text:?}"
    );
    // Fused by rank (RRF), hybrid hits also carry the relevance of their scores, which
    // `rse` values chunks by; one chunk at least tops a list, and none is above 1.
    let by_score: Vec<f32> = plain
        .hits
        .iter()
        .map(|h| {
            h.score_relevance
                .expect("hybrid RRF hits carry score_relevance")
        })
        .collect();
    assert!(
        by_score.iter().all(|r| (0.0..=1.0).contains(r)),
        "{by_score:?}"
    );
    assert!(by_score.iter().any(|&r| r >= 0.5), "{by_score:?}");
    let mut dense = req.clone();
    dense.mode = Mode::Dense;
    let dense = engine.retrieve(&dense).unwrap();
    assert!(dense.hits.iter().all(|h| h.score_relevance.is_none()));

    req.rerank_top = Some(10);
    let reranked = engine.retrieve(&req).unwrap();
    let top = &reranked.hits[0];
    let d = reranked.corpus.as_corpus().document(top.key.doc).unwrap();
    assert!(d.chunk_text(top.key.ordinal as usize).contains("zebra"));
    assert!((top.relevance - 0.9).abs() < 1e-6);
    assert!(reranked
        .hits
        .iter()
        .skip(1)
        .all(|h| (h.relevance - 0.1).abs() < 1e-6));
    // The reranker's score is the relevance now, for `rse` too.
    assert!(reranked.hits.iter().all(|h| h.score_relevance.is_none()));

    // Without a configured reranker, asking for one is a clear error.
    let bare = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let err = bare.retrieve(&req).unwrap_err().to_string();
    assert!(err.contains("no reranker is configured"), "{err}");
}

#[test]
fn no_index_yet_is_told_apart_from_other_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = Engine::new(EngineOptions::new(tmp.path().join("none")));
    let err = engine.documents().unwrap_err();
    assert!(err.is_no_index(), "{err}");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(!EngineError::BadRequest("x".into()).is_no_index());
}

/// A fake OpenAI-compatible chat server for `--contextualize`: answers "This passage is
/// about qq<first word of the passage>qq." (a word no source contains), reports usage
/// (prompt words, answer words), and fails its very first request with a 500.
#[derive(Default)]
struct FakeLlm {
    requests: std::sync::atomic::AtomicUsize,
    prompt_tokens: std::sync::atomic::AtomicU64,
    completion_tokens: std::sync::atomic::AtomicU64,
    /// Passages answered, in arrival order.
    asked: std::sync::Mutex<Vec<String>>,
}

fn first_word(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_lowercase()
}

fn marker(text: &str) -> String {
    format!("qq{}qq", first_word(text))
}

async fn chat(
    axum::extract::State(fake): axum::extract::State<std::sync::Arc<FakeLlm>>,
    Json(body): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use std::sync::atomic::Ordering::SeqCst;
    if fake.requests.fetch_add(1, SeqCst) == 0 {
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "warming up").into_response();
    }
    let user = openai::messages(&body)
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let passage = openai::last_passage(&body);
    let reply = format!("This passage is about {}.", marker(&passage));
    let (p, c) = (
        user.split_whitespace().count() as u64,
        reply.split_whitespace().count() as u64,
    );
    fake.prompt_tokens.fetch_add(p, SeqCst);
    fake.completion_tokens.fetch_add(c, SeqCst);
    fake.asked.lock().unwrap().push(passage);
    let usage = Usage {
        prompt: p,
        completion: c,
    };
    Json(openai::chat_completion(&body["model"], &reply, Some(usage))).into_response()
}

fn serve_chat(fake: std::sync::Arc<FakeLlm>) -> FakeServer {
    FakeServer::start(
        Router::new()
            .route(openai::CHAT_PATH, post(chat))
            .with_state(fake),
    )
}

fn paragraphs(title: &str, firsts: &[&str]) -> String {
    let mut text = format!("# {title}\n\n");
    for w in firsts {
        text.push_str(&format!(
            "{w} live here and the keepers look after them every day of the year.\n\n"
        ));
    }
    text
}

#[test]
fn contextualized_ingest_indexes_llm_contexts_and_caches_them() {
    use std::sync::atomic::Ordering::SeqCst;
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let zoo = ["Penguins", "Giraffes", "Elephants", "Otters", "Flamingos"];
    let garden = ["Tulips", "Roses", "Cabbages", "Beetles"];
    write_file(&docs, "zoo.md", paragraphs("Zoo", &zoo));
    write_file(&docs, "garden.md", paragraphs("Garden", &garden));

    let fake = std::sync::Arc::new(FakeLlm::default());
    let server = serve_chat(fake.clone());
    let mut chat = excerpt::ChatConfig::new(server.url(), "fake-llm");
    chat.endpoint.api_key_env = None;
    chat.endpoint.initial_backoff = std::time::Duration::from_millis(10);
    let mut cx = excerpt::ContextualizeOptions::new(chat);
    cx.concurrency = 3;
    cx.max_tokens = 16;
    let opts = IngestOptions {
        contextualize: Some(cx.clone()),
        ..IngestOptions::default()
    };
    let idx = tmp.path().join("idx");
    let mut eopts = EngineOptions::new(&idx);
    eopts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 48 });
    let engine = Engine::new(eopts);

    let first = engine
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!(first.added, 2);
    let snap = engine.snapshot().unwrap();
    let chunks = snap.chunk_count();
    assert!(chunks >= zoo.len() + garden.len(), "{chunks} chunks");
    // Every chunk asked once; the first request failed with a 500 and was retried.
    assert_eq!(first.chunks_contextualized, chunks);
    assert_eq!(first.context_cache_hits, 0);
    assert_eq!(fake.requests.load(SeqCst), chunks + 1);
    assert_eq!(fake.asked.lock().unwrap().len(), chunks);
    // (5) Usage as the server reported it.
    assert!(first.llm_prompt_tokens > 0 && first.llm_completion_tokens > 0);
    assert_eq!(first.llm_prompt_tokens, fake.prompt_tokens.load(SeqCst));
    assert_eq!(
        first.llm_completion_tokens,
        fake.completion_tokens.load(SeqCst)
    );
    let cfg = snap.config().contextualizer.clone().unwrap();
    assert_eq!((cfg.model.as_str(), cfg.max_tokens), ("fake-llm", 16));

    // (1) A word only the contexts contain finds its chunk, and only it. The context is
    // also what was embedded.
    let embedder = engine.embedder().unwrap();
    let mut words = std::collections::BTreeSet::new();
    for (d, doc) in snap.documents().iter().enumerate() {
        for c in &doc.chunks {
            let text = doc.chunk_text(c.ordinal as usize);
            let m = marker(text);
            assert!(words.insert(m.clone()), "first words must differ: {m}");
            assert!(!doc.text.contains(&m));
            assert_eq!(
                c.context.as_deref(),
                Some(format!("This passage is about {m}.").as_str())
            );
            let mut req = QueryRequest::new(&m);
            req.mode = Mode::Bm25;
            let hits = engine.retrieve(&req).unwrap().hits;
            assert_eq!(hits.len(), 1, "{m}");
            assert_eq!(
                (hits[0].key.doc, hits[0].key.ordinal),
                (d as u32, c.ordinal)
            );

            let key = excerpt_core::ChunkKey::new(d as u32, c.ordinal);
            let stored = snap.vector(key).unwrap();
            let indexed = excerpt_core::indexed_text(doc, c, true);
            assert!(indexed.contains(&m) && indexed.ends_with(text));
            let with = embedder.embed(&[indexed.as_str()]).unwrap().remove(0);
            let mut bare = c.clone();
            bare.context = None;
            let without = embedder
                .embed(&[excerpt_core::indexed_text(doc, &bare, true).as_str()])
                .unwrap()
                .remove(0);
            let dist = |v: &[f32]| {
                v.iter()
                    .zip(stored)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max)
            };
            assert!(dist(&with) < 1e-4 && dist(&without) > 1e-3);
        }
    }

    // (2) Returned pieces are exact source slices: no context leaks into them.
    let mut req = QueryRequest::new("qqottersqq qqrosesqq keepers");
    req.mode = Mode::Hybrid;
    let context = engine.query(&req).unwrap();
    assert!(!context.pieces.is_empty());
    for p in &context.pieces {
        let doc = &snap.documents()[snap.doc_index(&p.doc_id).unwrap() as usize];
        let slice: String = doc
            .text
            .chars()
            .skip(p.start)
            .take(p.end - p.start)
            .collect();
        assert_eq!(p.text, slice);
        assert!(!p.text.contains("qq") && !p.text.contains("This passage"));
    }

    // (3) Re-ingesting the same files asks nothing. Neither does re-adding a removed
    // document: its contexts come from the cache.
    let again = engine
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!((again.unchanged, again.chunks_contextualized), (2, 0));
    let zoo_chunks = snap.documents()[snap.doc_index("zoo.md").unwrap() as usize]
        .chunks
        .clone();
    assert_eq!(engine.remove(&["zoo.md".to_string()]).unwrap().len(), 1);
    let back = engine
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!((back.added, back.unchanged), (1, 1));
    assert_eq!(back.chunks_contextualized, 0);
    assert_eq!(back.context_cache_hits, zoo_chunks.len());
    assert_eq!((back.llm_prompt_tokens, back.llm_completion_tokens), (0, 0));
    assert_eq!(fake.requests.load(SeqCst), chunks + 1);
    let snap = engine.snapshot().unwrap();
    assert_eq!(
        snap.documents()[snap.doc_index("zoo.md").unwrap() as usize].chunks,
        zoo_chunks
    );

    // (4) Changing one document re-asks for its chunks only.
    let asked_before = fake.asked.lock().unwrap().len();
    write_file(
        &docs,
        "garden.md",
        paragraphs("Garden", &["Tulips", "Roses", "Carrots", "Beetles"]),
    );
    let changed = engine
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!((changed.updated, changed.unchanged), (1, 1));
    let snap = engine.snapshot().unwrap();
    let garden_doc = &snap.documents()[snap.doc_index("garden.md").unwrap() as usize];
    assert_eq!(changed.chunks_contextualized, garden_doc.chunks.len());
    let asked = fake.asked.lock().unwrap()[asked_before..].to_vec();
    assert_eq!(asked.len(), garden_doc.chunks.len());
    assert!(asked.iter().all(|p| garden_doc.text.contains(p.as_str())));
    let mut req = QueryRequest::new("qqcarrotsqq");
    req.mode = Mode::Bm25;
    assert_eq!(engine.retrieve(&req).unwrap().hits.len(), 1);
    let cache = std::fs::read_to_string(idx.join("contextualize").join("cache.jsonl")).unwrap();
    assert_eq!(cache.lines().count(), chunks + garden_doc.chunks.len());

    // The index remembers its contextualizer: ingesting without it, or with another
    // model, is refused with a clear message; an index without contexts cannot get them.
    // The messages name no command-line flags: the variants carry what a front end's
    // hint needs (the model of the index's contexts).
    let plain = engine
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap_err();
    let text = plain.to_string();
    assert!(
        text.contains("chunk contexts") && text.contains("fake-llm") && !text.contains("--"),
        "{text}"
    );
    assert!(
        matches!(&plain, EngineError::ContextsRequired { model, .. } if model == "fake-llm"),
        "{plain:?}"
    );
    assert_eq!(plain.kind(), ErrorKind::BadInput);
    let mut other = cx.clone();
    other.chat.endpoint.model = "other-llm".into();
    let other_opts = IngestOptions {
        contextualize: Some(other),
        ..IngestOptions::default()
    };
    let err = engine
        .ingest(std::slice::from_ref(&docs), &other_opts, &NoProgress)
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("other-llm") && !text.contains("--"), "{text}");
    assert!(
        matches!(&err, EngineError::ContextualizerMismatch { model, .. } if model == "fake-llm"),
        "{err:?}"
    );
    let bare_engine = Engine::new(EngineOptions::new(tmp.path().join("bare")));
    bare_engine
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    let err = bare_engine
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap_err();
    assert!(
        matches!(err, EngineError::ContextsRefused { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("without chunk contexts"), "{err}");
    assert_eq!(
        fake.requests.load(SeqCst),
        chunks + 1 + garden_doc.chunks.len()
    );
}

/// A page of two paragraphs, split into several chunks at 24 tokens.
const GARDEN: &str = "# Garden\n\nTomatoes need full sun. They need water every morning in \
    summer. Stake the plants when they reach knee height.\n\nThe shed holds the tools. \
    Rakes hang on the left wall. The mower is serviced in March.\n";

/// `ingest --sentence-vectors` stores one vector per sentence; `window` then reads them
/// instead of embedding, and returns the same context as an index without them (which
/// embeds the same sentences at query time).
#[test]
fn window_reads_sentence_vectors_stored_at_ingest() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(&docs, "garden.md", GARDEN);
    write_file(
        &docs,
        "kitchen.md",
        "# Kitchen\n\nBread rises overnight in a cool room. Bake it at a high heat. \
         Let it cool before slicing.\n",
    );
    let engine_at = |name: &str| {
        let mut opts = EngineOptions::new(tmp.path().join(name));
        opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 24 });
        Engine::new(opts)
    };
    let stored = engine_at("with");
    let opts = IngestOptions {
        sentence_vectors: true,
        ..IngestOptions::default()
    };
    let report = stored
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!(report.added, 2);
    assert!(report.sentences_embedded >= 10, "{report:?}");
    let snap = stored.snapshot().unwrap();
    let stats = snap.stats();
    assert_eq!(stats.sentence_vector_documents, 2);
    assert_eq!(
        stats.sentence_vectors,
        snap.documents()
            .iter()
            .map(|d| d.sentences.len())
            .sum::<usize>()
    );

    let plain = engine_at("without");
    plain
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(plain.snapshot().unwrap().stats().sentence_vectors, 0);

    let mut req = QueryRequest::new("how often do tomatoes need watering?");
    req.strategy = "window:max_expand=2".parse().unwrap();
    req.budget = 200;
    let a = stored.query(&req).unwrap();
    let b = plain.query(&req).unwrap();
    let note = |c: &excerpt::Context| {
        c.notes
            .iter()
            .find(|n| n.starts_with("window:"))
            .cloned()
            .unwrap_or_default()
    };
    assert!(!a.pieces.is_empty());
    assert!(
        note(&a).contains("read from the index, 0 sentence(s) embedded"),
        "{}",
        note(&a)
    );
    assert!(
        note(&b).contains(" 0 sentence vector(s) read from the index"),
        "{}",
        note(&b)
    );
    assert!(
        !note(&b).contains(", 0 sentence(s) embedded"),
        "{}",
        note(&b)
    );
    let spans = |c: &excerpt::Context| {
        c.pieces
            .iter()
            .map(|p| (p.doc_id.clone(), p.start, p.end, p.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(spans(&a), spans(&b));
}

/// Late chunking stores one vector per sentence, pooled from the forward pass of the
/// chunk that holds it: unit length, read in its chunk's context (so not the vector of
/// the sentence embedded alone, but close to it), and the sentence route reads them.
#[test]
fn late_chunking_pools_sentence_vectors_from_their_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(&docs, "garden.md", GARDEN);
    let engine_at = |name: &str| {
        let mut opts = EngineOptions::new(tmp.path().join(name));
        opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 24 });
        Engine::new(opts)
    };
    let ingest = |engine: &Engine, late_chunking: bool| {
        let opts = IngestOptions {
            sentence_vectors: true,
            late_chunking,
            ..IngestOptions::default()
        };
        engine
            .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
            .unwrap()
    };
    let late = engine_at("late");
    let report = ingest(&late, true);
    let alone = engine_at("alone");
    ingest(&alone, false);
    let (a, b) = (late.snapshot().unwrap(), alone.snapshot().unwrap());
    let doc = &a.documents()[0];
    assert!(doc.chunks.len() >= 2, "{} chunk(s)", doc.chunks.len());
    assert_eq!(report.sentences_embedded, doc.sentences.len());
    assert_eq!(a.stats().sentence_vectors, doc.sentences.len());
    let mut differ = 0;
    for i in 0..doc.sentences.len() {
        let v = a.sentence_vector(0, i).expect("a vector per sentence");
        let w = b.sentence_vector(0, i).expect("a vector per sentence");
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        // Stored at 8 bits a component: a unit vector's norm moves by about 1e-3.
        assert!((norm - 1.0).abs() < 1e-2, "sentence {i}: norm {norm}");
        let cos = excerpt_core::cosine(&v, &w);
        assert!(
            cos > 0.5,
            "sentence {i}: cosine {cos} to the sentence alone"
        );
        differ += usize::from(cos < 0.999);
    }
    assert!(
        differ > 0,
        "late vectors equal the sentences embedded alone"
    );
    // The chunks' vectors come from the same pass, and equal embedding's.
    let (va, vb) = (a.doc_vectors(0).unwrap(), b.doc_vectors(0).unwrap());
    assert_eq!(va.len(), vb.len());
    for (x, y) in va.chunks(384).zip(vb.chunks(384)) {
        assert!(excerpt_core::cosine(x, y) > 0.99999);
    }

    let mut req = QueryRequest::new("how often do tomatoes need watering?");
    req.strategy = "topk:unit=sentence,order=score,dense_min_terms=0"
        .parse()
        .unwrap();
    req.budget = 40;
    let ctx = late.query(&req).unwrap();
    assert!(
        ctx.notes
            .iter()
            .any(|n| n.contains("sentence similarity from stored sentence vectors")),
        "{:?}",
        ctx.notes
    );
    assert!(ctx.pieces[0].text.contains("water"), "{:?}", ctx.pieces);
    // Only for queries of enough distinct terms: by default 14, which this short
    // question is far from; it has at least 2 ("tomato", "water").
    for (strategy, read) in [
        ("topk:unit=sentence,order=score", false),
        ("topk:unit=sentence,order=score,dense_min_terms=2", true),
        ("topk:unit=sentence,order=score,dense_min_terms=7", false),
    ] {
        req.strategy = strategy.parse().unwrap();
        let ctx = late.query(&req).unwrap();
        let noted = ctx
            .notes
            .iter()
            .any(|n| n.contains("sentence similarity from stored sentence vectors"));
        assert_eq!(noted, read, "{strategy}: {:?}", ctx.notes);
    }
}

/// An index created with late chunking records it: a later ingest that does not ask
/// for sentence vectors makes them the same way, so the index never mixes documents with
/// and without them by accident; one created without records nothing.
#[test]
fn late_chunking_is_recorded_by_the_index_it_creates() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(&docs, "garden.md", GARDEN);
    let more = tmp.path().join("more");
    std::fs::create_dir_all(&more).unwrap();
    write_file(&more, "b.txt", "Roses want rain. Ferns want shade.\n");
    let late = IngestOptions {
        sentence_vectors: true,
        late_chunking: true,
        ..IngestOptions::default()
    };
    let engine = Engine::new(EngineOptions::new(tmp.path().join("late")));
    engine
        .ingest(std::slice::from_ref(&docs), &late, &NoProgress)
        .unwrap();
    let report = engine
        .ingest(
            std::slice::from_ref(&more),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.sentences_embedded, 2, "{report:?}");
    let snap = engine.snapshot().unwrap();
    assert_eq!(
        snap.config().sentence_vectors,
        Some(excerpt::SentenceVectors::Late)
    );
    assert_eq!(snap.stats().sentence_vector_documents, 2);
    let manifest = std::fs::read_to_string(tmp.path().join("late/MANIFEST.json")).unwrap();
    assert!(
        manifest.contains("\"sentence_vectors\": \"late\""),
        "{manifest}"
    );

    let plain = Engine::new(EngineOptions::new(tmp.path().join("plain")));
    plain
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    // Asked for later, they are made for that ingest's documents only.
    let report = plain.ingest(&[more], &late, &NoProgress).unwrap();
    assert_eq!(report.sentences_embedded, 2);
    let snap = plain.snapshot().unwrap();
    assert_eq!(snap.config().sentence_vectors, None);
    assert_eq!(snap.stats().sentence_vector_documents, 1);
}

/// Late chunking needs token vectors, which a remote embedding endpoint does not give:
/// the ingest says so and writes nothing.
#[test]
fn late_chunking_is_refused_with_a_remote_embedder() {
    async fn embed(Json(body): Json<Value>) -> Json<Value> {
        let vectors = body["input"]
            .as_array()
            .map(|xs| {
                xs.iter()
                    .map(|t| {
                        let n = t.as_str().unwrap_or("").len() as f32;
                        vec![1.0, n, n.sqrt(), 2.0]
                    })
                    .collect()
            })
            .unwrap_or_default();
        Json(openai::embeddings("fake", vectors, false))
    }
    let server = FakeServer::start(Router::new().route(openai::EMBEDDINGS_PATH, post(embed)));
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(&docs, "a.txt", "One sentence here. Another one there.\n");
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    opts.embedder = excerpt::EmbedderSpec::Remote(excerpt::RemoteConfig::new(server.url(), "fake"));
    let engine = Engine::new(opts);
    let ingest = IngestOptions {
        sentence_vectors: true,
        late_chunking: true,
        ..IngestOptions::default()
    };
    let err = engine
        .ingest(std::slice::from_ref(&docs), &ingest, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("late chunking"), "{err}");
    assert!(!tmp.path().join("idx").join("manifest.json").exists());
}

/// A plain-text document with no sections, pages or metadata.
fn plain_document(id: &str, title: &str, text: &str) -> excerpt::ParsedDocument {
    excerpt::ParsedDocument {
        id: id.into(),
        title: title.into(),
        source: None,
        metadata: Default::default(),
        text: text.into(),
        sections: vec![],
        atomic: vec![],
        pages: vec![],
    }
}

/// A reader in one engine (as in another process) keeps answering while a writer in
/// another engine commits over and over: opening the latest snapshot in the middle of a
/// commit retries instead of failing.
#[test]
fn readers_keep_answering_while_another_writer_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let writer = Engine::new(EngineOptions::new(&dir));
    let doc = |i: usize| {
        plain_document(
            &format!("notes/{i:03}.txt"),
            &format!("Note {i}"),
            &format!("Note {i}: the replica was restarted after the cache filled up.\n"),
        )
    };
    writer
        .ingest_documents(vec![doc(0)], &IngestOptions::default(), &NoProgress)
        .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        let dir = dir.clone();
        std::thread::spawn(move || {
            let engine = Engine::new(EngineOptions::new(&dir));
            let mut req = QueryRequest::new("replica cache");
            req.mode = Mode::Bm25;
            let mut answered = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let ctx = engine.query(&req).expect("a query during commits");
                assert!(!ctx.pieces.is_empty());
                answered += 1;
            }
            answered
        })
    };
    for i in 1..40 {
        writer
            .ingest_documents(vec![doc(i)], &IngestOptions::default(), &NoProgress)
            .expect("the writer commits while another engine reads");
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let answered = reader.join().expect("the reader never failed");
    assert!(answered > 0);
}

/// An engine over an index of three documents, each committed alone (one segment each,
/// in id order: `notes/a.txt` is in g1, `notes/b.txt` in g2, `notes/c.txt` in g3).
fn three_segments(dir: &std::path::Path) -> Engine {
    let engine = Engine::new(EngineOptions::new(dir));
    for (name, text) in [
        ("a", "The harbour crane lifts containers from the ships."),
        ("b", "The lighthouse keeper lights the lamp at dusk."),
        ("c", "The ferry crosses the bay twice an hour."),
    ] {
        let doc = plain_document(&format!("notes/{name}.txt"), &format!("Note {name}"), text);
        engine
            .ingest_documents(vec![doc], &IngestOptions::default(), &NoProgress)
            .unwrap();
    }
    engine
}

fn doc_ids(ctx: &excerpt::Context) -> Vec<String> {
    let mut ids: Vec<String> = ctx.pieces.iter().map(|p| p.doc_id.clone()).collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn damaged_index_answers_from_what_it_can_read_and_repairs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let engine = three_segments(&dir);
    assert!(engine.verify().unwrap().is_sound());
    assert!(!engine.stats().unwrap().damaged);
    // The middle segment's documents file loses a byte in the middle.
    let path = dir.join("segments/g0000000002.docs");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();
    // A new engine (a snapshot read before the damage keeps answering from memory).
    let engine = Engine::new(EngineOptions::new(&dir));

    let report = engine.verify().unwrap();
    assert!(!report.is_sound());
    assert_eq!(report.lost_documents, ["notes/b.txt"]);

    // Every mode answers from the two readable documents and names the third.
    for mode in [Mode::Hybrid, Mode::Dense, Mode::Bm25] {
        let mut req = QueryRequest::new("crane lighthouse ferry");
        req.mode = mode;
        let ctx = engine.query(&req).unwrap();
        assert_eq!(doc_ids(&ctx), ["notes/a.txt", "notes/c.txt"], "{mode:?}");
        assert!(
            ctx.warnings
                .iter()
                .any(|w| w.contains("notes/b.txt") && w.contains("excerpt repair")),
            "{:?}",
            ctx.warnings
        );
    }
    let stats = engine.stats().unwrap();
    assert!(stats.damaged);
    assert_eq!(stats.unavailable_documents, ["notes/b.txt"]);
    assert_eq!(stats.documents, 2);

    // Writes refuse with a corruption error until the index is repaired.
    let err = engine.remove(&["notes/a.txt".into()]).unwrap_err();
    assert!(
        matches!(err, EngineError::Index(excerpt::IndexError::Corrupt { .. })),
        "{err}"
    );
    let repaired = engine.repair().unwrap();
    assert_eq!(repaired.lost_documents, ["notes/b.txt"]);
    assert_eq!(repaired.documents, 2);
    assert!(engine.verify().unwrap().is_sound());
    let ctx = engine.query(&QueryRequest::new("ferry")).unwrap();
    assert!(ctx.warnings.is_empty(), "{:?}", ctx.warnings);
    assert!(!engine.stats().unwrap().damaged);

    // Ingest and rm work again.
    let again = three_segments(&dir);
    let docs: Vec<String> = again
        .documents()
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(docs, ["notes/a.txt", "notes/b.txt", "notes/c.txt"]);
    assert_eq!(
        again.remove(&["notes/a.txt".into()]).unwrap(),
        ["notes/a.txt"]
    );
    assert!(again.verify().unwrap().is_sound());
}

#[test]
fn truncated_manifest_is_recovered_by_readers_and_repair() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let engine = three_segments(&dir);
    let manifest = dir.join("MANIFEST.json");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 3]).unwrap();

    let fresh = Engine::new(EngineOptions::new(&dir));
    let mut req = QueryRequest::new("ferry lighthouse");
    req.mode = Mode::Bm25;
    let ctx = fresh.query(&req).unwrap();
    assert_eq!(doc_ids(&ctx), ["notes/b.txt", "notes/c.txt"]);
    assert!(
        ctx.warnings
            .iter()
            .any(|w| w.contains("manifest is damaged")),
        "{:?}",
        ctx.warnings
    );
    assert!(fresh.stats().unwrap().damaged);
    assert!(!fresh.verify().unwrap().is_sound());
    let err = engine
        .ingest_documents(vec![], &IngestOptions::default(), &NoProgress)
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Index(excerpt::IndexError::Corrupt { .. })),
        "{err}"
    );

    let repaired = fresh.repair().unwrap();
    assert!(repaired.manifest.is_some());
    assert!(repaired.lost_documents.is_empty());
    assert_eq!(repaired.documents, 3);
    assert!(fresh.verify().unwrap().is_sound());
    assert!(fresh.query(&req).unwrap().warnings.is_empty());
}

/// A reader that has queried keeps its snapshot while the manifest file keeps its bytes,
/// and sees at once the manifest damaged, mended, and replaced by another commit.
#[test]
fn a_reader_sees_every_change_of_the_manifest_after_its_first_query() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let writer = three_segments(&dir);
    let manifest = dir.join("MANIFEST.json");
    let reader = Engine::new(EngineOptions::new(&dir));
    let mut req = QueryRequest::new("ferry lighthouse");
    req.mode = Mode::Bm25;
    let damaged = |ctx: &excerpt::Context| {
        ctx.warnings
            .iter()
            .any(|w| w.contains("manifest is damaged"))
    };
    let first = reader.query(&req).unwrap();
    assert!(!damaged(&first), "{:?}", first.warnings);
    assert!(std::sync::Arc::ptr_eq(
        &reader.snapshot().unwrap(),
        &reader.snapshot().unwrap()
    ));

    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 3]).unwrap();
    let ctx = reader.query(&req).unwrap();
    assert!(damaged(&ctx), "{:?}", ctx.warnings);
    std::fs::write(&manifest, &bytes).unwrap();
    let ctx = reader.query(&req).unwrap();
    assert!(!damaged(&ctx), "{:?}", ctx.warnings);
    assert_eq!(doc_ids(&ctx), doc_ids(&first));

    let generation = reader.snapshot().unwrap().manifest().generation;
    assert_eq!(
        writer.remove(&["notes/b.txt".into()]).unwrap(),
        ["notes/b.txt"]
    );
    let after = reader.snapshot().unwrap();
    assert!(after.manifest().generation > generation);
    assert!(!doc_ids(&reader.query(&req).unwrap()).contains(&"notes/b.txt".to_string()));
}

#[test]
fn a_scoped_query_reads_its_feedback_terms_from_the_other_documents_inside_its_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let main = docs.join("main");
    std::fs::create_dir_all(&main).unwrap();
    write_file(
        &main,
        "a.md",
        "# A\n\nThe recipient shall not solicit or hire employees of the company.\n\nPayment is due monthly.\n",
    );
    write_file(
        &main,
        "b.md",
        "# B\n\nEach party agrees not to solicit or hire employees.\n",
    );
    write_file(
        &main,
        "c.md",
        "# C\n\nThe buyer shall not contact its staff.\n\nDeliveries arrive on Tuesdays.\n",
    );
    write_file(
        &docs.join("other"),
        "d.md",
        "# D\n\nNo vendor may solicit or poach recruits.\n",
    );
    let engine = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    engine
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    let mut req = QueryRequest::new("may the buyer solicit workers?");
    req.filter.doc_ids = vec!["main/c.md".into()];
    let retrieved = engine.retrieve(&req).unwrap();
    let corpus = retrieved.corpus.as_corpus();
    assert!(retrieved
        .hits
        .iter()
        .all(|h| corpus.document(h.key.doc).unwrap().id == "main/c.md"));
    // The words that go with "solicit" in the other documents, not the query's own.
    let terms = |r: &excerpt::Retrieved| -> Vec<String> {
        r.feedback.iter().map(|(t, _)| t.clone()).collect()
    };
    let all = terms(&retrieved);
    for w in ["hire", "employe", "poach"] {
        assert!(all.iter().any(|t| t == w), "{w}: {all:?}");
    }
    assert!(!all.iter().any(|t| t == "solicit"), "{all:?}");
    // Read beside the query's embedding (as here), or after the first stage (where a
    // top k could drop hits): the same terms.
    let mut late = req.clone();
    late.top_k = Some(100);
    assert_eq!(terms(&engine.retrieve(&late).unwrap()), all);
    // The default strategy uses them, and says so; the context stays in scope.
    let ctx = engine.query(&req).unwrap();
    assert!(
        ctx.notes.iter().any(|n| n.contains("feedback term")),
        "{:?}",
        ctx.notes
    );
    assert!(ctx.pieces.iter().all(|p| p.doc_id == "main/c.md"));
    // A folder the filter fences off is not read, not even for terms.
    req.filter.path_prefixes = vec!["main/".into()];
    let fenced = terms(&engine.retrieve(&req).unwrap());
    assert!(fenced.iter().any(|t| t == "hire"), "{fenced:?}");
    assert!(!fenced.iter().any(|t| t == "poach"), "{fenced:?}");
    // Scoped to every document it may read, a query has no other documents to learn
    // from: its own best sentences would only echo it.
    req.filter.doc_ids = ["main/a.md", "main/b.md", "main/c.md"]
        .map(String::from)
        .to_vec();
    assert!(engine.retrieve(&req).unwrap().feedback.is_empty());
    req.filter.doc_ids = vec!["main/c.md".into()];
    // Unscoped, the first stage's own BM25 list is read (100 candidates, the default),
    // or a search of its own when the first stage went less deep: the same terms here.
    let mut open = QueryRequest::new("may the buyer solicit workers?");
    let deep = terms(&engine.retrieve(&open).unwrap());
    open.candidates = 3;
    let shallow = terms(&engine.retrieve(&open).unwrap());
    for t in [&deep, &shallow] {
        assert!(
            t.iter().any(|w| w == "hire") && t.iter().any(|w| w == "poach"),
            "{t:?}"
        );
    }
    assert_eq!(deep, shallow);
    // Read beside the query's embedding (hybrid: the list is handed over as soon as
    // the lexical search ends) or after the search (BM25 alone): the same terms.
    open.candidates = 100;
    open.mode = Mode::Bm25;
    assert_eq!(terms(&engine.retrieve(&open).unwrap()), deep);
    // A strategy that does not read them does not pay for them.
    req.strategy = "rse".parse().unwrap();
    assert!(engine.retrieve(&req).unwrap().feedback.is_empty());
}

/// A megabyte title is indexed once, not once per chunk: the chunk headers cut it (the
/// document keeps it whole). Before the cap, every chunk's header carried it into BM25
/// and the embedder: twenty-odd chunks made an index of tens of megabytes.
#[test]
fn a_megabyte_title_does_not_multiply_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    // ~1 MB of distinct words: neither BM25 nor its compression can fold them.
    let title: String = (0..110_000).map(|i| format!("w{i:x}q ")).collect();
    let body: String = (0..160)
        .map(|i| {
            format!(
                "Paragraph {i}: the crane moved {i} containers to berth {}.\n\n",
                i % 7
            )
        })
        .collect();
    write_file(
        &docs,
        "report.md",
        format!("---\ntitle: \"{title}\"\n---\n{body}").as_bytes(),
    );
    let engine = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let report = engine
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(report.added, 1, "{report:?}");
    let stats = engine.stats().unwrap();
    assert!(stats.chunks >= 5, "{} chunks", stats.chunks);
    // The title is stored twice (the title and the metadata it came from), the rest is
    // small: far from a copy per chunk.
    assert!(
        stats.disk_bytes < 4 * title.len() as u64,
        "{} bytes on disk for a {}-byte title and {} chunks",
        stats.disk_bytes,
        title.len(),
        stats.chunks
    );
    let doc = engine.document("report.md").unwrap().expect("ingested");
    assert_eq!(doc.title.len(), title.trim().len());
}

/// An index of `files` (name, text) in a temporary directory, chunks of 16 tokens.
fn small_index(files: &[(&str, &str)]) -> (tempfile::TempDir, Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for (name, text) in files {
        write_file(&docs, name, text);
    }
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 16 });
    let engine = Engine::new(opts);
    engine
        .ingest(&[docs], &IngestOptions::default(), &NoProgress)
        .unwrap();
    (tmp, engine)
}

#[test]
fn timings_say_where_a_query_went_and_change_nothing_else() {
    let (_tmp, engine) = small_index(&[
        ("animals.md", "# Animals\n\nThe lion hunts at night on the savanna.\n\n## Stripes\n\nA zebra has black and white stripes.\n\n## Birds\n\nOwls hunt at night too, and sleep by day.\n"),
        ("cats.md", "# Cats\n\nHouse cats sleep most of the day and hunt mice at night.\n"),
    ]);
    let mut req = QueryRequest::new("which animal hunts at night?");
    let plain = engine.query(&req).unwrap();
    assert!(plain.timings.is_none());
    let json = serde_json::to_value(&plain).unwrap();
    assert!(json.get("timings").is_none(), "{json}");

    req.timings = true;
    let timed = engine.query(&req).unwrap();
    assert_eq!(timed.pieces, plain.pieces);
    assert_eq!(timed.notes, plain.notes);
    let t = timed.timings.expect("timings asked for");
    assert!(t.embed_ms > 0.0, "{t:?}");
    // BM25, then the feedback terms read from its list, run beside the embedding; dense
    // search, fusion and assembly follow, one after the other. (Feedback terms read
    // after the first stage would add to the total all the more.) Each time is rounded
    // down to microseconds, the total too.
    let beside = t.embed_ms.max(t.lexical_ms + t.feedback_ms);
    let sequential = beside + t.dense_ms + t.fusion_ms + t.assembly_ms;
    assert!(t.total_ms + 0.001 >= sequential, "{t:?}");
    assert_eq!(t.rerank_ms, 0.0);
    let json = serde_json::to_value(&timed).unwrap();
    assert!(
        json["timings"]["total_ms"].as_f64().unwrap() > 0.0,
        "{json}"
    );

    let mut lexical = req.clone();
    lexical.mode = Mode::Bm25;
    let t = engine.query(&lexical).unwrap().timings.unwrap();
    assert_eq!((t.embed_ms, t.dense_ms), (0.0, 0.0), "{t:?}");
}

/// The BM25 search of a hybrid query runs on another thread while the query is
/// embedded: its list must be the one a BM25-only query gets, so the fused ranking is
/// the reciprocal-rank fusion of the dense-only and BM25-only rankings.
#[test]
fn hybrid_ranking_fuses_the_lists_each_search_gives_alone() {
    let (_tmp, engine) = small_index(&[
        ("a.md", "# Tides\n\nThe moon pulls the sea, which makes tides.\n\n## Storms\n\nStorm surges raise the sea above the tide line.\n\n## Harbours\n\nHarbour pilots read tide tables before every crossing.\n"),
        ("b.md", "# Orbits\n\nThe moon circles the earth every 27 days.\n\n## Light\n\nMoonlight is sunlight reflected by the moon's surface.\n"),
    ]);
    let mut req = QueryRequest::new("why does the sea have tides");
    let ranks = |mode: Mode| {
        let mut r = req.clone();
        r.mode = mode;
        let found = engine.retrieve(&r).unwrap();
        found.hits.iter().map(|h| h.key).collect::<Vec<_>>()
    };
    let (dense, lexical) = (ranks(Mode::Dense), ranks(Mode::Bm25));
    assert!(!lexical.is_empty() && dense.len() > lexical.len());
    let mut fused: Vec<(excerpt::ChunkKey, f64)> = dense
        .iter()
        .map(|&k| {
            let rrf = |list: &[excerpt::ChunkKey]| {
                list.iter()
                    .position(|&x| x == k)
                    .map_or(0.0, |r| 1.0 / (60.0 + r as f64 + 1.0))
            };
            (k, rrf(&dense) + rrf(&lexical))
        })
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    req.mode = Mode::Hybrid;
    let hybrid: Vec<_> = engine
        .retrieve(&req)
        .unwrap()
        .hits
        .iter()
        .map(|h| h.key)
        .collect();
    let expected: Vec<_> = fused.iter().map(|f| f.0).collect();
    assert_eq!(hybrid, expected);
    assert_ne!(hybrid, dense, "BM25 moves the fused ranking in this corpus");
}

/// Files are read on a thread of their own, ahead of the embedding: they are still taken
/// in walk order, one that fails to load is reported without stopping the rest, and the
/// time the embedding waited for files is part of the run's time.
#[test]
fn files_read_ahead_are_taken_in_walk_order() {
    use std::sync::Mutex;
    #[derive(Default)]
    struct Order(Mutex<Vec<String>>);
    impl excerpt::IngestProgress for Order {
        fn file_done(&self, path: &str) {
            self.0
                .lock()
                .unwrap()
                .push(path.rsplit('/').next().unwrap().to_string());
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let names = ["a.md", "b.md", "c.pdf", "d.md", "e.md", "f.md"];
    for (i, name) in names.iter().enumerate() {
        let body = if name.ends_with(".pdf") {
            "not a PDF at all".to_string()
        } else {
            format!("# Note {i}\n\nThe {i}th note says the pump number {i} was replaced.\n")
        };
        write_file(&docs, name, &body);
    }
    let engine = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let order = Order::default();
    let report = engine
        .ingest(&[docs], &IngestOptions::default(), &order)
        .unwrap();
    assert_eq!(*order.0.lock().unwrap(), names);
    assert_eq!((report.files, report.added), (6, 5));
    // Skipped or failed (a file that is not what its extension says), named either way.
    let problems: Vec<&str> = report
        .skipped
        .iter()
        .chain(&report.failed)
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].ends_with("c.pdf"));
    assert!(report.wait_for_files_seconds >= 0.0);
    assert!(report.wait_for_files_seconds <= report.seconds);
    let ids: Vec<String> = engine
        .documents()
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, ["a.md", "b.md", "d.md", "e.md", "f.md"]);
}

#[test]
fn a_copy_in_a_later_batch_of_the_same_run_reuses_the_vectors_written_before() {
    // Two folders holding the same file, one document a batch: the second copy's chunks
    // are found among the vectors the run itself committed, not embedded again.
    let text = "# Tides\n\nThe moon pulls the sea twice a day. Spring tides come with the \
                full and the new moon.\n\n## Neap\n\nNeap tides fall between them, when \
                the sun and the moon pull at right angles.\n";
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    for folder in ["a", "b"] {
        std::fs::create_dir_all(docs.join(folder)).unwrap();
        write_file(&docs.join(folder), "tides.md", text);
    }
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 16 });
    let engine = Engine::new(opts);
    let ingest = IngestOptions {
        commit_every_chunks: 1,
        ..IngestOptions::default()
    };
    let report = engine.ingest(&[docs], &ingest, &NoProgress).unwrap();
    assert_eq!(report.added, 2, "{report:?}");
    let snap = engine.snapshot().unwrap();
    let chunks = snap.doc(0).unwrap().chunks.len();
    assert!(chunks >= 2, "{chunks}");
    assert_eq!(report.chunks_embedded, chunks, "{report:?}");
    assert_eq!(report.chunks_reused, chunks, "{report:?}");
    assert_eq!(snap.doc_vectors(0), snap.doc_vectors(1));
}

#[test]
fn a_later_run_reuses_the_vectors_of_live_chunks_with_the_same_text_and_only_those() {
    // One engine, as a server keeps: its snapshot holds the segments between runs, so
    // each run finds the committed chunks by key without hashing the index again.
    // One title for all: the chunk headers are part of what is embedded.
    let doc = |id: &str, text: &str| plain_document(id, "Tides", text);
    let first = "The moon pulls the sea twice a day.\n\nSpring tides come with the full moon.\n\n\
                 Neap tides fall between them.\n";
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = EngineOptions::new(tmp.path().join("idx"));
    opts.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 10 });
    let engine = Engine::new(opts);
    let run = |docs| {
        engine
            .ingest_documents(docs, &IngestOptions::default(), &NoProgress)
            .unwrap()
    };
    let report = run(vec![
        doc("tides.txt", first),
        doc("other.txt", "Rivers run to the sea.\n"),
    ]);
    let before = engine.snapshot().unwrap();
    let tides = before.doc_index("tides.txt").unwrap();
    let chunks = before.doc(tides).unwrap().chunks.len();
    assert!(chunks >= 3 && report.chunks_embedded > chunks, "{report:?}");
    let vectors = before.doc_vectors(tides).unwrap().to_vec();

    // A copy under another id, in a run of its own: every chunk found, none embedded.
    let report = run(vec![doc("copy.txt", first)]);
    assert_eq!(
        (report.chunks_reused, report.chunks_embedded),
        (chunks, 0),
        "{report:?}"
    );
    let snap = engine.snapshot().unwrap();
    let copy = snap.doc_index("copy.txt").unwrap();
    assert_eq!(snap.doc_vectors(copy).unwrap(), &vectors[..]);

    // Gone from the index (both holders removed): the text is embedded again.
    engine
        .remove(&["tides.txt".to_string(), "copy.txt".to_string()])
        .unwrap();
    let report = run(vec![doc("again.txt", first)]);
    assert_eq!(
        (report.chunks_reused, report.chunks_embedded),
        (0, chunks),
        "{report:?}"
    );

    // An edit: the unchanged chunks reused, the changed one embedded.
    let edited = first.replace("Neap tides fall between them.", "Neap tides are weaker.");
    let report = run(vec![doc("again.txt", &edited)]);
    let snap = engine.snapshot().unwrap();
    let now = snap
        .doc(snap.doc_index("again.txt").unwrap())
        .unwrap()
        .chunks
        .len();
    assert_eq!(
        report.chunks_reused + report.chunks_embedded,
        now,
        "{report:?}"
    );
    assert!(
        report.chunks_embedded >= 1 && report.chunks_reused >= 1,
        "{report:?}"
    );
}

/// What assembly derives from documents (transcripts or not, headings' terms, sentence
/// units, stems, sentences' term numbers) is kept by the snapshot, never by the process:
/// queries answered in one order by one engine and in the reverse order by another, on
/// the same index, give the same bytes; and a query asked again after the others, when
/// everything it reads was derived already, gives what it gave first.
#[test]
fn a_query_answers_the_same_whatever_ran_before() {
    let meeting: String = (0..24)
        .map(|i| {
            format!(
                "{}: On point {i} the budget for the harbour project was discussed again.\n",
                ["Grace", "Marcus", "Lena"][i % 3]
            )
        })
        .collect();
    let (tmp, first) = small_index(&[
        ("meeting.txt", &meeting),
        ("filing.md", "# Annual report\n\n## Consolidated Balance Sheets\n\nTotal assets were $ 1,200 million and total liabilities $ 700 million.\n\n## Consolidated Statements of Cash Flows\n\nCash from operations rose to $ 310 million.\n\n| Item | 2023 | 2024 |\n|---|---|---|\n| Revenue | 900 | 1,050 |\n| Costs | 600 | 640 |\n\n## Off-Balance Sheet Arrangements\n\nThere are none.\n"),
        ("guide.md", "# Setup guide\n\nInstall the tool as follows:\n\n```\nexcerpt setup\nexcerpt ingest docs\n```\n\nThen ask a question. The index lives in one folder and its manifest names every file.\n"),
        ("contract.md", "# Agreement\n\nThe Receiving Party shall:\n(a) keep the information secret;\n(b) return every document on request;\n(c) tell the Disclosing Party of any loss.\n\nThis agreement ends after three years.\n"),
    ]);
    let queries = [
        "what did Marcus say about the harbour budget?",
        "what were total assets according to the consolidated balance sheets?",
        "how do I install the tool?",
        "what must the receiving party do with documents?",
        "revenue in 2024",
        "when does the agreement end?",
    ];
    let answer = |engine: &Engine, q: &str| {
        let ctx = engine.query(&QueryRequest::new(q)).unwrap();
        (ctx.pieces.len(), serde_json::to_string(&ctx).unwrap())
    };
    let answered: Vec<(usize, String)> = queries.iter().map(|q| answer(&first, q)).collect();
    // Most questions find something (what is compared is not a row of empty contexts).
    let found = answered.iter().filter(|(n, _)| *n > 0).count();
    assert!(found * 2 > queries.len(), "{answered:#?}");
    let answer = |engine: &Engine, q: &str| answer(engine, q).1;
    let forward: Vec<String> = answered.into_iter().map(|(_, json)| json).collect();
    let again: Vec<String> = queries.iter().map(|q| answer(&first, q)).collect();
    assert_eq!(forward, again, "asked again on a warm snapshot");
    let second = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let mut backward: Vec<String> = queries.iter().rev().map(|q| answer(&second, q)).collect();
    backward.reverse();
    for ((q, a), b) in queries.iter().zip(&forward).zip(&backward) {
        assert_eq!(a, b, "{q}");
    }
}

/// The README's quick-start question, on the sample index `scripts/setup.sh` builds (this
/// repository's documents without their history, the README): its context at 800 tokens
/// holds the paragraph of ARCHITECTURE that answers it (writes are atomic) and a
/// sentence that says what a kill leaves behind, in reading order and without a label
/// left alone. The documents are the live ones, so an edit moves their chunks: the
/// sentence may be ARCHITECTURE's on the commit point or the README's on the last
/// commit, whichever the edit leaves within reach.
#[test]
fn the_quick_start_question_is_answered_by_the_paragraph_on_atomic_commits() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let engine = Engine::new(EngineOptions::new(tmp.path().join("idx")));
    let mut opts = IngestOptions::default();
    opts.walk.exclude = vec!["history/*".into()];
    engine
        .ingest(
            &[repo.join("docs"), repo.join("README.md")],
            &opts,
            &NoProgress,
        )
        .unwrap();
    let mut req = QueryRequest::new("How does Excerpt stay consistent when an ingest is killed?");
    req.budget = 800;
    let ctx = engine.query(&req).unwrap();
    let shown: Vec<String> = ctx
        .pieces
        .iter()
        .map(|p| format!("{} {}..{}: {:.60}", p.doc_id, p.start, p.end, p.text))
        .collect();
    // The paragraph: the invariant "Writes are atomic", up to the next invariant.
    let arch = std::fs::read_to_string(repo.join("docs/ARCHITECTURE.md")).unwrap();
    let at = arch.find("- **Writes are atomic").expect("the paragraph");
    let end = at + 2 + arch[at + 2..].find("\n- **").unwrap();
    let (start, end) = (arch[..at].chars().count(), arch[..end].chars().count());
    assert!(
        ctx.pieces
            .iter()
            .any(|p| p.doc_id == "ARCHITECTURE.md" && p.start < end && start < p.end),
        "{shown:#?}\n{:?}",
        ctx.notes
    );
    // And an answer: a sentence that says what a kill leaves. ARCHITECTURE's begins in a
    // chunk that retrieval ranks far below the paragraph's first, so it comes only when
    // the rest of that paragraph is within the continuation's reach of the chunk before.
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let answers = [
        (
            "ARCHITECTURE.md",
            &arch,
            "The manifest rename is the commit point",
        ),
        (
            "README.md",
            &readme,
            "killing the process leaves the last commit intact",
        ),
    ];
    let answered = answers.iter().any(|(doc, text, sentence)| {
        let at = text.find(sentence).expect("the answer sentence");
        let at = text[..at].chars().count();
        ctx.pieces
            .iter()
            .any(|p| p.doc_id == *doc && p.start <= at && at < p.end)
    });
    assert!(answered, "{shown:#?}\n{:?}", ctx.notes);
    for pair in ctx.pieces.windows(2) {
        if pair[0].doc_id == pair[1].doc_id {
            assert!(pair[0].end < pair[1].start, "reading order: {shown:#?}");
        }
    }
    assert!(
        ctx.pieces
            .iter()
            .all(|p| p.text.trim().chars().count() >= 20),
        "{shown:#?}"
    );
}

/// `IngestOptions::language` (the CLI's `--language`) names the language of documents
/// whose metadata names none, as its ISO 639-3 code; a document's own `language` wins,
/// the others are detected without it, and a name the analysis does not know is an error
/// before anything is written.
#[test]
fn an_ingest_language_is_recorded_where_a_document_names_none() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // English words: detection alone would say English.
    std::fs::write(
        docs.join("plain.md"),
        "The cat sat on the mat and looked at the garden for a long while.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("own.md"),
        "---\nlanguage: fra\n---\nThe dog ran across the field after the ball.\n",
    )
    .unwrap();
    let language_of = |engine: &Engine, id: &str| -> String {
        let doc = engine.document(id).unwrap().expect("ingested");
        doc.metadata["language"].as_str().unwrap().to_string()
    };
    let detected = Engine::new(EngineOptions::new(tmp.path().join("a")));
    detected
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(language_of(&detected, "plain.md"), "eng");
    let set = Engine::new(EngineOptions::new(tmp.path().join("b")));
    let opts = IngestOptions {
        language: Some("German".into()),
        ..IngestOptions::default()
    };
    set.ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap();
    assert_eq!(language_of(&set, "plain.md"), "deu");
    assert_eq!(language_of(&set, "own.md"), "fra");
    let bad = Engine::new(EngineOptions::new(tmp.path().join("c")));
    let opts = IngestOptions {
        language: Some("Klingonish".into()),
        ..IngestOptions::default()
    };
    let err = bad
        .ingest(std::slice::from_ref(&docs), &opts, &NoProgress)
        .unwrap_err();
    assert!(err.to_string().contains("unknown language"), "{err}");
    assert!(!tmp.path().join("c").join("MANIFEST.json").exists());
}

/// Hybrid retrieval is BM25's alone, with no query vector, for a query in a language
/// the model's card does not list (all-MiniLM-L6-v2's says `language: en`), and the
/// context's notes say so: a Hindi question known by its script, a German one by its
/// words, a short Latin-script one by the language of its best BM25 hit's document. An
/// English question is fused as before; BM25 and dense mode are untouched.
#[test]
fn a_query_in_a_language_the_model_does_not_read_leans_on_bm25() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("en.md"),
        "The lighthouse keeper climbed the stairs every evening to light the lamp. \
         Ships passing the rocks at night steered by its beam.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("de.md"),
        "Der Leuchtturmwärter stieg jeden Abend die Treppe hinauf, um die Lampe \
         anzuzünden. Schiffe, die nachts an den Felsen vorbeifuhren, steuerten nach \
         ihrem Licht.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("hi.md"),
        "प्रकाशस्तंभ का रखवाला हर शाम दीपक जलाने के लिए सीढ़ियाँ चढ़ता था। रात में \
         चट्टानों के पास से गुजरने वाले जहाज उसकी रोशनी से रास्ता पाते थे।\n",
    )
    .unwrap();
    let engine = Engine::new(EngineOptions::new(tmp.path().join("index")));
    engine
        .ingest(
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    let run = |text: &str, mode: Mode| -> (bool, Vec<String>) {
        let mut req = QueryRequest::new(text);
        req.mode = mode;
        let retrieved = engine.retrieve(&req).unwrap();
        let foreign = retrieved.bm25_alone;
        assert_eq!(
            retrieved.query_vector.is_none(),
            mode == Mode::Bm25 || foreign,
            "{text} {mode:?}"
        );
        let ctx = engine
            .assemble(&req.text, &retrieved, &req.strategy, req.budget)
            .unwrap();
        (retrieved.bm25_alone, ctx.notes)
    };
    let noted = |notes: &[String]| notes.iter().any(|n| n.contains("hybrid: BM25 alone"));

    let (alone, notes) = run(
        "Who climbed the stairs to light the lamp every evening?",
        Mode::Hybrid,
    );
    assert!(!alone);
    assert!(!noted(&notes), "{notes:#?}");
    for question in [
        "रखवाला हर शाम सीढ़ियाँ क्यों चढ़ता था?",
        "Warum stieg der Leuchtturmwärter jeden Abend die Treppe hinauf?",
        // Two words may not tell their language: then the best BM25 hit's document does.
        "Leuchtturmwärter Treppe",
    ] {
        let (alone, notes) = run(question, Mode::Hybrid);
        assert!(alone, "{question}");
        assert!(noted(&notes), "{question}: {notes:#?}");
        assert!(notes[0].contains("(en)"), "{notes:#?}");
        for mode in [Mode::Bm25, Mode::Dense] {
            assert!(!run(question, mode).0, "{question} {mode:?}");
        }
    }
}
