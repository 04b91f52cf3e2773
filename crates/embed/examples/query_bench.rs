//! Latency of embedding real questions with the local model, one at a time, as a
//! server does: reads the `query` field of each line of a JSONL file, embeds them in
//! turn for a number of rounds, and prints p50 / p90 / p99 in ms over all, and by
//! length (words). With `--evict MB`, a buffer of that size is written between two
//! queries, so the weights come from memory as they do in a server whose other work
//! (BM25, assembly, other requests) has passed through the caches.
//!
//! `cargo run --release -p excerpt-embed --example query_bench -- QUERIES.jsonl [ROUNDS] [--evict MB]`

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use excerpt_embed::{resolve_model, Embedder, LocalEmbedder};

fn main() {
    let fail = |e: &dyn std::fmt::Display| -> ! {
        eprintln!("{e}");
        std::process::exit(1)
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut evict_mb = 0usize;
    let mut positional = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--evict" {
            evict_mb = it
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| fail(&"--evict needs a size in MB"));
        } else {
            positional.push(a.clone());
        }
    }
    let Some(path) = positional.first() else {
        fail(&"usage: query_bench QUERIES.jsonl [ROUNDS] [--evict MB]")
    };
    let rounds: usize = positional.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(&e));
    let queries: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| fail(&e));
            v["query"]
                .as_str()
                .unwrap_or_else(|| fail(&"a line without a \"query\" string"))
                .to_string()
        })
        .collect();
    if queries.is_empty() {
        fail(&"no queries");
    }
    let dir = resolve_model(None).unwrap_or_else(|e| fail(&e));
    let embedder = LocalEmbedder::load(&dir).unwrap_or_else(|e| fail(&e));
    let mut scratch = vec![0u8; evict_mb << 20];
    // Warm-up.
    for q in &queries {
        embedder.embed_query(q).unwrap_or_else(|e| fail(&e));
    }
    let mut times: Vec<(usize, f64)> = Vec::new();
    for round in 0..rounds {
        for q in &queries {
            if !scratch.is_empty() {
                scratch
                    .iter_mut()
                    .for_each(|b| *b = b.wrapping_add(round as u8 + 1));
                std::hint::black_box(&scratch);
            }
            let t = Instant::now();
            embedder.embed_query(q).unwrap_or_else(|e| fail(&e));
            times.push((
                q.split_whitespace().count(),
                t.elapsed().as_secs_f64() * 1e3,
            ));
        }
    }
    let report = |label: &str, mut v: Vec<f64>| {
        if v.is_empty() {
            return;
        }
        v.sort_by(f64::total_cmp);
        let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        println!(
            "{label:>14}: {:>4} embeddings, p50 {:.2} ms, p90 {:.2}, p99 {:.2}",
            v.len(),
            at(0.5),
            at(0.9),
            at(0.99)
        );
    };
    println!(
        "{} queries x {rounds} rounds, {} kernel, {} threads, {evict_mb} MB written between queries",
        queries.len(),
        embedder.kernel(),
        rayon::current_num_threads()
    );
    report("all", times.iter().map(|t| t.1).collect());
    for (lo, hi) in [(0, 15), (15, 30), (30, 60), (60, usize::MAX)] {
        let label = if hi == usize::MAX {
            format!("{lo}+ words")
        } else {
            format!("{lo}-{} words", hi - 1)
        };
        report(
            &label,
            times
                .iter()
                .filter(|t| t.0 >= lo && t.0 < hi)
                .map(|t| t.1)
                .collect(),
        );
    }
}
