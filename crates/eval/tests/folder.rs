//! `run_eval` over a folder of documents (a generated PDF and a Markdown file, through
//! the real engine, PDFium and the local model) with page-format queries: document ids
//! as `excerpt ingest` gives them, results with pages and both id keys, `text_recall`
//! and `page_hit` agreeing with `score_pdf.py`, incremental re-runs, and the inputs it
//! refuses.

mod common;

use std::path::Path;

use common::{score_pdf_with_python, score_pdf_with_python_limited};
use excerpt::{ChunkerConfig, Engine, EngineOptions, NoProgress};
use excerpt_eval::format::{read_results, write_jsonl};
use excerpt_eval::{run_eval, EvalError, EvalOptions, PageEvidence, PageQueryLine};
use excerpt_testkit::fixtures::{report_pdf, write_file};

const NOTES: &str = "# Keepers' notes\n\n\
    The relief keeper brings fresh bread, newspapers and letters from the mainland.\n\n\
    Gulls nest on the gallery rail every spring and must not be disturbed.\n";

fn query(id: &str, q: &str, doc: &str, page: i64, text: &str) -> PageQueryLine {
    PageQueryLine {
        id: id.into(),
        query: q.into(),
        doc: doc.into(),
        evidence: vec![PageEvidence {
            page,
            text: text.into(),
        }],
        answer: None,
    }
}

fn queries() -> Vec<PageQueryLine> {
    vec![
        query(
            "q-fog",
            "How often is the foghorn sounded in fog?",
            "report.pdf",
            2,
            "When visibility drops below two nautical miles the foghorn is\nsounded every \
             thirty seconds until the fog lifts completely.",
        ),
        query(
            "q-staff",
            "How long are the keepers' shifts?",
            "report.pdf",
            3,
            "Three keepers rotate through four-week shifts at the station",
        ),
        query(
            "q-bread",
            "What does the relief keeper bring?",
            "notes/keepers.md",
            1,
            "The relief keeper brings fresh bread, newspapers and letters from the mainland.",
        ),
    ]
}

/// The folder under `data/docs` (with an empty file the ingest skips), the queries, an
/// engine on `data/index` with small chunks, and options running `topk` and `section`
/// at 60 and 200 tokens into `data/out`.
fn setup(data: &Path) -> (Engine, EvalOptions) {
    let docs = data.join("docs");
    write_file(&docs, "report.pdf", report_pdf());
    write_file(&docs, "notes/keepers.md", NOTES);
    write_file(&docs, "empty.txt", "");
    write_jsonl(&data.join("queries.jsonl"), &queries()).unwrap();
    let mut eo = EngineOptions::new(data.join("index"));
    eo.chunker = Some(ChunkerConfig::Tokens { max_tokens: 64 });
    let mut opts = EvalOptions::new(docs, data.join("queries.jsonl"), data.join("out"));
    opts.strategies = vec!["section".into()];
    opts.budgets = vec![60, 200];
    opts.quiet = true;
    (Engine::new(eo), opts)
}

#[test]
fn folder_with_page_evidence_end_to_end() {
    let lib = excerpt_ingest::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (engine, opts) = setup(data);
    let out = data.join("out");

    let report = run_eval(&engine, &opts, &NoProgress).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.run.query_format, "pages");
    assert_eq!((report.run.queries, report.run.documents), (3, 2));
    assert_eq!(report.run.ingested, 2);
    assert_eq!(report.results.len(), 4);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| text_recall | page_hit |") && md.contains("| section | 200 |"),
        "{md}"
    );

    for r in &report.results {
        let path = out.join(&r.results_file);
        // Both id keys, pages on the PDF's pieces only, every piece from its query's
        // document.
        for raw in std::fs::read_to_string(&path).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(raw).unwrap();
            assert_eq!(v["id"], v["query_id"], "{raw}");
        }
        for l in read_results(&path).unwrap() {
            let q = queries().into_iter().find(|q| q.id == l.query_id).unwrap();
            assert!(!l.pieces.is_empty(), "{}: {}", r.results_file, l.query_id);
            for p in &l.pieces {
                assert_eq!(p.doc_id, q.doc);
                let pdf = p.doc_id == "report.pdf";
                assert_eq!(p.page_start.is_some(), pdf, "{p:?}");
                assert!(p.page_start <= p.page_end);
            }
        }
        // The native figures are the reference scorer's at budget x 4 characters.
        let py = score_pdf_with_python(&opts.queries, &path, Some(r.budget * 4));
        assert_eq!(py.exit_code, Some(0));
        let m = &r.metrics;
        for (k, v) in [("text_recall", m.text_recall), ("page_hit", m.page_hit)] {
            let v = v.unwrap_or_else(|| panic!("{} has no {k}", r.results_file));
            let p = py.json[k].as_f64().unwrap();
            assert!(
                (p - v).abs() <= 1e-3,
                "{} {k}: python {p}, report {v}",
                r.results_file
            );
        }
        assert_eq!(py.json["missing"], 0);
        // The first K = ceil(budget x 4 / 700) pieces only, and the share of tiny pieces
        // (the readability figures are taken on the extracted texts; tiny is the one
        // score_pdf.py also gives).
        let k = excerpt_eval::max_pieces(r.budget);
        let capped =
            score_pdf_with_python_limited(&opts.queries, &path, Some(r.budget * 4), Some(k));
        for (py, k, v) in [
            (&capped, "text_recall", m.capped_text_recall),
            (&capped, "page_hit", m.capped_page_hit),
            (&py, "tiny", m.tiny),
        ] {
            let v = v.unwrap_or_else(|| panic!("{} has no capped {k}", r.results_file));
            let p = py.json[k].as_f64().unwrap();
            assert!(
                (p - v).abs() <= 1e-3,
                "{} {k}: python {p}, report {v}",
                r.results_file
            );
        }
        assert!(m.whole.is_some() && m.in_order.is_some() && m.grouped.is_some());
        assert!(m.capped_recall.is_none() && m.recall_at_chars.is_none());
    }
    // Easy questions: at 200 tokens the fog and staffing pages are found (the Markdown
    // file has no pages, so at most two of three hit), and most evidence words are in.
    let topk = report.get("topk", 200).unwrap();
    assert!(
        (topk.metrics.page_hit.unwrap() - 2.0 / 3.0).abs() < 1e-3,
        "{:?}",
        topk.metrics
    );
    assert!(
        topk.metrics.text_recall.unwrap() > 0.5,
        "{:?}",
        topk.metrics
    );

    // Re-running is incremental.
    let again = run_eval(&engine, &opts, &NoProgress).unwrap();
    assert_eq!(again.run.ingested, 0);
    assert_eq!(
        again.get("topk", 200).unwrap().metrics.text_recall,
        topk.metrics.text_recall
    );

    // The index now holds documents outside a smaller folder: refused.
    let mut notes = opts.clone();
    notes.corpus = data.join("docs/notes");
    notes.queries = data.join("queries-notes.jsonl");
    notes.out = data.join("out-notes");
    let mut q = queries()[2].clone();
    q.doc = "keepers.md".into();
    write_jsonl(&notes.queries, &[q]).unwrap();
    match run_eval(&engine, &notes, &NoProgress) {
        Err(e @ EvalError::ForeignDocuments { count: 2, .. }) => {
            assert!(e.to_string().contains("report.pdf"), "{e}");
        }
        other => panic!("expected foreign documents, got {other:?}"),
    }
}

#[test]
fn folder_and_page_inputs_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (engine, mut opts) = setup(data);
    // The model is never loaded, the index never created, for any of these.
    let run = |opts: &EvalOptions| {
        run_eval(&engine, opts, &NoProgress)
            .unwrap_err()
            .to_string()
    };

    let mut qs = queries();
    qs[1].doc = "keepers.md".into();
    write_jsonl(&opts.queries, &qs).unwrap();
    let err = run(&opts);
    assert!(
        err.contains("\"q-staff\"") && err.contains("not a document of the corpus"),
        "{err}"
    );
    assert!(
        err.contains("notes/keepers.md"),
        "ids are relative paths: {err}"
    );

    let mut mixed = std::fs::read_to_string(&opts.queries).unwrap();
    mixed.push_str(
        r#"{"id":"s","query":"x?","evidence":[{"doc_id":"report.pdf","start":0,"end":4}]}"#,
    );
    std::fs::write(&opts.queries, mixed).unwrap();
    let err = run(&opts);
    assert!(
        err.contains("queries.jsonl:4:") && err.contains("one format"),
        "{err}"
    );

    write_jsonl(&opts.queries, &queries()).unwrap();
    write_file(
        &data.join("docs"),
        "more/corpus.jsonl",
        "{\"id\":\"a\",\"text\":\"x\"}\n",
    );
    let err = run(&opts);
    assert!(
        err.contains("corpus.jsonl") && err.contains("folder"),
        "{err}"
    );

    opts.corpus = data.join("nothing");
    std::fs::create_dir_all(&opts.corpus).unwrap();
    let err = run(&opts);
    assert!(err.contains("no documents"), "{err}");
    assert!(!data.join("index").exists());
}

#[test]
fn a_folder_whose_every_file_is_skipped_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (engine, mut opts) = setup(data);
    // Only a file the ingest skips (as it skips every PDF when PDFium is missing): the
    // error names the skip and its reason, not a missing index.
    opts.corpus = data.join("skipped");
    write_file(&opts.corpus, "empty.txt", "");
    write_jsonl(
        &opts.queries,
        &[query("q", "What is inside?", "empty.txt", 1, "nothing")],
    )
    .unwrap();
    let err = run_eval(&engine, &opts, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("skipped every file") && err.contains("empty.txt"),
        "{err}"
    );
    assert!(!err.contains("no index"), "{err}");
}
