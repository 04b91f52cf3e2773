//! The engine on the PostgreSQL index: the real model, a real PostgreSQL 18 + pgvector
//! (`scripts/postgres.sh`, through `excerpt_testkit::postgres`) and, for comparison, a
//! real index directory holding the same documents.

use excerpt::{
    Engine, EngineOptions, ErrorKind, IngestOptions, Mode, NoProgress, QueryRequest, StrategyConfig,
};
use excerpt_testkit::fixtures::write_file;

fn write_docs(dir: &std::path::Path) {
    write_file(
        dir,
        "owls.md",
        "# Owls\n\nOwls hunt at night. Their eyes are large and their hearing is sharp.\n\n## Diet\n\nOwls eat mice, voles and insects. A barn owl can eat a thousand mice a year.\n\n## Nests\n\nBarn owls nest in old barns, hollow trees and church towers.\n",
    );
    write_file(
        dir,
        "zebras.md",
        "# Zebras\n\nZebras graze on the savanna during the day. Their stripes confuse biting flies.\n\nA zebra foal can stand within an hour of birth.\n",
    );
    write_file(
        dir,
        "notes/bees.md",
        "# Bees\n\nHoney bees dance to tell the hive where flowers are. A colony can hold fifty thousand bees.\n",
    );
}

fn options(index: &str) -> EngineOptions {
    let mut o = EngineOptions::new(index);
    o.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 24 });
    o
}

#[test]
fn every_strategy_runs_on_postgres_and_dense_matches_the_directory_index() {
    let Some(url) = excerpt_testkit::postgres::database("engine") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write_docs(&docs);
    let dir_index = tmp.path().join("idx");
    let local = Engine::new(options(dir_index.to_str().unwrap()));
    let pg = Engine::new(options(&url));
    assert_eq!(pg.index_shown(), excerpt::redact_url(&url));

    // An empty database is no index yet (not a model mismatch).
    let err = pg.query(&QueryRequest::new("owls")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.is_no_index(), "{err}");
    assert!(err.to_string().contains("ingest documents first"), "{err}");

    let paths = [docs.clone()];
    let a = local
        .ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap();
    let b = pg
        .ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!((b.added, b.documents), (3, 3));
    assert_eq!(a.chunks_embedded, b.chunks_embedded);

    // Dense search on a handful of chunks: HNSW finds the exact neighbours, so top-k
    // contexts are the same pieces.
    for text in [
        "what do owls eat?",
        "zebra foals",
        "how do bees communicate",
    ] {
        let mut req = QueryRequest::new(text);
        req.mode = Mode::Dense;
        req.strategy = "topk".parse::<StrategyConfig>().unwrap();
        let x = local.query(&req).unwrap();
        let y = pg.query(&req).unwrap();
        let spans = |c: &excerpt::Context| {
            c.pieces
                .iter()
                .map(|p| (p.doc_id.clone(), p.start, p.end, p.text.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans(&x), spans(&y), "{text}");
    }

    // Every strategy runs on PostgreSQL and returns exact slices of the documents.
    for strategy in ["auto", "topk", "adjacent", "window", "section", "rse"] {
        let mut req = QueryRequest::new("what do barn owls eat?");
        req.strategy = strategy.parse::<StrategyConfig>().unwrap();
        let ctx = pg.query(&req).unwrap();
        assert!(!ctx.pieces.is_empty(), "{strategy}");
        let owls = std::fs::read_to_string(docs.join("owls.md")).unwrap();
        let p = ctx.pieces.iter().find(|p| p.doc_id == "owls.md").unwrap();
        let slice: String = owls.chars().skip(p.start).take(p.end - p.start).collect();
        assert_eq!(slice, p.text, "{strategy}");
    }

    // Filters reach the store.
    let mut req = QueryRequest::new("animals");
    req.filter.path_prefixes = vec!["notes/".into()];
    let ctx = pg.query(&req).unwrap();
    assert!(ctx.pieces.iter().all(|p| p.doc_id == "notes/bees.md"));
    req.filter.doc_ids = vec!["missing.md".into()];
    let err = pg.query(&req).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);

    // Unchanged documents cost nothing; a changed one reuses its unchanged chunks.
    let again = pg
        .ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!((again.unchanged, again.added, again.updated), (3, 0, 0));
    write_file(
        &docs,
        "zebras.md",
        "# Zebras\n\nZebras graze on the savanna during the day. Their stripes confuse biting flies.\n\nA zebra foal can walk within an hour of birth.\n",
    );
    let changed = pg
        .ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(changed.updated, 1);
    assert!(changed.chunks_reused >= 1, "{changed:?}");

    assert_eq!(pg.remove(&["zebras.md".into()]).unwrap(), ["zebras.md"]);
    let ctx = pg.query(&QueryRequest::new("zebra foal")).unwrap();
    assert!(ctx.pieces.iter().all(|p| p.doc_id != "zebras.md"));

    // Another chunker is refused, as by the embedded index.
    let mut other = options(&url);
    other.chunker = Some(excerpt::ChunkerConfig::Tokens { max_tokens: 64 });
    let err = Engine::new(other)
        .ingest(&paths, &IngestOptions::default(), &NoProgress)
        .unwrap_err();
    assert!(err.to_string().contains("chunker"), "{err}");
}

/// A PostgreSQL index created with late chunking records it in its config row, as an
/// index directory does: a later ingest that does not ask pools sentence vectors too.
#[test]
fn late_chunking_is_recorded_by_a_postgres_index() {
    let Some(url) = excerpt_testkit::postgres::database("late") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write_docs(&docs);
    let more = tmp.path().join("more");
    write_file(
        &more,
        "ferns.txt",
        "Ferns want shade. They like damp soil.\n",
    );
    let pg = Engine::new(options(&url));
    let late = IngestOptions {
        sentence_vectors: true,
        late_chunking: true,
        ..IngestOptions::default()
    };
    pg.ingest(&[docs], &late, &NoProgress).unwrap();
    let report = pg
        .ingest(&[more], &IngestOptions::default(), &NoProgress)
        .unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.sentences_embedded, 2, "{report:?}");
    let stats = pg.stats().unwrap();
    assert_eq!(stats.sentence_vector_documents, 4);
    // A second engine reads the recorded choice from the database.
    let again = Engine::new(options(&url));
    let report = again
        .ingest_documents(
            excerpt::load_str(excerpt::DocFormat::Text, "x.txt", "One line. Two lines.")
                .unwrap()
                .documents,
            &IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(report.sentences_embedded, 2, "{report:?}");
}
