//! `excerpt bench`: index-level figures on a generated collection, so releases can be
//! compared on the same machine. Vectors are clustered random unit vectors (no model
//! involved); texts are random words from a Zipf-like vocabulary.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use excerpt_core::{CharIndex, Chunk, ChunkKey, ChunkerConfig, Document};
use excerpt_index::{IndexConfig, IndexWriter, Snapshot};
use serde::Serialize;

/// Options of `excerpt bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Chunks in the generated collection.
    #[arg(long, default_value_t = 100_000)]
    pub chunks: usize,
    /// Chunks per generated document.
    #[arg(long, default_value_t = 50)]
    pub chunks_per_doc: usize,
    /// Vector dimension.
    #[arg(long, default_value_t = 384)]
    pub dim: usize,
    /// Queries timed per search kind.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Where to build the collection (default: a temporary directory, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// LLM-token budget of the query phase (whole queries: retrieval, then assembly with
    /// every strategy); 0 skips that phase.
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
}

#[derive(Debug, Serialize)]
struct BenchReport {
    chunks: usize,
    documents: usize,
    dim: usize,
    build_seconds: f64,
    open_seconds: f64,
    disk_mib: f64,
    rss_mib_after_open: f64,
    /// Dense search as queries run it: the ANN index when the collection has one.
    dense: Latency,
    /// Exact dense search (a scan of every vector).
    dense_exact: Latency,
    /// The ANN index's state (`absent` below the size threshold).
    ann: String,
    /// Mean share of the exact top 10 that `dense` also returns in its top 10.
    dense_recall_at_10: f64,
    bm25: Latency,
    /// Whole queries through the engine (absent with `--budget 0`).
    query: Option<crate::bench_query::QueryPhase>,
}

pub(crate) struct Rng(pub u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    /// Zipf-like word index in 0..n (squared uniform skews towards small indices).
    pub(crate) fn word(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((u * u * u) * n as f64) as usize
    }
}

pub(crate) use excerpt_core::normalize as normalise;

pub(crate) fn latency(mut ms: Vec<f64>) -> Latency {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Latency {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        mean_ms: ms.iter().sum::<f64>() / ms.len().max(1) as f64,
    }
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

pub fn run(a: BenchArgs, quiet: bool) -> Result<()> {
    let tmp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().join("bench-index")
        }
    };
    let mut rng = Rng(a.seed.max(1));
    let vocab: Vec<String> = (0..20_000).map(|i| format!("w{i:x}")).collect();
    let clusters = 256.min(a.chunks.max(1));
    let centers: Vec<Vec<f32>> = (0..clusters)
        .map(|_| {
            let mut v: Vec<f32> = (0..a.dim).map(|_| rng.unit()).collect();
            normalise(&mut v);
            v
        })
        .collect();
    let model_id = format!("bench-random-{}", a.dim);
    let config = IndexConfig {
        model_id: model_id.clone(),
        dimension: a.dim,
        chunker: ChunkerConfig::default(),
        headers: false,
        contextualizer: None,
    };
    let started = Instant::now();
    let mut w = IndexWriter::open(&dir, config)?;
    let per_doc = a.chunks_per_doc.max(1);
    let docs = a.chunks.div_ceil(per_doc);
    for d in 0..docs {
        let n = per_doc.min(a.chunks - d * per_doc);
        let mut text = String::new();
        let mut bounds = Vec::with_capacity(n);
        let mut vectors = Vec::with_capacity(n * a.dim);
        for _ in 0..n {
            let start = text.len();
            for _ in 0..40 {
                text.push_str(&vocab[rng.word(vocab.len())]);
                text.push(' ');
            }
            text.push('\n');
            bounds.push((start, text.len()));
            let c = &centers[(rng.next() % clusters as u64) as usize];
            let mut v: Vec<f32> = c
                .iter()
                .map(|x| x + 0.3 * rng.unit() / (a.dim as f32).sqrt())
                .collect();
            normalise(&mut v);
            vectors.extend(v);
        }
        let idx = CharIndex::new(&text);
        let chunks: Vec<Chunk> = bounds
            .iter()
            .enumerate()
            .map(|(i, &(s, e))| {
                Ok(Chunk {
                    ordinal: i as u32,
                    range: idx.range(s, e)?,
                    section: None,
                    tokens: 0,
                    context: None,
                })
            })
            .collect::<Result<_, excerpt_core::Error>>()?;
        let sentences = chunks.iter().map(|c| c.range).collect();
        let doc = Document {
            id: format!("doc-{d:07}"),
            title: String::new(),
            source: None,
            metadata: Default::default(),
            hash: format!("{d}"),
            text,
            sections: vec![],
            chunks,
            sentences,
            pages: vec![],
        };
        w.put(doc, vectors)?;
        if w.staged() >= 2000 {
            w.commit()?;
        }
    }
    w.commit()?;
    drop(w);
    let build_seconds = started.elapsed().as_secs_f64();
    let t = Instant::now();
    let snap = Snapshot::open(&dir)?;
    let open_seconds = t.elapsed().as_secs_f64();
    let rss = rss_mib();

    let mut dense = Vec::with_capacity(a.queries);
    let mut exact = Vec::with_capacity(a.queries);
    let mut recall_sum = 0.0f64;
    let mut bm25 = Vec::with_capacity(a.queries);
    let mut sink = 0usize;
    for _ in 0..a.queries {
        let c = &centers[(rng.next() % clusters as u64) as usize];
        let mut q: Vec<f32> = c
            .iter()
            .map(|x| x + 0.3 * rng.unit() / (a.dim as f32).sqrt())
            .collect();
        normalise(&mut q);
        let t = Instant::now();
        let hits: Vec<(ChunkKey, f32)> = snap.dense_search(&q, 100, None);
        dense.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
        let t = Instant::now();
        let truth = snap.dense_search_exact(&q, 100, None);
        exact.push(t.elapsed().as_secs_f64() * 1e3);
        let top: Vec<ChunkKey> = truth.iter().take(10).map(|h| h.0).collect();
        let found = hits.iter().take(10).filter(|h| top.contains(&h.0)).count();
        recall_sum += found as f64 / top.len().max(1) as f64;
        let words: Vec<&str> = (0..4).map(|_| vocab[rng.word(2000)].as_str()).collect();
        let t = Instant::now();
        let hits = snap.bm25_search(&words.join(" "), 100, None)?;
        bm25.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
    }
    let query = if a.budget > 0 {
        let embedder = crate::bench_query::BenchEmbedder {
            model_id,
            centers: centers.clone(),
        };
        Some(crate::bench_query::run(
            &dir, embedder, &vocab, &mut rng, a.queries, a.budget,
        )?)
    } else {
        None
    };
    let report = BenchReport {
        chunks: snap.chunk_count(),
        documents: snap.documents().len(),
        dim: a.dim,
        build_seconds,
        open_seconds,
        disk_mib: snap.stats().disk_bytes as f64 / 1048576.0,
        rss_mib_after_open: rss,
        dense: latency(dense),
        dense_exact: latency(exact),
        ann: match snap.stats().ann {
            excerpt_index::AnnStatus::Absent => "absent (exact search)".to_string(),
            excerpt_index::AnnStatus::Ready { lists, .. } => format!("IVF, {lists} lists"),
            excerpt_index::AnnStatus::Unavailable { reason } => format!("unavailable: {reason}"),
        },
        dense_recall_at_10: recall_sum / a.queries.max(1) as f64,
        bm25: latency(bm25),
        query,
    };
    if !quiet && sink == 0 {
        eprintln!("warning: no search returned anything");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "collection   {} chunks in {} documents, dim {}",
            report.chunks, report.documents, report.dim
        );
        println!(
            "build        {:.1} s   open {:.2} s",
            report.build_seconds, report.open_seconds
        );
        println!(
            "disk         {:.1} MiB   RSS after open {:.0} MiB",
            report.disk_mib, report.rss_mib_after_open
        );
        println!(
            "ann          {}   dense recall@10 vs exact {:.3}",
            report.ann, report.dense_recall_at_10
        );
        for (name, l) in [
            ("dense", &report.dense),
            ("dense exact", &report.dense_exact),
            ("bm25", &report.bm25),
        ] {
            println!(
                "{name:<12} p50 {:.2} ms   p99 {:.2} ms   mean {:.2} ms  (top 100)",
                l.p50_ms, l.p99_ms, l.mean_ms
            );
        }
        if let Some(q) = &report.query {
            println!(
                "queries      budget {} tokens, {} candidates per search; model inference excluded",
                q.budget, q.candidates
            );
            let r = &q.retrieve;
            println!(
                "  retrieve   p50 {:.2} ms   p99 {:.2} ms   (dense + bm25 + rrf)",
                r.p50_ms, r.p99_ms
            );
            for st in &q.strategies {
                println!(
                    "  {:<10} assemble p50 {:.2} ms  p99 {:.2} ms   whole query p50 {:.2} ms  p99 {:.2} ms   {:.1} pieces",
                    st.strategy,
                    st.assemble.p50_ms,
                    st.assemble.p99_ms,
                    st.query.p50_ms,
                    st.query.p99_ms,
                    st.pieces
                );
            }
        }
    }
    Ok(())
}
