//! The query phase of `excerpt bench`: whole queries through [`excerpt::Engine`] on the
//! generated collection — retrieval (dense + BM25 + fusion) and then assembly with every
//! strategy — so the cost of assembly can be read next to the cost of search.
//!
//! The generated collection has no real model behind it, so the engine is given
//! [`BenchEmbedder`]: it maps a text to a clustered unit vector derived from its hash in
//! microseconds. The figures therefore exclude model inference (the query embedding, and
//! for `window` the sentences it embeds); those are measured by `embed_bench` and listed
//! separately in docs/BENCHMARKS.md.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use excerpt::{Engine, EngineOptions, QueryRequest, StrategyConfig};
use excerpt_core::{EmbedError, Embedder};
use excerpt_eval::{latency, Latency};
use serde::Serialize;

use crate::bench::{normalise, Rng};

/// A stand-in embedder for generated collections: text → one of `centers`, perturbed,
/// both chosen by the text's hash. Deterministic, and cheap enough not to be measured.
pub(crate) struct BenchEmbedder {
    pub model_id: String,
    pub centers: Vec<Vec<f32>>,
}

impl Embedder for BenchEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.centers.first().map_or(0, Vec::len)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let h = t
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    })
                    .max(1);
                let mut rng = Rng(h);
                let c = &self.centers[(rng.next() % self.centers.len() as u64) as usize];
                let dim = c.len() as f32;
                let mut v: Vec<f32> = c
                    .iter()
                    .map(|x| x + 0.3 * rng.unit() / dim.sqrt())
                    .collect();
                normalise(&mut v);
                v
            })
            .collect())
    }
}

/// Latencies of one strategy.
#[derive(Debug, Serialize)]
pub(crate) struct StrategyLatency {
    pub strategy: String,
    /// Assembly alone (the first stage is shared and timed once per query).
    pub assemble: Latency,
    /// Retrieval plus this strategy's assembly: a whole query minus model inference.
    pub query: Latency,
    /// Mean pieces returned.
    pub pieces: f64,
}

/// The query phase's figures.
#[derive(Debug, Serialize)]
pub(crate) struct QueryPhase {
    pub budget: usize,
    pub candidates: usize,
    /// Hybrid retrieval: dense + BM25 over `candidates` each, fused (RRF).
    pub retrieve: Latency,
    pub strategies: Vec<StrategyLatency>,
}

/// Runs `queries` hybrid queries on the index in `dir` and assembles each with every
/// strategy at `budget` LLM tokens.
pub(crate) fn run(
    dir: &Path,
    embedder: BenchEmbedder,
    vocab: &[String],
    rng: &mut Rng,
    queries: usize,
    budget: usize,
) -> Result<QueryPhase> {
    let engine = Engine::with_embedder(EngineOptions::new(dir), Arc::new(embedder));
    // Every strategy with its default parameters.
    let strategies: Vec<StrategyConfig> = StrategyConfig::defaults().collect();
    // Warm-up: the snapshot, the LLM tokenizer.
    let mut req = QueryRequest::new(format!("{} {}", vocab[0], vocab[1]));
    req.budget = budget;
    let warm = engine.retrieve(&req)?;
    for s in &strategies {
        engine.assemble(&req.text, &warm, s, budget)?;
    }

    let mut retrieve = Vec::with_capacity(queries);
    let mut assemble: Vec<Vec<f64>> = vec![Vec::with_capacity(queries); strategies.len()];
    let mut whole: Vec<Vec<f64>> = vec![Vec::with_capacity(queries); strategies.len()];
    let mut pieces = vec![0usize; strategies.len()];
    for _ in 0..queries {
        let words: Vec<&str> = (0..4).map(|_| vocab[rng.word(2000)].as_str()).collect();
        req.text = words.join(" ");
        let t = Instant::now();
        let retrieved = engine.retrieve(&req)?;
        let r_ms = t.elapsed().as_secs_f64() * 1e3;
        retrieve.push(r_ms);
        for (i, s) in strategies.iter().enumerate() {
            let t = Instant::now();
            let ctx = engine.assemble(&req.text, &retrieved, s, budget)?;
            let a_ms = t.elapsed().as_secs_f64() * 1e3;
            assemble[i].push(a_ms);
            whole[i].push(r_ms + a_ms);
            pieces[i] += ctx.pieces.len();
        }
    }
    Ok(QueryPhase {
        budget,
        candidates: req.candidates,
        retrieve: latency(&retrieve),
        strategies: strategies
            .iter()
            .zip(assemble.into_iter().zip(whole))
            .zip(pieces)
            .map(|((s, (a, w)), p)| StrategyLatency {
                strategy: s.to_string(),
                assemble: latency(&a),
                query: latency(&w),
                pieces: p as f64 / queries.max(1) as f64,
            })
            .collect(),
    })
}
