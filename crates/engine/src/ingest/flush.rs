//! A batch's flush ([`Flush`]): the documents chunked by the pipeline ([`Batch`]) get
//! their chunk contexts (with a contextualizer), their chunks' vectors (those the index
//! holds for the same text reused, the rest embedded in groups in a thread pool of the
//! ingest's own), their sentence vectors when asked for (embedded, or pooled from the
//! chunks' token vectors with late chunking), are written and committed. An interrupted
//! batch keeps the documents wholly embedded.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use excerpt_core::{content_hash, indexed_text, Document, Embedder};
use excerpt_index::{IndexConfig, SentenceVectors};

use super::{IngestOptions, LATE_CHUNKING_NEEDS_TOKENS};
use crate::backend::{Sink, Written};
use crate::contextualize::Contextualizer;
use crate::report::{IngestProgress, IngestReport};
use crate::EngineError;

/// Documents chunked and waiting for vectors.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) docs: Vec<Document>,
    /// Per document: `Some(true)` when counted as added, `Some(false)` as updated, `None`
    /// when the write itself counts it (PostgreSQL).
    pub(super) counted: Vec<Option<bool>>,
    pub(super) chunks: usize,
}

/// What flushes the batches of one run: the embedder, the index config, the options,
/// the sentence vectors made and the contextualizer.
pub(super) struct Flush<'a> {
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) config: IndexConfig,
    pub(super) opts: &'a IngestOptions,
    /// The sentence vectors this run makes (the options', else the index's).
    pub(super) sentence_vectors: Option<SentenceVectors>,
    /// Writes chunk contexts before embedding, when the index has them.
    pub(super) contextualizer: Option<Contextualizer>,
}

impl Flush<'_> {
    pub(super) fn cancelled(&self) -> bool {
        self.opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// One vector per sentence of each document, concatenated per document; identical
    /// sentence texts are embedded once.
    pub(super) fn embed_sentences(
        &self,
        docs: &[Document],
        report: &mut IngestReport,
    ) -> Result<Vec<Vec<f32>>, EngineError> {
        let t = Instant::now();
        let mut slot: HashMap<&str, usize> = HashMap::new();
        let mut texts: Vec<&str> = Vec::new();
        let plan: Vec<Vec<usize>> = docs
            .iter()
            .map(|d| {
                d.sentences
                    .iter()
                    .map(|r| {
                        let text = r.slice(&d.text);
                        *slot.entry(text).or_insert_with(|| {
                            texts.push(text);
                            texts.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
        for group in texts.chunks(self.opts.embed_batch.max(1)) {
            vectors.extend(self.embed_group(group)?);
        }
        report.sentences_embedded += texts.len();
        report.sentence_embed_seconds += t.elapsed().as_secs_f64();
        Ok(plan
            .into_iter()
            .map(|p| {
                p.into_iter()
                    .flat_map(|i| vectors[i].iter().copied())
                    .collect()
            })
            .collect())
    }

    /// Late chunking, one forward pass per chunk of each document (its indexed text,
    /// header included, from `inputs` as [`Flush::chunk_inputs`] made them) giving, per document, the vector of each chunk (as embedding
    /// gives it) and one vector per sentence, concatenated: the mean of the final token
    /// vectors of the sentence's tokens, normalised; a sentence split over two chunks
    /// pools its tokens from both. A sentence no token reached (cut off by the model's
    /// sequence limit) gets a zero vector: cosine 0. `None` when the ingest was
    /// cancelled between two groups.
    #[allow(clippy::type_complexity)]
    pub(super) fn pool_sentences(
        &self,
        docs: &[Document],
        inputs: &[ChunkInputs],
        report: &mut IngestReport,
    ) -> Result<Option<(Vec<Vec<Vec<f32>>>, Vec<Vec<f32>>)>, EngineError> {
        let t = Instant::now();
        let dim = self.config.dimension;
        // Per chunk: its indexed text, the spans of its sentences in that text, and
        // which (document, sentence) each span is.
        let mut texts: Vec<&str> = Vec::new();
        let mut spans: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut owners: Vec<(usize, Vec<usize>)> = Vec::new();
        for (di, (d, doc_inputs)) in docs.iter().zip(inputs).enumerate() {
            for (c, (_, text)) in d.chunks.iter().zip(doc_inputs) {
                let (start, end) = (c.range.byte_start, c.range.byte_end);
                let prefix = text.len() - (end - start);
                let first = d.sentences.partition_point(|r| r.byte_end <= start);
                let (mut sp, mut idx) = (Vec::new(), Vec::new());
                for (i, r) in d.sentences.iter().enumerate().skip(first) {
                    if r.byte_start >= end {
                        break;
                    }
                    let a = r.byte_start.max(start) - start + prefix;
                    let b = r.byte_end.min(end) - start + prefix;
                    sp.push((a, b));
                    idx.push(i);
                }
                texts.push(text);
                spans.push(sp);
                owners.push((di, idx));
            }
        }
        let mut sums: Vec<Vec<(Vec<f32>, u32)>> = docs
            .iter()
            .map(|d| vec![(vec![0f32; dim], 0u32); d.sentences.len()])
            .collect();
        let mut chunk_vectors: Vec<Vec<Vec<f32>>> = docs
            .iter()
            .map(|d| Vec::with_capacity(d.chunks.len()))
            .collect();
        let group = self.opts.embed_batch.max(1);
        for ((ts, sps), own) in texts
            .chunks(group)
            .zip(spans.chunks(group))
            .zip(owners.chunks(group))
        {
            if self.cancelled() {
                return Ok(None);
            }
            let Some(pools) = in_ingest_pool(|| self.embedder.pool_spans(ts, sps))? else {
                return Err(EngineError::Unsupported(LATE_CHUNKING_NEEDS_TOKENS.into()));
            };
            let fits = pools.len() == ts.len()
                && pools.iter().zip(sps).all(|(p, s)| {
                    p.vector.len() == dim
                        && p.spans.len() == s.len()
                        && p.spans.iter().all(|x| x.sum.len() == dim)
                });
            if !fits {
                return Err(EngineError::Embed(excerpt_core::EmbedError::Inference {
                    message: "embedder returned pools of the wrong shape for late chunking".into(),
                }));
            }
            for (pooled, (di, idx)) in pools.into_iter().zip(own) {
                chunk_vectors[*di].push(pooled.vector);
                for (p, &i) in pooled.spans.into_iter().zip(idx) {
                    let (sum, n) = &mut sums[*di][i];
                    sum.iter_mut().zip(&p.sum).for_each(|(a, b)| *a += b);
                    *n += p.tokens;
                }
            }
        }
        let sentences = sums
            .into_iter()
            .map(|doc| {
                report.sentences_embedded += doc.len();
                doc.into_iter()
                    .flat_map(|(mut v, n)| {
                        if n > 0 {
                            excerpt_core::normalize(&mut v);
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        report.embed_seconds += t.elapsed().as_secs_f64();
        Ok(Some((chunk_vectors, sentences)))
    }

    /// Embeds one group of texts (unless the ingest was cancelled), checking the
    /// embedder returned one vector of the index's dimension per text.
    pub(super) fn embed_group(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EngineError> {
        let dim = self.config.dimension;
        let out = in_ingest_pool(|| self.embedder.embed(texts))?;
        if out.len() != texts.len() || out.iter().any(|v| v.len() != dim) {
            return Err(EngineError::Embed(excerpt_core::EmbedError::Inference {
                message: format!(
                    "embedder returned {} vectors for {} texts, or of the wrong dimension",
                    out.len(),
                    texts.len()
                ),
            }));
        }
        Ok(out)
    }

    pub(super) fn key(&self, text: &str) -> String {
        content_hash(&[self.config.model_id.as_bytes(), text.as_bytes()])
    }

    /// Embeds and writes a batch of documents, then commits: chunk contexts first (with
    /// a contextualizer), vectors the index already holds for the same text reused, the
    /// rest embedded in groups (an interrupted batch keeps the documents wholly
    /// embedded), sentence vectors when asked for.
    pub(super) fn flush(
        &mut self,
        writer: &mut dyn Sink,
        mut batch: Batch,
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<(), EngineError> {
        if batch.docs.is_empty() {
            return Ok(());
        }
        if let Some(cx) = self.contextualizer.as_mut() {
            cx.fill(
                &mut batch.docs,
                self.embedder.token_counter(),
                self.opts.cancel.as_deref(),
                report,
                progress,
            )?;
        }
        let dim = self.config.dimension;
        let headers = self.config.headers;
        let inputs = self.chunk_inputs(&batch.docs);
        let wanted: Vec<&String> = inputs.iter().flatten().map(|(k, _)| k).collect();
        let stored = writer.stored_vectors(&wanted, &|t| self.key(t), headers)?;
        let (todo, fresh, reused) = texts_to_embed(&inputs, &stored);
        report.chunks_reused += reused;
        progress.chunks_done(reused);
        let late = self.sentence_vectors == Some(SentenceVectors::Late);
        let mut late_sentences: Option<Vec<Vec<f32>>> = None;
        let vectors = if late {
            let Some((fresh_vectors, sentences)) =
                self.late_vectors(&batch.docs, &inputs, &todo, report, progress)?
            else {
                // Interrupted: sentence vectors are all or nothing, so is the batch.
                report.interrupted = true;
                report.left_out.extend(batch.docs.into_iter().map(|d| d.id));
                return Ok(());
            };
            late_sentences = Some(sentences);
            fresh_vectors
        } else {
            self.embed_texts(&todo, report, progress)?
        };
        let complete = |chunks: &Vec<(String, String)>| {
            chunks.iter().all(|(k, _)| {
                stored.contains_key(k) || fresh.get(k.as_str()).is_some_and(|&i| i < vectors.len())
            })
        };
        let keep: Vec<bool> = inputs.iter().map(complete).collect();
        let (docs, kept_inputs) = leave_out_incomplete(batch, &inputs, keep, report);
        if docs.is_empty() {
            return Ok(());
        }
        let mut sentence_vectors = if let Some(sentences) = late_sentences {
            // Every chunk had its vector from the pass, so every document was kept.
            if sentences.len() != docs.len() {
                return Err(EngineError::Internal(
                    "late chunking lost track of a document".into(),
                ));
            }
            sentences
        } else if self.sentence_vectors.is_some() {
            if self.cancelled() {
                // Sentence vectors are all or nothing per document: an interrupted batch
                // that still needs them commits nothing more.
                report.interrupted = true;
                report.left_out.extend(docs.into_iter().map(|d| d.id));
                return Ok(());
            }
            self.embed_sentences(&docs, report)?
        } else {
            Vec::new()
        }
        .into_iter();
        let sentence_vectors_on = self.sentence_vectors.is_some();
        let chunk_vector = |k: &str| match stored.get(k) {
            Some(v) => v.as_slice(),
            None => vectors[fresh[k]].as_slice(),
        };
        for (doc, chunks) in docs.into_iter().zip(kept_inputs) {
            let sentences = if sentence_vectors_on {
                sentence_vectors.next()
            } else {
                None
            };
            write_doc(writer, doc, chunks, &chunk_vector, dim, sentences, report)?;
        }
        let generation = writer.commit()?;
        progress.committed(generation);
        Ok(())
    }

    /// Late chunking: one forward pass per chunk gives the vectors of the texts `todo`
    /// (by key) and, per document of `docs`, its sentences' vectors; `None` when the
    /// ingest was cancelled during the pass.
    pub(super) fn late_vectors(
        &self,
        docs: &[Document],
        inputs: &[ChunkInputs],
        todo: &[(&str, &str)],
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<Option<(Rows, Rows)>, EngineError> {
        let Some((chunk_vectors, sentences)) = self.pool_sentences(docs, inputs, report)? else {
            return Ok(None);
        };
        let mut by_key: HashMap<&str, &Vec<f32>> = HashMap::new();
        for (doc_inputs, doc_vectors) in inputs.iter().zip(&chunk_vectors) {
            for ((k, _), v) in doc_inputs.iter().zip(doc_vectors) {
                by_key.entry(k.as_str()).or_insert(v);
            }
        }
        let fresh: Option<Vec<Vec<f32>>> = todo
            .iter()
            .map(|(k, _)| by_key.get(k).map(|v| (*v).clone()))
            .collect();
        let fresh = fresh.ok_or_else(|| {
            EngineError::Internal("late chunking gave no vector for a chunk".into())
        })?;
        report.chunks_embedded += fresh.len();
        progress.chunks_done(fresh.len());
        Ok(Some((fresh, sentences)))
    }

    /// Per document, per chunk: its indexed text and the key of its embedding input.
    pub(super) fn chunk_inputs(&self, docs: &[Document]) -> Vec<ChunkInputs> {
        let headers = self.config.headers;
        docs.iter()
            .map(|doc| {
                doc.chunks
                    .iter()
                    .map(|c| {
                        let text = indexed_text(doc, c, headers);
                        (self.key(&text), text)
                    })
                    .collect()
            })
            .collect()
    }

    /// The vectors of the texts of `todo` (key, text), embedded in groups of
    /// `embed_batch`; cancelled, the groups embedded so far (the report says it was
    /// interrupted).
    pub(super) fn embed_texts(
        &self,
        todo: &[(&str, &str)],
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<Vec<Vec<f32>>, EngineError> {
        let t = Instant::now();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(todo.len());
        for group in todo.chunks(self.opts.embed_batch.max(1)) {
            if self.cancelled() {
                // Interrupted: the groups embedded so far are kept, and the documents
                // whose every chunk has a vector are committed.
                report.interrupted = true;
                break;
            }
            let texts: Vec<&str> = group.iter().map(|(_, t)| *t).collect();
            vectors.extend(self.embed_group(&texts)?);
            progress.chunks_done(group.len());
        }
        report.chunks_embedded += vectors.len();
        report.embed_seconds += t.elapsed().as_secs_f64();
        Ok(vectors)
    }
}

/// A document's chunks as embedding inputs: (key, indexed text) per chunk.
type ChunkInputs = Vec<(String, String)>;

/// Vectors, one per text or per document, each a `Vec`.
type Rows = Vec<Vec<f32>>;

/// Runs `work` (embedding documents) in a thread pool of its own, as many threads as
/// rayon's global pool, made on first use; in the caller's pool when one cannot be made.
/// Queries run their searches and embedding in the global pool: a server ingesting
/// while it answers would otherwise queue each step of a document batch's forward pass
/// behind the queries' tasks (the two pools then share the cores as the system
/// schedules them, as threads did before queries moved into the pool).
fn in_ingest_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|i| format!("excerpt-ingest-{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// The texts of `inputs` to embed: those whose key `stored` lacks, deduplicated by key,
/// as (key, text); each such key's place among them; and how many chunks reuse a stored
/// vector.
fn texts_to_embed<'a>(
    inputs: &'a [ChunkInputs],
    stored: &HashMap<String, Vec<f32>>,
) -> (Vec<(&'a str, &'a str)>, HashMap<&'a str, usize>, usize) {
    let mut todo: Vec<(&str, &str)> = Vec::new();
    let mut fresh: HashMap<&str, usize> = HashMap::new();
    let mut reused = 0usize;
    for (k, text) in inputs.iter().flatten() {
        if stored.contains_key(k) {
            reused += 1;
        } else if !fresh.contains_key(k.as_str()) {
            fresh.insert(k, todo.len());
            todo.push((k, text));
        }
    }
    (todo, fresh, reused)
}

/// Writes one document with its chunks' vectors (`chunk_vector` by key, each of `dim`
/// values) and its sentence vectors, if any; counts in `report` what the write did when
/// the sink says.
fn write_doc<'v>(
    writer: &mut dyn Sink,
    doc: Document,
    chunks: &ChunkInputs,
    chunk_vector: &dyn Fn(&str) -> &'v [f32],
    dim: usize,
    sentences: Option<Vec<f32>>,
    report: &mut IngestReport,
) -> Result<(), EngineError> {
    let mut flat = Vec::with_capacity(doc.chunks.len() * dim);
    for (k, _) in chunks {
        flat.extend_from_slice(chunk_vector(k));
    }
    match writer.put(doc, flat, chunks, sentences)? {
        Some(Written::Added) => report.added += 1,
        Some(Written::Updated) => report.updated += 1,
        Some(Written::Unchanged) => report.unchanged += 1,
        None => {}
    }
    Ok(())
}

/// The documents of `batch` to write, with their chunk inputs: those `keep` marks
/// (wholly embedded); an interrupted batch's others are left out, uncounted, and named
/// in `report`.
fn leave_out_incomplete<'a>(
    batch: Batch,
    inputs: &'a [ChunkInputs],
    keep: Vec<bool>,
    report: &mut IngestReport,
) -> (Vec<Document>, Vec<&'a ChunkInputs>) {
    let mut docs = Vec::with_capacity(batch.docs.len());
    let mut kept_inputs = Vec::with_capacity(inputs.len());
    for ((doc, counted), (chunks, keep)) in batch
        .docs
        .into_iter()
        .zip(batch.counted)
        .zip(inputs.iter().zip(keep))
    {
        if keep {
            docs.push(doc);
            kept_inputs.push(chunks);
            continue;
        }
        match counted {
            Some(true) => report.added -= 1,
            Some(false) => report.updated -= 1,
            None => {}
        }
        report.left_out.push(doc.id);
    }
    (docs, kept_inputs)
}
