//! Embedding throughput of each matrix kernel this CPU runs (our own AVX-512 and AVX2
//! kernels, and the forced `gemm` path of CPUs without AVX2 + FMA), in one run: the
//! embedders are loaded from the same model, then embed the same ~250-token passages in
//! rotating rounds, so all see the same machine load. Prints passages/s per round, the
//! medians, their ratio to the AVX2 kernel, and the lowest cosine between each kernel's
//! vectors and the AVX2 kernel's.
//!
//! `cargo run --release -p excerpt-embed --example kernel_bench -- [N] [ROUNDS] [BATCH]`
//! (defaults 128 passages, 5 rounds, batch 32).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(dead_code)]
mod bench_common;

use std::time::Instant;

use excerpt_embed::{resolve_model, throughput, Embedder, KernelChoice, LocalEmbedder};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, rounds, batch) = (arg(128), arg(5), arg(32));
    let fail = |e: &dyn std::fmt::Display| -> ! {
        eprintln!("{e}");
        std::process::exit(1)
    };
    let dir = resolve_model(None).unwrap_or_else(|e| fail(&e));
    // The AVX2 kernel first: the others are compared with it.
    let embedders: Vec<LocalEmbedder> =
        [KernelChoice::Avx2, KernelChoice::Avx512, KernelChoice::Gemm]
            .into_iter()
            .filter_map(
                |choice| match LocalEmbedder::load_with_kernel(&dir, choice) {
                    Ok(e) => Some(e.with_batch_size(batch)),
                    Err(e) => {
                        println!("skipped: {e}");
                        None
                    }
                },
            )
            .collect();
    if embedders.is_empty() {
        fail(&"no kernel loads");
    }
    let texts = throughput::passages(
        embedders[0].tokens(),
        &bench_common::sources(),
        n,
        throughput::PASSAGE_TOKENS,
    );
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "{} passages, batch {batch}, {rounds} rounds, threads {}",
        refs.len(),
        rayon::current_num_threads()
    );
    let k = embedders.len();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); k];
    // Warm-up, and the vectors compared below.
    let first: Vec<Vec<Vec<f32>>> = embedders
        .iter()
        .map(|e| e.embed(&refs).unwrap_or_else(|e| fail(&e)))
        .collect();
    for round in 0..rounds {
        // Rotate which kernel goes first.
        let mut line = format!("round {round}:");
        for step in 0..k {
            let i = (round + step) % k;
            let t = Instant::now();
            embedders[i].embed(&refs).unwrap_or_else(|e| fail(&e));
            rates[i].push(refs.len() as f64 / t.elapsed().as_secs_f64());
        }
        for (e, r) in embedders.iter().zip(&rates) {
            line += &format!(" {} {:.1}/s", e.kernel(), r[round]);
        }
        println!("{line}");
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&rates[0]);
    for ((e, r), vectors) in embedders.iter().zip(&rates).zip(&first) {
        let worst_cosine = vectors
            .iter()
            .zip(&first[0])
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            .fold(1f32, f32::min);
        println!(
            "median passages/s: {} {:.1} ({:.2} of {}); lowest cosine with its vectors {worst_cosine:.6}",
            e.kernel(),
            median(r),
            median(r) / base,
            embedders[0].kernel()
        );
    }
}
