//! Shared test helpers: runs the reference scorers (`tests/data/score_context.py` and
//! `tests/data/score_pdf.py`, standard-library Python) and compares their output with
//! the native metrics; the end-to-end fixtures live in [`fixtures`].

#![allow(dead_code)]

pub mod fixtures;

use std::path::{Path, PathBuf};
use std::process::Command;

use excerpt_eval::{CoverageSummary, PageSummary};

/// The copy of the reference scorer shipped with the tests.
pub fn scorer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/score_context.py")
}

/// Output of one scorer run.
#[derive(Debug)]
pub struct Scored {
    pub json: serde_json::Value,
    pub exit_code: Option<i32>,
}

/// Runs `python3 score_context.py` and parses the JSON line it prints. Fails the test
/// with a clear message when python3 is missing.
pub fn score_with_python(
    corpus: &Path,
    queries: &Path,
    results: &Path,
    budget: Option<usize>,
) -> Scored {
    score_with_python_limited(corpus, queries, results, budget, None)
}

/// [`score_with_python`] with `--max-pieces` when `max_pieces` is given.
pub fn score_with_python_limited(
    corpus: &Path,
    queries: &Path,
    results: &Path,
    budget: Option<usize>,
    max_pieces: Option<usize>,
) -> Scored {
    let mut cmd = Command::new("python3");
    cmd.arg(scorer())
        .arg("--corpus")
        .arg(corpus)
        .arg("--queries")
        .arg(queries)
        .arg("--results")
        .arg(results);
    if let Some(b) = budget {
        cmd.arg("--budget-chars").arg(b.to_string());
    }
    if let Some(k) = max_pieces {
        cmd.arg("--max-pieces").arg(k.to_string());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!(
            "could not run python3 ({e}): the agreement tests need python3 (standard library only) \
             on PATH to run the reference scorer tests/data/score_context.py"
        ),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "score_context.py printed no JSON ({e}); status {:?}\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Scored {
        json,
        exit_code: out.status.code(),
    }
}

/// Asserts every number the scorer prints equals the native one within 1e-3 (native
/// numbers rounded the way the scorer rounds).
pub fn assert_agrees(native: &CoverageSummary, py: &serde_json::Value, what: &str) {
    let n = native.rounded();
    let get = |k: &str| -> f64 {
        py.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{what}: scorer output has no number {k:?}: {py}"))
    };
    let pairs = [
        ("queries", n.queries as f64),
        ("missing", n.missing as f64),
        ("recall", n.recall),
        ("hit", n.hit),
        ("full", n.full),
        ("precision", n.precision),
        ("chars", n.chars),
        ("pieces", n.pieces),
        ("bad_text", n.bad_text as f64),
        ("piece_chars", n.piece_chars),
        ("whole", n.whole),
        ("tiny", n.tiny),
        ("in_order", n.in_order),
        ("grouped", n.grouped),
    ];
    for (k, v) in pairs {
        let p = get(k);
        assert!(
            (p - v).abs() <= 1e-3,
            "{what}: {k} differs: python {p}, native {v} (unrounded {native:?})\npython: {py}"
        );
    }
}

/// The copy of the page-format reference scorer shipped with the tests.
pub fn pdf_scorer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/score_pdf.py")
}

/// Runs `python3 score_pdf.py` on a page-format queries file and a results file and
/// parses the JSON line it prints. Fails the test with a clear message when python3 is
/// missing.
pub fn score_pdf_with_python(queries: &Path, results: &Path, budget: Option<usize>) -> Scored {
    score_pdf_with_python_limited(queries, results, budget, None)
}

/// [`score_pdf_with_python`] with `--max-pieces` when `max_pieces` is given.
pub fn score_pdf_with_python_limited(
    queries: &Path,
    results: &Path,
    budget: Option<usize>,
    max_pieces: Option<usize>,
) -> Scored {
    let mut cmd = Command::new("python3");
    cmd.arg(pdf_scorer())
        .arg("--queries")
        .arg(queries)
        .arg("--results")
        .arg(results);
    if let Some(b) = budget {
        cmd.arg("--budget-chars").arg(b.to_string());
    }
    if let Some(k) = max_pieces {
        cmd.arg("--max-pieces").arg(k.to_string());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!(
            "could not run python3 ({e}): the agreement tests need python3 (standard library only) \
             on PATH to run the reference scorer tests/data/score_pdf.py"
        ),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "score_pdf.py printed no JSON ({e}); status {:?}\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Scored {
        json,
        exit_code: out.status.code(),
    }
}

/// Asserts every number `score_pdf.py` prints equals the native one within 1e-3 (native
/// numbers rounded the way the scorer rounds).
pub fn assert_pages_agree(native: &PageSummary, py: &serde_json::Value, what: &str) {
    let n = native.rounded();
    let pairs = [
        ("queries", n.queries as f64),
        ("missing", n.missing as f64),
        ("text_recall", n.text_recall),
        ("page_hit", n.page_hit),
        ("chars", n.chars),
        ("pieces", n.pieces),
        ("tiny", n.tiny),
    ];
    for (k, v) in pairs {
        let p = py
            .get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{what}: score_pdf.py output has no number {k:?}: {py}"));
        assert!(
            (p - v).abs() <= 1e-3,
            "{what}: {k} differs: python {p}, native {v} (unrounded {native:?})\npython: {py}"
        );
    }
}
