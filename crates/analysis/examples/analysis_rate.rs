//! What the lexical analysis costs per language, on a folder of sets laid out as
//! xquad-dev (`LANG/corpus.jsonl` with `text`, `LANG/queries.jsonl` with `query`): for
//! each language, documents analysed per second (the ingest's share: detection of each
//! document's language, then [`analyze`]) and the time of a query's analysis (the query
//! side: [`detect_query`], then [`analyze`] in the language found, English otherwise).
//! Best of five passes; one thread.
//!
//!     cargo run --release -p excerpt-analysis --example analysis_rate -- ../shared/data/xquad-dev

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use excerpt_analysis::{analyze, detect, detect_query, Language};

fn lines(path: &Path, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v[key].as_str().expect("a string field").to_string()
        })
        .collect()
}

/// The fastest of five passes of `f`, in seconds.
fn best_of_five(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: analysis_rate DIR (a folder of LANG/corpus.jsonl, LANG/queries.jsonl)");
    let mut langs: Vec<_> = std::fs::read_dir(&dir)
        .expect("a readable folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("corpus.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    langs.sort();
    println!("| language | detected | documents | MiB | ingest analysis MiB/s | terms | queries | query analysis µs (mean) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for lang in langs {
        let base = Path::new(&dir).join(&lang);
        let docs = lines(&base.join("corpus.jsonl"), "text");
        let queries = lines(&base.join("queries.jsonl"), "query");
        let bytes: usize = docs.iter().map(String::len).sum();
        let detected = detect(&docs[0]);
        let mut terms = 0;
        let ingest = best_of_five(|| {
            terms = docs
                .iter()
                .map(|d| black_box(analyze(d, detect(d))).len())
                .sum();
        });
        let query = best_of_five(|| {
            for q in &queries {
                let language = detect_query(q).unwrap_or(Language::ENGLISH);
                black_box(analyze(q, language));
            }
        });
        println!(
            "| {lang} | {} | {} | {:.2} | {:.1} | {terms} | {} | {:.0} |",
            detected.code(),
            docs.len(),
            bytes as f64 / (1 << 20) as f64,
            bytes as f64 / (1 << 20) as f64 / ingest,
            queries.len(),
            query / queries.len() as f64 * 1e6,
        );
    }
}
