//! Context assembly alone, per strategy, on a generated collection: the retrieval of a
//! few queries is done once up front, then each iteration assembles one query's hits
//! into a context at a 2000-token budget. No model is involved (the stand-in embedder
//! of the generated collection embeds `window`'s sentences too).
//!
//! Run with `cargo bench -p excerpt-bench`; `-- rse` runs one strategy.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use excerpt::{Engine, EngineOptions, QueryRequest};
use excerpt_bench::generate::{self, query_text, CollectionSpec, Rng};
use excerpt_bench::query::strategies;

const BUDGET: usize = 2000;
const QUERIES: usize = 8;

fn assemble(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = tmp.path().join("index");
    let mut rng = Rng(7);
    let spec = CollectionSpec {
        chunks: 5_000,
        chunks_per_doc: 50,
        dim: 64,
    };
    let collection = generate::build(&dir, &spec, &mut rng).expect("generated collection");
    let engine = Engine::with_embedder(EngineOptions::new(&dir), Arc::new(collection.embedder()));
    let retrieved: Vec<_> = (0..QUERIES)
        .map(|_| {
            let mut req = QueryRequest::new(query_text(&collection.vocab, &mut rng));
            req.budget = BUDGET;
            let hits = engine.retrieve(&req).expect("retrieval");
            (req.text, hits)
        })
        .collect();
    let mut group = c.benchmark_group("assemble");
    group.sample_size(20);
    for strategy in strategies() {
        group.bench_function(strategy.name(), |b| {
            let mut next = 0;
            b.iter(|| {
                let (text, hits) = &retrieved[next % retrieved.len()];
                next += 1;
                let ctx = engine
                    .assemble(text, hits, &strategy, BUDGET)
                    .expect("assembly");
                black_box(ctx.pieces.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, assemble);
criterion_main!(benches);
