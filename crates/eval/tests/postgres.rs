//! `run_eval` on a PostgreSQL index (a real PostgreSQL 18 + pgvector from
//! `scripts/postgres.sh`, a database of its own) against the same run on an index
//! directory, with the real local model: dense retrieval (no lexical differences between
//! BM25 and full text), so each question gets the same pieces and the same scores.
//! Skipped with a message when PostgreSQL cannot start, unless
//! `EXCERPT_REQUIRE_POSTGRES=1`.

mod common;

use std::path::Path;

use common::fixtures::{corpus, queries};
use excerpt::{ChunkerConfig, Engine, EngineOptions, Mode, NoProgress};
use excerpt_eval::format::{read_results, write_jsonl};
use excerpt_eval::{run_eval, EvalError, EvalOptions, EvalReport};

fn engine(index: impl Into<std::path::PathBuf>) -> Engine {
    let mut eo = EngineOptions::new(index);
    eo.chunker = Some(ChunkerConfig::Tokens { max_tokens: 64 });
    Engine::new(eo)
}

fn options(data: &Path, out: &str) -> EvalOptions {
    let mut opts = EvalOptions::new(
        data.join("corpus.jsonl"),
        data.join("queries.jsonl"),
        data.join(out),
    );
    opts.strategies = vec!["topk".into(), "adjacent".into()];
    opts.budgets = vec![100, 400];
    opts.mode = Mode::Dense;
    opts.quiet = true;
    opts
}

/// One results line: the question and its pieces as (document, start, end).
type Line = (String, Vec<(String, i64, i64)>);

/// Per results file, every line.
fn pieces(out: &Path, report: &EvalReport) -> Vec<(String, Vec<Line>)> {
    report
        .results
        .iter()
        .map(|r| {
            let lines = read_results(&out.join(&r.results_file)).unwrap();
            (
                r.results_file.clone(),
                lines
                    .into_iter()
                    .map(|l| {
                        (
                            l.query_id,
                            l.pieces
                                .into_iter()
                                .map(|p| (p.doc_id, p.start, p.end))
                                .collect(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn eval_on_postgres_matches_the_directory_index() {
    let Some(url) = excerpt_testkit::postgres::database("eval") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let docs = corpus();
    write_jsonl(&data.join("corpus.jsonl"), &docs).unwrap();
    write_jsonl(&data.join("queries.jsonl"), &queries(&docs)).unwrap();

    let on_dir = options(data, "out-dir");
    let dir_report = run_eval(&engine(data.join("index")), &on_dir, &NoProgress).unwrap();
    let on_pg = options(data, "out-pg");
    let pg_engine = engine(&url);
    let pg_report = run_eval(&pg_engine, &on_pg, &NoProgress).unwrap();

    assert!(pg_report.failures.is_empty(), "{:?}", pg_report.failures);
    assert_eq!(pg_report.run.documents, 4);
    assert_eq!(pg_report.run.ingested, 4);
    assert_eq!(pg_report.run.model_id, dir_report.run.model_id);
    assert_eq!(pg_report.run.chunker, "tokens:64");
    // The report names the database without its password.
    assert!(
        pg_report.run.index.starts_with("postgres://")
            && !pg_report.run.index.contains(":excerpt@"),
        "{}",
        pg_report.run.index
    );
    assert_eq!(
        pieces(&data.join("out-pg"), &pg_report),
        pieces(&data.join("out-dir"), &dir_report)
    );
    assert_eq!(pg_report.results.len(), dir_report.results.len());
    for (p, d) in pg_report.results.iter().zip(&dir_report.results) {
        assert_eq!((&p.strategy, p.budget), (&d.strategy, d.budget));
        let (pm, dm) = (&p.metrics, &d.metrics);
        assert_eq!(pm.queries, dm.queries);
        assert_eq!(pm.recall, dm.recall, "{} {}", p.strategy, p.budget);
        assert_eq!(pm.hit, dm.hit);
        assert_eq!(pm.precision, dm.precision);
        assert_eq!(pm.tokens, dm.tokens);
        // Coherence reads the chunk vectors back from the store.
        match (pm.intra_coherence, dm.intra_coherence) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-4, "{a} vs {b}"),
            (a, b) => assert_eq!(a, b),
        }
        match (pm.boundary_coherence, dm.boundary_coherence) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-4, "{a} vs {b}"),
            (a, b) => assert_eq!(a, b),
        }
    }
    assert!(pg_report.get("topk", 400).unwrap().metrics.hit > 0.0);

    // Again: incremental, nothing ingested, the same pieces.
    let again = run_eval(&pg_engine, &on_pg, &NoProgress).unwrap();
    assert_eq!(again.run.ingested, 0);
    assert_eq!(
        pieces(&data.join("out-pg"), &again),
        pieces(&data.join("out-dir"), &dir_report)
    );

    // A document the corpus does not have is refused, as on a directory.
    let stray = data.join("stray");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("stray.md"), "# Stray\n\nNot in the corpus.\n").unwrap();
    pg_engine
        .ingest(
            &[stray.join("stray.md")],
            &excerpt::IngestOptions::default(),
            &NoProgress,
        )
        .unwrap();
    match run_eval(&pg_engine, &on_pg, &NoProgress) {
        Err(e @ EvalError::ForeignDocuments { .. }) => {
            let msg = e.to_string();
            assert!(!msg.contains(":excerpt@"), "{msg}");
        }
        other => panic!("expected ForeignDocuments, got {other:?}"),
    }
}
