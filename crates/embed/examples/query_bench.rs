//! Latency of embedding real questions with the local model, one at a time, as a
//! server does: reads the `query` field of each line of a JSONL file, embeds them in
//! turn for a number of rounds, and prints p50 / p90 / p99 in ms over all, and by
//! length (words). With `--evict MB`, a buffer of that size is written between two
//! queries, so the weights come from memory as they do in a server whose other work
//! (BM25, assembly, other requests) has passed through the caches.
//!
//! With `--ab VAR=A,B`, each query is embedded twice in a row, once with the
//! environment variable `VAR` set to `A` and once to `B` (in alternating order), and the
//! per-query differences are summed up: a comparison that a noisy machine disturbs far
//! less than two runs one after the other (`--ab EXCERPT_QUERY_WEIGHTS=f16,int16`).
//!
//! `cargo run --release -p excerpt-embed --example query_bench -- QUERIES.jsonl [ROUNDS] [--evict MB] [--ab VAR=A,B]`

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
    let mut ab: Option<(String, [String; 2])> = None;
    let mut positional = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--evict" {
            evict_mb = it
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| fail(&"--evict needs a size in MB"));
        } else if a == "--ab" {
            let spec = it.next().map(String::as_str).unwrap_or_default();
            let parsed = spec.split_once('=').and_then(|(var, values)| {
                let (x, y) = values.split_once(',')?;
                Some((var.to_string(), [x.to_string(), y.to_string()]))
            });
            ab = Some(parsed.unwrap_or_else(|| fail(&"--ab needs VAR=A,B")));
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
    // With --ab: (A's time, B's time) per embedding.
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    let mut evict = |round: usize| {
        if !scratch.is_empty() {
            scratch
                .iter_mut()
                .for_each(|b| *b = b.wrapping_add(round as u8 + 1));
            std::hint::black_box(&scratch);
        }
    };
    let timed = |q: &str| {
        let t = Instant::now();
        embedder.embed_query(q).unwrap_or_else(|e| fail(&e));
        t.elapsed().as_secs_f64() * 1e3
    };
    for round in 0..rounds {
        for (i, q) in queries.iter().enumerate() {
            let words = q.split_whitespace().count();
            let Some((var, values)) = &ab else {
                evict(round);
                times.push((words, timed(q)));
                continue;
            };
            let mut pair = [0.0; 2];
            let first = (round + i) % 2;
            for side in [first, 1 - first] {
                std::env::set_var(var, &values[side]);
                evict(round);
                pair[side] = timed(q);
            }
            pairs.push((pair[0], pair[1]));
            times.push((words, pair[1]));
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
        "{} queries x {rounds} rounds, {} kernel ({} integer tile), {} threads, {evict_mb} MB written between queries",
        queries.len(),
        embedder.kernel(),
        embedder.integer_tile(),
        rayon::current_num_threads()
    );
    if let Some((var, [x, y])) = &ab {
        report(&format!("{var}={x}"), pairs.iter().map(|p| p.0).collect());
        report(&format!("{var}={y}"), pairs.iter().map(|p| p.1).collect());
        let mut d: Vec<f64> = pairs.iter().map(|p| p.1 - p.0).collect();
        d.sort_by(f64::total_cmp);
        let faster = d.iter().filter(|&&x| x < 0.0).count();
        println!(
            "{var}={y} minus {var}={x}, per query: median {:+.3} ms, mean {:+.3} ms; faster in {faster} of {}",
            d[d.len() / 2],
            d.iter().sum::<f64>() / d.len() as f64,
            d.len()
        );
        println!("by length, with {var}={y}:");
    }
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
