//! `run_eval` end to end on a tiny corpus with the real engine and the real local model
//! (all-MiniLM-L6-v2 at the default location, installed by `scripts/setup.sh`): the
//! files it writes, the reference scorer accepting every results file and agreeing with
//! `report.json`, incremental re-runs, and an index holding other documents.

mod common;

use std::path::Path;

use common::fixtures::{corpus, queries};
use common::{score_with_python, score_with_python_limited};
use excerpt::{ChunkerConfig, Engine, EngineOptions, NoProgress};
use excerpt_eval::format::{read_results, write_jsonl};
use excerpt_eval::{run_eval, CorpusDoc, EvalError, EvalOptions, EvalReport, Evidence, QueryLine};

fn check_against_scorer(dir: &Path, opts: &EvalOptions, report: &EvalReport) {
    for r in &report.results {
        let path = dir.join(&r.results_file);
        let lines = read_results(&path).unwrap();
        assert_eq!(lines.len(), 3, "{}", r.results_file);
        assert!(lines.iter().all(|l| l.strategy == r.strategy));
        let py = score_with_python(&opts.corpus, &opts.queries, &path, None);
        assert_eq!(py.exit_code, Some(0), "{}: {}", r.results_file, py.json);
        assert_eq!(py.json["bad_text"], 0, "{}", r.results_file);
        let m = &r.metrics;
        for (k, v) in [
            ("queries", m.queries as f64),
            ("missing", m.missing as f64),
            ("recall", m.recall),
            ("hit", m.hit),
            ("full", m.full),
            ("precision", m.precision),
            ("chars", m.chars),
            ("pieces", m.pieces),
            ("bad_text", m.bad_text as f64),
        ] {
            let p = py.json[k].as_f64().unwrap();
            assert!(
                (p - v).abs() <= 1e-3,
                "{} {k}: python {p}, report {v}",
                r.results_file
            );
        }
        // The readability figures and the recall at budget × 4 characters, and the recall
        // of the first K = ceil(budget × 4 / 700) pieces of those.
        let chars = Some(r.budget * 4);
        let k = excerpt_eval::max_pieces(r.budget);
        assert_eq!(m.max_pieces, Some(k));
        let at = score_with_python_limited(&opts.corpus, &opts.queries, &path, chars, None);
        let capped = score_with_python_limited(&opts.corpus, &opts.queries, &path, chars, Some(k));
        for (py, k, v) in [
            (&at, "recall", m.recall_at_chars),
            (&capped, "recall", m.capped_recall),
            (&at, "piece_chars", m.piece_chars),
            (&at, "whole", m.whole),
            (&at, "tiny", m.tiny),
            (&at, "in_order", m.in_order),
            (&at, "grouped", m.grouped),
        ] {
            let p = py.json[k].as_f64().unwrap();
            let v = v.unwrap_or_else(|| panic!("{} {k}: not in the report", r.results_file));
            assert!(
                (p - v).abs() <= 1e-3,
                "{} {k}: python {p}, report {v}",
                r.results_file
            );
        }
    }
}

/// The fixture corpus and queries written under `data`, an engine on `data/index` with
/// small chunks (so `adjacent` returns pieces of several chunks), and options running
/// `topk` and `adjacent` at 400 and 100 tokens into `data/out`.
fn setup(data: &Path) -> (Vec<CorpusDoc>, Vec<QueryLine>, Engine, EvalOptions) {
    let corpus = corpus();
    let queries = queries(&corpus);
    write_jsonl(&data.join("corpus.jsonl"), &corpus).unwrap();
    write_jsonl(&data.join("queries.jsonl"), &queries).unwrap();
    let mut eo = EngineOptions::new(data.join("index"));
    eo.chunker = Some(ChunkerConfig::Tokens { max_tokens: 64 });
    let engine = Engine::new(eo);
    let mut opts = EvalOptions::new(
        data.join("corpus.jsonl"),
        data.join("queries.jsonl"),
        data.join("out"),
    );
    opts.strategies = vec!["adjacent".into()];
    opts.budgets = vec![400, 100];
    opts.quiet = true;
    (corpus, queries, engine, opts)
}

#[test]
fn run_eval_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (corpus, queries, engine, opts) = setup(data);
    let out = data.join("out");

    let report = run_eval(&engine, &opts, &NoProgress).unwrap();
    assert_eq!(report.run.queries, 3);
    assert_eq!(report.run.documents, 4);
    assert_eq!(report.run.ingested, 4);
    assert_eq!(report.run.strategies, ["topk", "adjacent"]);
    assert_eq!(report.run.budgets, [100, 400]);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.results.len(), 4);
    for f in [
        "results-topk-100.jsonl",
        "results-topk-400.jsonl",
        "results-adjacent-100.jsonl",
        "results-adjacent-400.jsonl",
        "report.json",
        "report.md",
        "recall-vs-budget.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // The written report is the returned one.
    assert_eq!(
        EvalReport::read_json(&out.join("report.json")).unwrap(),
        report
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| topk | 100 |") && md.contains("| adjacent | 400 |"),
        "{md}"
    );
    let svg = std::fs::read_to_string(out.join("recall-vs-budget.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("adjacent"));

    check_against_scorer(&out, &opts, &report);
    // Three easy questions: the engine finds the evidence at 400 tokens.
    let topk400 = report.get("topk", 400).unwrap();
    assert!(topk400.metrics.hit >= 0.66, "{:?}", topk400.metrics);
    assert!(topk400.metrics.tokens > 0.0 && topk400.metrics.tokens <= 400.0);
    assert!(topk400.metrics.p50_ms > 0.0 && topk400.metrics.p95_ms >= topk400.metrics.p50_ms);
    assert!(report
        .results
        .iter()
        .all(|r| r.metrics.tokens <= r.budget as f64));
    assert_eq!(report.run.chunker, "tokens:64");
    let adjacent400 = report.get("adjacent", 400).unwrap();
    let intra = adjacent400
        .metrics
        .intra_coherence
        .expect("multi-chunk pieces");
    assert!(intra > 0.0 && intra <= 1.0 + 1e-6, "{intra}");
    for r in &report.results {
        if let Some(b) = r.metrics.boundary_coherence {
            assert!((0.0..=1.0).contains(&b));
        }
    }
    // The scoped query only ever returns its document.
    for r in &report.results {
        for l in read_results(&out.join(&r.results_file)).unwrap() {
            if l.query_id == "q-railway" {
                assert!(l.pieces.iter().all(|p| p.doc_id == "history"));
            }
        }
    }

    // Re-running is incremental: nothing new is ingested, the numbers do not change.
    let again = run_eval(&engine, &opts, &NoProgress).unwrap();
    assert_eq!(again.run.ingested, 0);
    for (a, b) in report.results.iter().zip(&again.results) {
        assert_eq!(
            (a.metrics.recall, a.metrics.chars),
            (b.metrics.recall, b.metrics.chars)
        );
    }

    // A query that cannot be run (its scope names no indexed document) is reported and
    // counts as missing; the others still run.
    let mut with_bad = queries.clone();
    with_bad.push(QueryLine {
        id: "q-bad-scope".into(),
        query: "Anything?".into(),
        answer: None,
        evidence: vec![Evidence {
            doc_id: "cafe".into(),
            start: 0,
            end: 5,
        }],
        scope: Some(vec!["no-such-doc".into()]),
    });
    write_jsonl(&data.join("queries-bad.jsonl"), &with_bad).unwrap();
    let mut bad_opts = opts.clone();
    bad_opts.queries = data.join("queries-bad.jsonl");
    bad_opts.out = data.join("out-bad");
    let bad = run_eval(&engine, &bad_opts, &NoProgress).unwrap();
    assert_eq!(bad.failures.len(), 1, "{:?}", bad.failures);
    assert_eq!(bad.failures[0].query_id, "q-bad-scope");
    assert!(bad.failures[0].strategy.is_none());
    for r in &bad.results {
        assert_eq!((r.metrics.queries, r.metrics.missing), (4, 1));
        let py = score_with_python(
            &bad_opts.corpus,
            &bad_opts.queries,
            &bad_opts.out.join(&r.results_file),
            None,
        );
        assert_eq!(py.json["missing"], 1);
        assert!((py.json["recall"].as_f64().unwrap() - r.metrics.recall).abs() <= 1e-3);
    }
    assert!(std::fs::read_to_string(bad_opts.out.join("report.md"))
        .unwrap()
        .contains("q-bad-scope"));

    // An index holding documents outside the corpus is refused.
    write_jsonl(&data.join("smaller.jsonl"), &corpus[..2]).unwrap();
    let mut smaller = opts.clone();
    smaller.corpus = data.join("smaller.jsonl");
    smaller.out = data.join("out2");
    match run_eval(&engine, &smaller, &NoProgress) {
        Err(e @ EvalError::ForeignDocuments { count: 2, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("not in the corpus") && !msg.contains("--"),
                "{msg}"
            );
            assert_eq!(e.kind(), excerpt::ErrorKind::Conflict);
        }
        other => panic!("expected foreign documents, got {other:?}"),
    }
}

#[test]
fn bad_inputs_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    std::fs::write(
        data.join("corpus.jsonl"),
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n",
    )
    .unwrap();
    std::fs::write(
        data.join("queries.jsonl"),
        "{\"id\":\"q\",\"query\":\"x\",\"evidence\":[]}\nnot json\n",
    )
    .unwrap();
    // The model is never loaded for these.
    let engine = Engine::new(EngineOptions::new(data.join("index")));
    let mut opts = EvalOptions::new(
        data.join("corpus.jsonl"),
        data.join("queries.jsonl"),
        data.join("out"),
    );
    opts.quiet = true;
    let err = run_eval(&engine, &opts, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("appears twice"), "{err}");
    std::fs::write(data.join("corpus.jsonl"), "{\"id\":\"a\",\"text\":\"x\"}\n").unwrap();
    let err = run_eval(&engine, &opts, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("queries.jsonl:2:"), "{err}");
    opts.strategies = vec!["bogus".into()];
    let err = run_eval(&engine, &opts, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus"), "{err}");
    assert!(!data.join("index").exists());
}

#[test]
fn export_agrees_with_the_results_files_and_the_scorer() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (corpus, queries, engine, mut opts) = setup(data);
    let out = data.join("out");
    opts.export = true;
    opts.html = Some(data.join("report.html"));
    let report = run_eval(&engine, &opts, &NoProgress).unwrap();

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("export.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3 * 2 * 2, "queries x strategies x budgets");
    let texts: std::collections::HashMap<&str, Vec<char>> = corpus
        .iter()
        .map(|d| (d.id.as_str(), d.text.chars().collect()))
        .collect();
    for l in &lines {
        for p in l["pieces"].as_array().unwrap() {
            let t = &texts[p["doc_id"].as_str().unwrap()];
            let (a, b) = (
                p["start"].as_u64().unwrap() as usize,
                p["end"].as_u64().unwrap() as usize,
            );
            assert_eq!(
                p["text"].as_str().unwrap(),
                t[a..b].iter().collect::<String>()
            );
        }
    }
    // Per strategy and budget, the mean of the exported recalls is the report's recall
    // (whole contexts) and the reference scorer's recall at budget x 4 characters.
    for r in &report.results {
        let mine: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|l| l["strategy"] == r.strategy.as_str() && l["budget"] == r.budget)
            .collect();
        assert_eq!(mine.len(), 3);
        let mean = |k: &str| mine.iter().map(|l| l[k].as_f64().unwrap()).sum::<f64>() / 3.0;
        assert!(
            (mean("recall") - r.metrics.recall).abs() <= 1e-3,
            "{}",
            r.strategy
        );
        let py = score_with_python(
            &opts.corpus,
            &opts.queries,
            &out.join(&r.results_file),
            Some(r.budget * 4),
        );
        let at_chars = py.json["recall"].as_f64().unwrap();
        assert!(
            (mean("recall_at_chars") - at_chars).abs() <= 1e-3,
            "{} {}: export {} scorer {at_chars}",
            r.strategy,
            r.budget,
            mean("recall_at_chars")
        );
    }
    let md = std::fs::read_to_string(out.join("export.md")).unwrap();
    for q in &queries {
        assert!(md.contains(&format!("## {}\n", q.id)), "{}", q.id);
    }
    assert!(md.contains("| adjacent | 400 |"));

    // The HTML report shows the same contexts: every piece that touches the evidence in
    // the export is highlighted there, and no other.
    let html = std::fs::read_to_string(data.join("report.html")).unwrap();
    for q in &queries {
        let id = excerpt_eval::escape_html(&q.id);
        assert!(html.contains(&format!("<h3>{id}</h3>")), "{}", q.id);
    }
    let touching: Vec<&serde_json::Value> = lines
        .iter()
        .flat_map(|l| l["pieces"].as_array().unwrap())
        .filter(|p| p["evidence_chars"].as_i64().unwrap() > 0)
        .collect();
    assert!(!touching.is_empty());
    assert_eq!(
        html.matches("<div class=\"piece ev\">").count(),
        touching.len()
    );
    for p in touching {
        let meta = format!(
            "<div class=\"piece ev\"><div class=\"meta\"><code>{}</code> {}..{}</div>",
            excerpt_eval::escape_html(p["doc_id"].as_str().unwrap()),
            p["start"],
            p["end"]
        );
        assert!(html.contains(&meta), "{meta}");
    }
}
