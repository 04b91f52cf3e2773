//! The query phase: whole queries through [`excerpt::Engine`] on the generated
//! collection, retrieval (dense + BM25 + fusion) and then assembly with every strategy,
//! so the cost of assembly can be read next to the cost of search.
//!
//! The generated collection has no real model behind it, so the engine is given a
//! [`BenchEmbedder`], which maps a text to a clustered unit vector in microseconds. The
//! figures therefore exclude model inference (the query embedding, and for `window` the
//! sentences it embeds), which the embedding benchmarks of `excerpt-embed` measure.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use excerpt::{Engine, EngineOptions, QueryRequest, StrategyConfig};
use serde::Serialize;

use crate::generate::{query_text, BenchEmbedder, Rng};
use excerpt_eval::{latency, Latency};

/// The strategies timed: every strategy with its default settings.
pub fn strategies() -> Vec<StrategyConfig> {
    StrategyConfig::defaults().collect()
}

/// Latencies of one strategy.
#[derive(Debug, Serialize)]
pub struct StrategyLatency {
    /// The strategy's name.
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
pub struct QueryPhase {
    /// LLM-token budget of every assembly.
    pub budget: usize,
    /// Candidates asked of each search.
    pub candidates: usize,
    /// Hybrid retrieval: dense + BM25 over `candidates` each, fused (RRF).
    pub retrieve: Latency,
    /// One entry per strategy, in the order of [`strategies`].
    pub strategies: Vec<StrategyLatency>,
}

/// Runs `queries` hybrid queries on the index in `dir` and assembles each with every
/// strategy at `budget` LLM tokens.
pub fn run(
    dir: &Path,
    embedder: BenchEmbedder,
    vocab: &[String],
    rng: &mut Rng,
    queries: usize,
    budget: usize,
) -> Result<QueryPhase> {
    let engine = Engine::with_embedder(EngineOptions::new(dir), Arc::new(embedder));
    let strategies = strategies();
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
        req.text = query_text(vocab, rng);
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
