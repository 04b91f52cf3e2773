//! Embedding throughput of our own AVX2 kernel against the forced `gemm` path (the
//! path of CPUs without AVX2 + FMA), in one run: both embedders are loaded from the
//! same model, then embed the same ~250-token passages in alternating rounds, so
//! both see the same machine load. Prints passages/s per round, the medians and
//! their ratio.
//!
//! `cargo run --release -p excerpt-embed --example kernel_bench -- [N] [ROUNDS] [BATCH]`
//! (defaults 128 passages, 5 rounds, batch 32).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(dead_code)]
mod bench_common;

use std::time::Instant;

use excerpt_embed::{resolve_model, Embedder, KernelChoice, LocalEmbedder};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, rounds, batch) = (arg(128), arg(5), arg(32));
    let fail = |e: &dyn std::fmt::Display| -> ! {
        eprintln!("{e}");
        std::process::exit(1)
    };
    let dir = resolve_model(None).unwrap_or_else(|e| fail(&e));
    let load = |choice| {
        LocalEmbedder::load_with_kernel(&dir, choice)
            .map(|e| e.with_batch_size(batch))
            .unwrap_or_else(|e| fail(&e))
    };
    let embedders = [load(KernelChoice::Avx2), load(KernelChoice::Gemm)];
    let texts = bench_common::passages(embedders[0].tokens(), n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "{} passages, batch {batch}, {rounds} rounds, threads {}",
        refs.len(),
        rayon::current_num_threads()
    );
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut first: [Vec<Vec<f32>>; 2] = [Vec::new(), Vec::new()];
    for (e, out) in embedders.iter().zip(first.iter_mut()) {
        // Warm-up, and the vectors compared below.
        *out = e.embed(&refs).unwrap_or_else(|e| fail(&e));
    }
    for round in 0..rounds {
        // Alternate which kernel goes first.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let t = Instant::now();
            embedders[i].embed(&refs).unwrap_or_else(|e| fail(&e));
            rates[i].push(refs.len() as f64 / t.elapsed().as_secs_f64());
        }
        println!(
            "round {round}: {} {:.1}/s, {} {:.1}/s",
            embedders[0].kernel(),
            rates[0][round],
            embedders[1].kernel(),
            rates[1][round]
        );
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (own, gemm) = (median(&rates[0]), median(&rates[1]));
    let worst_cosine = first[0]
        .iter()
        .zip(&first[1])
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
        .fold(1f32, f32::min);
    println!(
        "median passages/s: avx2 {own:.1}, gemm {gemm:.1} (gemm/avx2 {:.2}); lowest cosine between their vectors {worst_cosine:.6}",
        gemm / own
    );
}
