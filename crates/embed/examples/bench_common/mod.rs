//! Shared body of the embedding benchmarks (`embed_bench` with mimalloc,
//! `embed_bench_system` with the system allocator).

use std::path::Path;
use std::time::Instant;

use excerpt_embed::{resolve_model, throughput, Embedder, LocalEmbedder, QueryWeights};

/// The texts of a JSONL corpus (`$EXCERPT_BENCH_CORPUS`, default the QMSum development
/// corpus beside the repository); none when it is absent (the passages are then
/// generated).
pub fn sources() -> Vec<String> {
    let default =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/qmsum-val/corpus.jsonl");
    let corpus = std::env::var_os("EXCERPT_BENCH_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or(default);
    let sources: Vec<String> = std::fs::read_to_string(&corpus)
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
    }
    sources
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
    println!("allocator {allocator}");
    let texts = throughput::passages(embedder.tokens(), &sources(), n, throughput::PASSAGE_TOKENS);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    match throughput::measure(&embedder, &refs) {
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    query_latency(&embedder, &texts);
}

/// p50 of embedding a query of 1, 11, 33 and 132 words (cut from the passages), with
/// the weights in f32, in half precision and in 16-bit integer products ([`QueryWeights`]), in turn.
fn query_latency(embedder: &LocalEmbedder, texts: &[String]) {
    let words: Vec<&str> = texts.iter().flat_map(|t| t.split_whitespace()).collect();
    if words.is_empty() {
        return;
    }
    let precisions = [QueryWeights::F32, QueryWeights::F16, QueryWeights::Int16];
    for n in [1usize, 11, 33, 132] {
        let query: String = words
            .iter()
            .cycle()
            .take(n)
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        for round in 0..90 {
            let which = round % precisions.len();
            let t = Instant::now();
            if embedder
                .embed_query_with(&query, precisions[which])
                .is_err()
            {
                return;
            }
            if round >= 15 {
                times[which].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let p50: Vec<f64> = times
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
            .collect();
        println!(
            "query of {n:>3} words: p50 {:.2} ms with f32 weights, {:.2} ms with half-precision \
             weights, {:.2} ms in 16-bit integers",
            p50[0], p50[1], p50[2]
        );
    }
}
