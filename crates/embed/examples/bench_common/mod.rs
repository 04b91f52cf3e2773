//! Shared body of the embedding benchmarks (`embed_bench` with mimalloc,
//! `embed_bench_system` with the system allocator).

use std::path::Path;
use std::time::Instant;

use excerpt_embed::{
    fma_peak_avx512_gflops, fma_peak_gflops, resolve_model, Embedder, LocalEmbedder, TokenCounter,
};

/// Tokens per passage, roughly what the chunker produces.
const PASSAGE_TOKENS: usize = 250;

/// Passages of ~250 tokens cut from a JSONL corpus (`$EXCERPT_BENCH_CORPUS`, default the
/// QMSum development corpus beside the repository), or generated text when absent.
pub fn passages(counter: &dyn TokenCounter, n: usize) -> Vec<String> {
    let default =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/qmsum-val/corpus.jsonl");
    let corpus = std::env::var_os("EXCERPT_BENCH_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or(default);
    let corpus = corpus.as_path();
    let mut sources: Vec<String> = std::fs::read_to_string(corpus)
        .ok()
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if sources.is_empty() {
        eprintln!("corpus not found, using generated text");
        let words = [
            "the",
            "committee",
            "discussed",
            "budget",
            "remote",
            "control",
            "design",
            "professor",
            "agreed",
            "that",
            "speech",
            "recognition",
            "results",
            "improved",
            "after",
            "training",
            "on",
            "new",
            "data",
            "and",
            "marketing",
            "wants",
            "colour",
        ];
        let text: Vec<&str> = (0..200_000)
            .map(|i| words[(i * 7 + i / 13) % words.len()])
            .collect();
        sources.push(text.join(" "));
    }
    let mut out = Vec::with_capacity(n);
    'outer: for text in &sources {
        let spans = counter.token_spans(text);
        for chunk in spans.chunks(PASSAGE_TOKENS) {
            if chunk.len() < PASSAGE_TOKENS {
                break;
            }
            out.push(text[chunk[0].0..chunk[chunk.len() - 1].1].to_string());
            if out.len() == n {
                break 'outer;
            }
        }
    }
    while out.len() < n && !out.is_empty() {
        out.push(out[out.len() % out.len().max(1)].clone());
    }
    out
}

/// Usage: `embed_bench [N] [BATCH]` (defaults 256 passages, batch 32).
pub fn run(allocator: &str) {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let batch: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let dir = match resolve_model(None) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let t0 = Instant::now();
    let embedder = match LocalEmbedder::load(&dir) {
        Ok(e) => e.with_batch_size(batch),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("loaded {} in {:.2?}", embedder.model_id(), t0.elapsed());
    let texts = passages(embedder.tokens(), n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = refs.iter().map(|t| embedder.tokens().count(t)).sum();
    println!(
        "{} passages, {:.0} tokens on average, batch {batch}, allocator {allocator}, threads {}",
        refs.len(),
        tokens as f64 / refs.len().max(1) as f64,
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "default".into())
    );
    // Warm up.
    if let Err(e) = embedder.embed(&refs[..refs.len().min(batch)]) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    // The machine's peaks, measured before and after the run (the CPU's clock moves).
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let peaks = || {
        [
            ("AVX2 + FMA", fma_peak_gflops(1), fma_peak_gflops(threads)),
            (
                "AVX-512",
                fma_peak_avx512_gflops(1),
                fma_peak_avx512_gflops(threads),
            ),
        ]
    };
    let before = peaks();
    let flops: f64 = refs
        .iter()
        .map(|t| embedder.flops(embedder.tokens().count(t) + 2))
        .sum();
    let t = Instant::now();
    match embedder.embed(&refs) {
        Ok(v) => {
            let secs = t.elapsed().as_secs_f64();
            println!(
                "embedded {} passages in {secs:.2} s: {:.1} passages/s, {:.0} GFLOP/s ({} kernel)",
                v.len(),
                v.len() as f64 / secs,
                flops / secs / 1e9,
                embedder.kernel()
            );
            let after = peaks();
            for ((isa, b1, bn), (_, a1, an)) in before.into_iter().zip(after) {
                match (b1, bn, a1, an) {
                    (Some(b1), Some(bn), Some(a1), Some(an)) => {
                        let peak = bn.max(an);
                        println!(
                            "{isa} peak (measured): one core {:.0}-{:.0} GFLOP/s, {threads} threads {:.0}-{:.0} GFLOP/s; the encoder ran at {:.0} % of it",
                            b1.min(a1),
                            b1.max(a1),
                            bn.min(an),
                            peak,
                            100.0 * flops / secs / 1e9 / peak
                        );
                    }
                    _ => println!("no {isa} on this CPU: no peak to compare with"),
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    query_latency(&embedder, &texts);
}

/// p50 of embedding a query of 1, 11, 33 and 132 words (cut from the passages), with
/// the weights in f32 (`EXCERPT_QUERY_F32=1`) and in half precision, interleaved.
fn query_latency(embedder: &LocalEmbedder, texts: &[String]) {
    let words: Vec<&str> = texts.iter().flat_map(|t| t.split_whitespace()).collect();
    if words.is_empty() {
        return;
    }
    for n in [1usize, 11, 33, 132] {
        let query: String = words
            .iter()
            .cycle()
            .take(n)
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let mut times = [Vec::new(), Vec::new()];
        for round in 0..60 {
            let f32_path = round % 2 == 0;
            std::env::set_var("EXCERPT_QUERY_F32", if f32_path { "1" } else { "0" });
            let t = Instant::now();
            if embedder.embed_query(&query).is_err() {
                return;
            }
            if round >= 10 {
                times[usize::from(!f32_path)].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        std::env::remove_var("EXCERPT_QUERY_F32");
        let p50 = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (f, h) = (p50(&mut times[0]), p50(&mut times[1]));
        println!("query of {n:>3} words: p50 {f:.2} ms with f32 weights, {h:.2} ms with half-precision weights");
    }
}
