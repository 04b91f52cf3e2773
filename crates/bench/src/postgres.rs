//! The benchmark on a PostgreSQL index (`excerpt bench --postgres URL`): the generated
//! collection of [`crate::generate`] written through the real write path
//! ([`PgIndex::replace`], one transaction per document, several writers at once), then
//! searches and whole queries through [`Store`] and the engine.
//!
//! Phases, each timed:
//! - **bulk load**: the HNSW index dropped, every document written by `writers`
//!   threads, then the HNSW index built once (pgvector's advice for large loads);
//! - **incremental**: more documents written with the HNSW index in place (what a
//!   running deployment pays per new document);
//! - **searches**: dense (HNSW, `hnsw.ef_search` as configured) with recall@10 against
//!   an exact scan of the generated vectors (kept in memory, so the truth does not come
//!   from the database under test), and lexical (BM25 over full text); both as the
//!   [`Store`] answers them, documents fetched;
//! - **queries**: whole queries through the engine with every strategy (as
//!   [`crate::query`], model inference excluded).
//!
//! A database that already holds this collection (same model id, same size) is reused
//! with `reuse`: loading 1M chunks takes long, and the searches can be re-measured.

use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use excerpt_core::Document;
use excerpt_eval::{latency, Latency};
use excerpt_postgres::{DocumentWrite, PgIndex};
use excerpt_retrieve::{Filter, SearchRequest, Store};
use serde::Serialize;

use crate::generate::{
    self, document_count, near_center, next_document, query_text, Collection, CollectionSpec, Rng,
};
use crate::query::QueryPhase;

/// Results asked of every search.
const TOP: usize = 100;

/// Documents written in the incremental phase (at most; fewer for small collections).
const INCREMENTAL_DOCS: usize = 200;

/// What to generate and measure on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgBenchOptions {
    /// The database (must hold no Excerpt index, or this collection with `reuse`).
    pub url: String,
    /// Chunks, chunks per document and dimension of the collection.
    pub spec: CollectionSpec,
    /// Queries timed per search kind.
    pub queries: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// LLM-token budget of the query phase; 0 skips it.
    pub budget: usize,
    /// Concurrent writers in the load phases.
    pub writers: usize,
    /// `hnsw.ef_search` of dense searches.
    pub ef_search: usize,
    /// `maintenance_work_mem` of the HNSW build, in MiB.
    pub ann_memory_mib: usize,
    /// The model id recorded in the index (default `bench-random-<dim>`): name a real
    /// model to let `excerpt serve` with that model query the collection.
    pub model_id: Option<String>,
    /// Reuse a database that already holds this collection.
    pub reuse: bool,
    /// Name each phase on stderr as it starts (loading 1M chunks takes minutes).
    pub verbose: bool,
}

/// The figures of one PostgreSQL run.
#[derive(Debug, Serialize)]
pub struct PgBenchReport {
    /// Chunks in the collection (the incremental documents excluded).
    pub chunks: usize,
    /// Documents in the collection (the incremental documents excluded).
    pub documents: usize,
    /// Vector dimension.
    pub dim: usize,
    /// Concurrent writers.
    pub writers: usize,
    /// Whether the collection was already there (no load phases).
    pub reused: bool,
    /// Seconds to write every document without the HNSW index.
    pub load_seconds: f64,
    /// Chunks per second of that load.
    pub load_chunks_per_second: f64,
    /// Seconds to build the HNSW index afterwards.
    pub ann_build_seconds: f64,
    /// Chunks written with the HNSW index in place.
    pub incremental_chunks: usize,
    /// Chunks per second of those writes.
    pub incremental_chunks_per_second: f64,
    /// `hnsw.ef_search` of dense searches.
    pub ef_search: usize,
    /// Dense search as the store answers it (HNSW, documents fetched).
    pub dense: Latency,
    /// Mean share of the exact top 10 that dense search returns in its top 10.
    pub dense_recall_at_10: f64,
    /// Lexical search as the store answers it (BM25 over full text, documents fetched).
    pub lexical: Latency,
    /// Whole queries through the engine (absent with budget 0).
    pub query: Option<QueryPhase>,
}

impl std::fmt::Display for PgBenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "collection   {} chunks in {} documents, dim {} (PostgreSQL)",
            self.chunks, self.documents, self.dim
        )?;
        if self.reused {
            writeln!(f, "load         reused (already in the database)")?;
        } else {
            writeln!(
                f,
                "load         {:.1} s, {:.0} chunks/s ({} writers, no HNSW index)",
                self.load_seconds, self.load_chunks_per_second, self.writers
            )?;
            writeln!(f, "hnsw build   {:.1} s", self.ann_build_seconds)?;
            writeln!(
                f,
                "incremental  {} chunks, {:.0} chunks/s (HNSW index maintained)",
                self.incremental_chunks, self.incremental_chunks_per_second
            )?;
        }
        writeln!(
            f,
            "dense        p50 {:.2} ms   p99 {:.2} ms   recall@10 vs exact {:.3} (ef_search {}, top {TOP})",
            self.dense.p50_ms, self.dense.p99_ms, self.dense_recall_at_10, self.ef_search
        )?;
        writeln!(
            f,
            "lexical      p50 {:.2} ms   p99 {:.2} ms   (BM25 over full text, top {TOP})",
            self.lexical.p50_ms, self.lexical.p99_ms
        )?;
        if let Some(q) = &self.query {
            crate::report::write_query_phase(f, q)?;
        }
        Ok(())
    }
}

/// Runs the PostgreSQL benchmark.
pub fn run(options: &PgBenchOptions) -> Result<PgBenchReport> {
    let spec = options.spec;
    let mut rng = Rng(options.seed.max(1));
    let mut collection = generate::setup(&spec, &mut rng);
    if let Some(id) = &options.model_id {
        collection.model_id = id.clone();
    }
    let config = collection.config(spec.dim);
    let say = |what: &str| {
        if options.verbose {
            eprintln!("bench: {what}");
        }
    };
    let mut pg = PgIndex::connect(&options.url)?;
    pg.set_ef_search(options.ef_search);
    let docs = document_count(&spec);
    let existing = if pg.config().is_some() {
        pg.document_count()?
    } else {
        0
    };
    let reused = existing > 0;
    if reused {
        let same = pg
            .config()
            .is_some_and(|c| c.model_id == config.model_id && c.dimension == config.dimension);
        if !options.reuse || !same || existing < docs {
            bail!(
                "{} already holds an index ({existing} documents); the benchmark writes into an empty database (or reuses its own collection of the same size with --reuse)",
                pg.url()
            );
        }
    }
    pg.ensure_config(&config)?;

    // The generated vectors, kept for the exact search (row-major, by document).
    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(docs);
    let mut report = PgBenchReport {
        chunks: spec.chunks,
        documents: docs,
        dim: spec.dim,
        writers: options.writers.max(1),
        reused,
        load_seconds: 0.0,
        load_chunks_per_second: 0.0,
        ann_build_seconds: 0.0,
        incremental_chunks: 0,
        incremental_chunks_per_second: 0.0,
        ef_search: options.ef_search,
        dense: latency(&[]),
        dense_recall_at_10: 0.0,
        lexical: latency(&[]),
        query: None,
    };
    if reused {
        for d in 0..docs {
            vectors.push(next_document(d, &spec, &collection, &mut rng)?.1);
        }
    } else {
        load(
            &pg,
            &spec,
            &collection,
            &mut rng,
            options,
            &mut vectors,
            &mut report,
        )?;
    }

    say(&format!("timing {} searches of each kind", options.queries));
    searches(&pg, &collection, &vectors, &mut rng, options, &mut report)?;
    if options.budget > 0 {
        say("timing whole queries");
        report.query = Some(crate::query::run(
            Path::new(&options.url),
            collection.embedder(),
            &collection.vocab,
            &mut rng,
            options.queries,
            options.budget,
        )?);
    }
    Ok(report)
}

/// Writes the generated collection into the empty index `pg` (its vectors kept in
/// `vectors` for the exact truth), builds the HNSW index, then times incremental writes
/// with the index maintained (documents removed again afterwards), filling the load
/// figures of `report`.
fn load(
    pg: &PgIndex,
    spec: &CollectionSpec,
    collection: &generate::Collection,
    rng: &mut Rng,
    options: &PgBenchOptions,
    vectors: &mut Vec<Vec<f32>>,
    report: &mut PgBenchReport,
) -> Result<()> {
    let spec = *spec;
    let docs = document_count(&spec);
    let say = |what: &str| {
        if options.verbose {
            eprintln!("bench: {what}");
        }
    };
    pg.drop_ann_index()?;
    say(&format!(
        "writing {} chunks in {docs} documents ({} writers, no HNSW index)",
        spec.chunks, report.writers
    ));
    let t = Instant::now();
    write_all(pg, &collection.model_id, report.writers, |send| {
        for d in 0..docs {
            let (doc, v) = next_document(d, &spec, collection, rng)?;
            vectors.push(v.clone());
            if !send(doc, v) {
                break;
            }
        }
        Ok(())
    })?;
    report.load_seconds = t.elapsed().as_secs_f64();
    report.load_chunks_per_second = spec.chunks as f64 / report.load_seconds.max(1e-9);
    say("building the HNSW index");
    let t = Instant::now();
    pg.build_ann_index(options.ann_memory_mib)?;
    report.ann_build_seconds = t.elapsed().as_secs_f64();

    // Incremental: documents numbered after the collection's, HNSW maintained.
    let extra = INCREMENTAL_DOCS.min(docs.max(1));
    let extra_spec = CollectionSpec {
        chunks: extra * spec.chunks_per_doc.max(1),
        ..spec
    };
    let mut extra_rng = Rng(options.seed.wrapping_add(1).max(1));
    say(&format!(
        "writing {} more chunks with the HNSW index",
        extra_spec.chunks
    ));
    let t = Instant::now();
    write_all(pg, &collection.model_id, report.writers, |send| {
        for e in 0..extra {
            let (mut doc, v) = next_document(e, &extra_spec, collection, &mut extra_rng)?;
            doc.id = format!("extra-{e:07}");
            if !send(doc, v) {
                break;
            }
        }
        Ok(())
    })?;
    report.incremental_chunks = extra_spec.chunks;
    report.incremental_chunks_per_second =
        extra_spec.chunks as f64 / t.elapsed().as_secs_f64().max(1e-9);
    // The extra documents would be missing from the exact truth: remove them.
    let ids: Vec<String> = (0..extra).map(|e| format!("extra-{e:07}")).collect();
    pg.delete(&ids)?;

    Ok(())
}

/// Writes the documents `produce` hands to its `send` callback through `writers`
/// threads, each calling [`PgIndex::replace`] (one transaction per document). `send`
/// returns `false` once a writer failed; the first failure is returned.
fn write_all(
    pg: &PgIndex,
    model_id: &str,
    writers: usize,
    produce: impl FnOnce(&mut dyn FnMut(Document, Vec<f32>) -> bool) -> Result<()>,
) -> Result<()> {
    let (tx, rx) = sync_channel::<(Document, Vec<f32>)>(writers * 4);
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((doc, vectors)) = next else {
                            return Ok(());
                        };
                        let indexed: Vec<String> = doc
                            .chunks
                            .iter()
                            .map(|c| c.range.slice(&doc.text).to_string())
                            .collect();
                        let embed_keys: Vec<String> = (0..doc.chunks.len())
                            .map(|i| format!("{model_id}:{}:{i}", doc.id))
                            .collect();
                        pg.replace(&DocumentWrite {
                            doc: &doc,
                            vectors: &vectors,
                            embed_keys: &embed_keys,
                            indexed: &indexed,
                            sentence_vectors: None,
                        })
                        .with_context(|| format!("writing {}", doc.id))?;
                    }
                })
            })
            .collect();
        let mut send = |doc, v| tx.send((doc, v)).is_ok();
        let produced = produce(&mut send);
        drop(tx);
        let mut first = produced.err();
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| bail!("a writer thread panicked"));
            if let (None, Err(e)) = (&first, r) {
                first = Some(e);
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Times dense and lexical searches through the store; dense recall@10 against an exact
/// scan of `vectors`.
fn searches(
    pg: &PgIndex,
    collection: &Collection,
    vectors: &[Vec<f32>],
    rng: &mut Rng,
    options: &PgBenchOptions,
    report: &mut PgBenchReport,
) -> Result<()> {
    let filter = Filter::default();
    let dim = options.spec.dim;
    let mut dense = Vec::with_capacity(options.queries);
    let mut lexical = Vec::with_capacity(options.queries);
    let mut recall = 0.0f64;
    // Warm-up: connections, the HNSW index's first pages.
    let q = near_center(&collection.centers, rng);
    pg.search(&SearchRequest {
        dense: Some(&q),
        lexical: Some("w0 w1"),
        k: TOP,
        filter: &filter,
    })?;
    for _ in 0..options.queries {
        let q = near_center(&collection.centers, rng);
        let t = Instant::now();
        let found = pg.search(&SearchRequest {
            dense: Some(&q),
            lexical: None,
            k: TOP,
            filter: &filter,
        })?;
        dense.push(t.elapsed().as_secs_f64() * 1e3);
        // The store's keys name documents by their row; map them to generated numbers.
        let corpus = found.corpus.as_corpus();
        let got: Vec<(usize, u32)> = found
            .dense
            .iter()
            .take(10)
            .filter_map(|(k, _)| {
                let doc = corpus.document(k.doc)?;
                let d = doc.id.strip_prefix("doc-")?.parse().ok()?;
                Some((d, k.ordinal))
            })
            .collect();
        let truth = exact_top(vectors, dim, &q, 10);
        let hit = truth.iter().filter(|t| got.contains(t)).count();
        recall += hit as f64 / truth.len().max(1) as f64;

        let text = query_text(&collection.vocab, rng);
        let t = Instant::now();
        pg.search(&SearchRequest {
            dense: None,
            lexical: Some(&text),
            k: TOP,
            filter: &filter,
        })?;
        lexical.push(t.elapsed().as_secs_f64() * 1e3);
    }
    report.dense = latency(&dense);
    report.lexical = latency(&lexical);
    report.dense_recall_at_10 = recall / options.queries.max(1) as f64;
    Ok(())
}

/// The exact top `k` of `q` by cosine (unit vectors: dot product) over every generated
/// chunk, as (document number, ordinal), ties by position.
fn exact_top(vectors: &[Vec<f32>], dim: usize, q: &[f32], k: usize) -> Vec<(usize, u32)> {
    let mut best: Vec<(f32, usize, u32)> = Vec::with_capacity(k + 1);
    for (d, v) in vectors.iter().enumerate() {
        for (i, row) in v.chunks(dim).enumerate() {
            let s: f32 = row.iter().zip(q).map(|(a, b)| a * b).sum();
            if best.len() < k || s > best[best.len() - 1].0 {
                let pos = best.partition_point(|b| b.0 >= s);
                best.insert(pos, (s, d, i as u32));
                best.truncate(k);
            }
        }
    }
    best.into_iter().map(|(_, d, i)| (d, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_top_is_the_highest_dot_products() {
        let vectors = vec![vec![1.0, 0.0, 0.6, 0.8], vec![0.0, 1.0]];
        let got = exact_top(&vectors, 2, &[1.0, 0.0], 2);
        assert_eq!(got, [(0, 0), (0, 1)]);
        let got = exact_top(&vectors, 2, &[0.0, 1.0], 1);
        assert_eq!(got, [(1, 0)]);
    }
}
