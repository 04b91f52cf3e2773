//! BM25 search time by way of scoring: tantivy's block-max WAND (`Pruned`) against
//! every posting scored (`Exhaustive`), and the choice `Auto` makes, per query and in
//! all, on an index's own BM25 files.
//!
//! `cargo run --release -p excerpt-index --example bm25_scoring -- INDEX_DIR QUERIES.jsonl [K] [ROUNDS] [--scope FORMAT]`
//!
//! With `--scope FORMAT`, each query is scoped to one document, whose id is FORMAT
//! with `{doc}` replaced by the query's `doc` field (`copy0/{doc}.txt`, say): the
//! search of a question about one filing.
//!
//! QUERIES.jsonl holds one `{"query": ...}` per line (an eval set's queries file will
//! do). K is the number of chunks asked for (default 116: the first stage's 100
//! candidates and the 16 fetched beyond them); each query runs once per way of
//! scoring per round, the ways interleaved, and its fastest run is kept. Prints a line
//! per query (terms, postings, milliseconds each way) and the p50, p90 and largest
//! times, one core, nothing else running.

use std::path::PathBuf;
use std::time::Instant;

use excerpt_index::bm25::{self, Bm25Reader, Scoring, EXHAUSTIVE_POSTINGS_PER_TERM};

fn pct(xs: &[f64], p: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let scope = match args.iter().position(|a| a == "--scope") {
        Some(at) if at + 1 < args.len() => {
            let format = args.remove(at + 1);
            args.remove(at);
            Some(format)
        }
        Some(_) => {
            eprintln!("--scope needs a FORMAT");
            std::process::exit(2);
        }
        None => None,
    };
    if args.len() < 2 {
        eprintln!("usage: bm25_scoring INDEX_DIR QUERIES.jsonl [K] [ROUNDS] [--scope FORMAT]");
        std::process::exit(2);
    }
    let dir = PathBuf::from(&args[0]).join("bm25");
    let k: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(116);
    let rounds: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(3);
    // Each query and the document it is scoped to (with `--scope`).
    let queries: Vec<(String, Option<String>)> = std::fs::read_to_string(&args[1])
        .expect("reading the queries")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let query = v["query"].as_str().expect("a \"query\" string").to_string();
            let doc = scope.as_ref().map(|format| {
                let doc = v["doc"].as_str().expect("a \"doc\" string to scope to");
                format.replace("{doc}", doc)
            });
            (query, doc)
        })
        .collect();
    let (index, fields) = bm25::open_existing(&dir)
        .expect("opening the BM25 index")
        .expect("no BM25 index there");
    let reader = Bm25Reader::new(index, fields).expect("reading the BM25 index");
    let ways = [Scoring::Pruned, Scoring::Exhaustive, Scoring::Auto];
    let mut best = vec![[f64::INFINITY; 3]; queries.len()];
    let search = |(q, doc): &(String, Option<String>), w: Scoring| {
        let allowed = doc.as_ref().map(|d| vec![d.as_str()]);
        let hits = reader
            .search_with(q, k, allowed.as_deref(), w)
            .expect("search");
        if doc.is_some() && hits.is_empty() {
            panic!("no chunk of {doc:?} matches: is the --scope format right?");
        }
    };
    for q in &queries {
        for w in ways {
            search(q, w); // warm-up
        }
    }
    for _ in 0..rounds {
        for (i, q) in queries.iter().enumerate() {
            for (j, w) in ways.iter().enumerate() {
                let t = Instant::now();
                search(q, *w);
                best[i][j] = best[i][j].min(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    println!(
        "{} chunks, {} queries, k {k}, fastest of {rounds} rounds; Auto scores exhaustively up to {EXHAUSTIVE_POSTINGS_PER_TERM} postings a term",
        reader.num_chunks(),
        queries.len()
    );
    println!("| terms | postings | pruned ms | exhaustive ms | auto ms |");
    println!("|---:|---:|---:|---:|---:|");
    for ((q, _), b) in queries.iter().zip(&best) {
        let terms = reader.terms(q).expect("terms");
        let postings = reader.postings(&terms).expect("postings");
        println!(
            "| {} | {postings} | {:.2} | {:.2} | {:.2} |",
            terms.len(),
            b[0],
            b[1],
            b[2]
        );
    }
    for (j, name) in ["pruned", "exhaustive", "auto"].iter().enumerate() {
        let xs: Vec<f64> = best.iter().map(|b| b[j]).collect();
        println!(
            "{name}: p50 {:.2} ms, p90 {:.2} ms, largest {:.2} ms",
            pct(&xs, 0.5),
            pct(&xs, 0.9),
            pct(&xs, 1.0)
        );
    }
}
