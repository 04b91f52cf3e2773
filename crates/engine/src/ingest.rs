use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use excerpt_core::{content_hash, indexed_text, ChunkKey, Document, Embedder};
use excerpt_index::{IndexConfig, IndexWriter, Manifest, Snapshot};
use excerpt_ingest::{chunk_with_headers, load_file, walk, LoadOptions, WalkItem, WalkOptions};
use serde::Serialize;

use crate::{Engine, EngineError};

/// Options of one ingest.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Directory walking (ignores, globs, hidden files).
    pub walk: WalkOptions,
    /// Loader options (extra plain-text extensions).
    pub load: LoadOptions,
    /// Commit after this many new chunks, so an interrupted ingest keeps its progress.
    pub commit_every_chunks: usize,
    /// Texts per embedding call.
    pub embed_batch: usize,
    /// Set to stop early: what was committed stays, the rest is dropped.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            walk: WalkOptions::default(),
            load: LoadOptions::default(),
            commit_every_chunks: 2048,
            embed_batch: 64,
            cancel: None,
        }
    }
}

/// Progress events of an ingest (all methods optional). Called from the ingesting thread.
pub trait IngestProgress: Sync {
    /// The walk found `files` files.
    fn files_found(&self, _files: usize) {}
    /// A file was loaded and chunked (or skipped).
    fn file_done(&self, _path: &str) {}
    /// `chunks` more chunks need embedding.
    fn chunks_queued(&self, _chunks: usize) {}
    /// `chunks` more chunks were embedded or reused.
    fn chunks_done(&self, _chunks: usize) {}
    /// A commit made generation `generation` visible.
    fn committed(&self, _generation: u64) {}
}

/// An [`IngestProgress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;
impl IngestProgress for NoProgress {}

/// A file or line that was not ingested, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    /// The path (with `:line` for JSONL lines).
    pub path: String,
    /// The reason.
    pub reason: String,
}

/// What an ingest did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    /// Files the walk found.
    pub files: usize,
    /// New documents.
    pub added: usize,
    /// Documents whose content changed.
    pub updated: usize,
    /// Documents already indexed with the same content hash.
    pub unchanged: usize,
    /// Files skipped on purpose (binary, empty, unsupported type).
    pub skipped: Vec<Problem>,
    /// Files, lines or paths that failed.
    pub failed: Vec<Problem>,
    /// Chunks embedded by the model.
    pub chunks_embedded: usize,
    /// Chunks whose vector was reused from the index (same text, same model).
    pub chunks_reused: usize,
    /// Seconds spent embedding.
    pub embed_seconds: f64,
    /// Seconds in all.
    pub seconds: f64,
    /// Generation visible after the ingest.
    pub generation: u64,
    /// Documents in the index after the ingest.
    pub documents: usize,
}

impl IngestReport {
    /// True when nothing could be ingested although something was asked for: every
    /// document found failed, or no file was found at all.
    pub fn nothing_ingested(&self) -> bool {
        self.added + self.updated + self.unchanged == 0
    }
}

/// Documents chunked and waiting for vectors.
struct Batch {
    docs: Vec<Document>,
    chunks: usize,
}

impl Engine {
    /// The index config an ingest writes with: the existing index's, checked against the
    /// options, or a new one from the options.
    fn ingest_config(&self, embedder: &dyn Embedder) -> Result<IndexConfig, EngineError> {
        let existing = Manifest::load(&self.options.index_dir)?.map(|m| m.config);
        let chunker = self
            .options
            .chunker
            .or(existing.as_ref().map(|c| c.chunker))
            .unwrap_or_default();
        let headers = self
            .options
            .headers
            .or(existing.as_ref().map(|c| c.headers))
            .unwrap_or(true);
        Ok(IndexConfig {
            model_id: embedder.model_id().to_string(),
            dimension: embedder.dimension(),
            chunker,
            headers,
        })
    }

    /// Ingests files and directories: new and changed documents are chunked, embedded
    /// and committed (every `commit_every_chunks` chunks and at the end); unchanged ones
    /// cost a read and a hash. Per-file problems are reported, not raised.
    pub fn ingest(
        &self,
        paths: &[PathBuf],
        opts: &IngestOptions,
        progress: &dyn IngestProgress,
    ) -> Result<IngestReport, EngineError> {
        let started = Instant::now();
        let embedder = self.embedder()?;
        let config = self.ingest_config(embedder.as_ref())?;
        let mut writer = IndexWriter::open(&self.options.index_dir, config.clone())?;
        let mut report = IngestReport::default();

        let mut files = Vec::new();
        for item in walk(paths, &opts.walk) {
            match item {
                WalkItem::File { path, root } => files.push((path, root)),
                WalkItem::Problem(e) => report.failed.push(Problem {
                    path: String::new(),
                    reason: e.to_string(),
                }),
            }
        }
        report.files = files.len();
        progress.files_found(files.len());

        let counter = embedder.token_counter();
        let mut ctx = Flush {
            embedder: embedder.as_ref(),
            config: &config,
            cache: None,
            opts,
        };
        let mut batch = Batch {
            docs: Vec::new(),
            chunks: 0,
        };
        let mut seen: HashSet<String> = HashSet::new();
        for (path, root) in files {
            if opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(EngineError::Cancelled);
            }
            let shown = path.display().to_string();
            let loaded = match load_file(&path, &root, &opts.load) {
                Ok(l) => l,
                Err(e) => {
                    let p = Problem {
                        path: shown.clone(),
                        reason: e.to_string(),
                    };
                    if e.is_skip() {
                        report.skipped.push(p)
                    } else {
                        report.failed.push(p)
                    }
                    progress.file_done(&shown);
                    continue;
                }
            };
            for e in loaded.problems {
                report.failed.push(Problem {
                    path: shown.clone(),
                    reason: e.to_string(),
                });
            }
            for parsed in loaded.documents {
                if !seen.insert(parsed.id.clone()) {
                    report.failed.push(Problem {
                        path: shown.clone(),
                        reason: format!(
                            "duplicate document id {:?}: the first one was kept",
                            parsed.id
                        ),
                    });
                    continue;
                }
                let doc = match chunk_with_headers(parsed, &config.chunker, counter, config.headers)
                {
                    Ok(d) => d,
                    Err(e) => {
                        report.failed.push(Problem {
                            path: shown.clone(),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                };
                match writer.committed_hash(&doc.id) {
                    Some(h) if h == doc.hash => {
                        report.unchanged += 1;
                        continue;
                    }
                    Some(_) => report.updated += 1,
                    None => report.added += 1,
                }
                batch.chunks += doc.chunks.len();
                progress.chunks_queued(doc.chunks.len());
                batch.docs.push(doc);
                if batch.chunks >= opts.commit_every_chunks {
                    ctx.flush(
                        &mut writer,
                        std::mem::replace(
                            &mut batch,
                            Batch {
                                docs: Vec::new(),
                                chunks: 0,
                            },
                        ),
                        &mut report,
                        progress,
                    )?;
                }
            }
            progress.file_done(&shown);
        }
        ctx.flush(&mut writer, batch, &mut report, progress)?;
        report.generation = writer.generation();
        report.documents = writer.committed_ids().len();
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }
}

struct Flush<'a> {
    embedder: &'a dyn Embedder,
    config: &'a IndexConfig,
    /// Vectors already in the index, by embedding-input hash (built on first need).
    cache: Option<(Arc<Snapshot>, HashMap<String, ChunkKey>)>,
    opts: &'a IngestOptions,
}

impl Flush<'_> {
    fn key(&self, text: &str) -> String {
        content_hash(&[self.config.model_id.as_bytes(), text.as_bytes()])
    }

    fn flush(
        &mut self,
        writer: &mut IndexWriter,
        batch: Batch,
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<(), EngineError> {
        if batch.docs.is_empty() {
            return Ok(());
        }
        if self.cache.is_none() {
            let snap = Arc::new(writer.snapshot()?);
            let mut map = HashMap::new();
            for (d, doc) in snap.documents().iter().enumerate() {
                for c in &doc.chunks {
                    let k = self.key(&indexed_text(doc, c, self.config.headers));
                    map.entry(k).or_insert(ChunkKey::new(d as u32, c.ordinal));
                }
            }
            self.cache = Some((snap, map));
        }
        let dim = self.config.dimension;
        // Texts to embed, deduplicated by key.
        let mut todo: Vec<(String, String)> = Vec::new();
        let mut fresh: HashMap<String, usize> = HashMap::new();
        let mut plan: Vec<Vec<(String, Option<ChunkKey>)>> = Vec::with_capacity(batch.docs.len());
        let (snap, map) = self
            .cache
            .as_ref()
            .map(|(s, m)| (s.clone(), m))
            .expect("cache built above");
        for doc in &batch.docs {
            let mut p = Vec::with_capacity(doc.chunks.len());
            for c in &doc.chunks {
                let text = indexed_text(doc, c, self.config.headers);
                let k = self.key(&text);
                let hit = map.get(&k).copied();
                if hit.is_none() && !fresh.contains_key(&k) {
                    fresh.insert(k.clone(), todo.len());
                    todo.push((k.clone(), text));
                }
                p.push((k, hit));
            }
            plan.push(p);
        }
        let reused: usize = plan.iter().flatten().filter(|(_, h)| h.is_some()).count();
        report.chunks_reused += reused;
        progress.chunks_done(reused);
        let t = Instant::now();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(todo.len());
        for group in todo.chunks(self.opts.embed_batch.max(1)) {
            if self
                .opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(EngineError::Cancelled);
            }
            let texts: Vec<&str> = group.iter().map(|(_, t)| t.as_str()).collect();
            let out = self.embedder.embed(&texts)?;
            if out.len() != texts.len() || out.iter().any(|v| v.len() != dim) {
                return Err(EngineError::Embed(excerpt_core::EmbedError::Inference {
                    message: format!(
                        "embedder returned {} vectors for {} texts, or of the wrong dimension",
                        out.len(),
                        texts.len()
                    ),
                }));
            }
            vectors.extend(out);
            progress.chunks_done(group.len());
        }
        report.chunks_embedded += todo.len();
        report.embed_seconds += t.elapsed().as_secs_f64();
        for (doc, p) in batch.docs.into_iter().zip(plan) {
            let mut flat = Vec::with_capacity(doc.chunks.len() * dim);
            for (k, hit) in p {
                match hit {
                    Some(key) => match snap.vector(key) {
                        Some(v) => flat.extend_from_slice(v),
                        None => {
                            return Err(EngineError::BadRequest(format!(
                                "internal: cached vector {key:?} missing from the snapshot"
                            )))
                        }
                    },
                    None => flat.extend_from_slice(&vectors[fresh[&k]]),
                }
            }
            writer.put(doc, flat)?;
        }
        let stats = writer.commit()?;
        progress.committed(stats.generation);
        Ok(())
    }
}
