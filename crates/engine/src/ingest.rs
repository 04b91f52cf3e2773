use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use excerpt_core::{content_hash, indexed_text, Document, Embedder};
use excerpt_index::{IndexConfig, SentenceVectors};
use excerpt_ingest::{
    chunk, load_file_with_progress, walk, ChunkOptions, LoadOptions, ParsedDocument, WalkItem,
    WalkOptions,
};

use crate::backend::{Sink, Written};
use crate::contextualize::{ContextualizeOptions, Contextualizer};
use crate::report::{IngestProgress, IngestReport, Problem};
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
    /// Set to stop early: no further file or document is read, the chunks of the batch
    /// in flight stop being embedded after the current group, the documents wholly
    /// embedded by then are committed, and the report says
    /// [`interrupted`](IngestReport::interrupted) and names the documents
    /// [`left_out`](IngestReport::left_out). (With `contextualize`, a cancel while the
    /// LLM writes contexts is [`EngineError::Cancelled`]; what was committed before
    /// stays.)
    pub cancel: Option<Arc<AtomicBool>>,
    /// Have an LLM write a context for every new chunk (see [`crate::contextualize`]).
    /// Must match the index: one made with contexts needs them on every ingest, with
    /// the same model; one made without cannot get them.
    pub contextualize: Option<ContextualizeOptions>,
    /// Also embed every sentence of each new or changed document and store the vectors,
    /// so the `window` strategy reads them instead of embedding sentences at query time
    /// (more ingest time and index size; see docs/EVAL.md for the trade-off).
    pub sentence_vectors: bool,
    /// With `sentence_vectors`: pool each sentence's vector from the token vectors of the
    /// chunk that holds it (late chunking: one forward pass per chunk, its header
    /// included, instead of one per sentence; needs a local model).
    pub late_chunking: bool,
    /// Make the index mirror the ingested paths ([`Engine::ingest`] only): a document
    /// whose recorded source file lies under one of the paths and no longer exists is
    /// removed in the same commit, and listed in [`IngestReport::pruned`]. A file that
    /// still exists but could not be read this time is kept.
    pub prune: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            walk: WalkOptions::default(),
            load: LoadOptions::default(),
            commit_every_chunks: 2048,
            embed_batch: 64,
            cancel: None,
            contextualize: None,
            sentence_vectors: false,
            late_chunking: false,
            prune: false,
        }
    }
}

/// Documents chunked and waiting for vectors.
#[derive(Default)]
struct Batch {
    docs: Vec<Document>,
    /// Per document: `Some(true)` when counted as added, `Some(false)` as updated, `None`
    /// when the write itself counts it (PostgreSQL).
    counted: Vec<Option<bool>>,
    chunks: usize,
}

/// Why an ingest with late chunking is refused before it starts.
const LATE_CHUNKING_NEEDS_TOKENS: &str = "late chunking needs the token vectors of a local \
     model, and this embedder is a remote endpoint (ingest without --late-chunking)";

impl Engine {
    /// The index config an ingest writes with: the existing index's, checked against the
    /// options, or a new one from the options. An index with chunk contexts needs the
    /// same contextualizer on every ingest; one without cannot get one. Also the
    /// sentence vectors this run makes: those the options ask for, else those the index
    /// was created with ([`IndexConfig::sentence_vectors`]).
    fn ingest_config(
        &self,
        embedder: &dyn Embedder,
        opts: &IngestOptions,
    ) -> Result<(IndexConfig, Option<SentenceVectors>), EngineError> {
        let existing = self.backend.committed_config()?;
        let requested = match (opts.sentence_vectors, opts.late_chunking) {
            (false, _) => None,
            (true, false) => Some(SentenceVectors::Separate),
            (true, true) => Some(SentenceVectors::Late),
        };
        let recorded = existing.as_ref().map_or(requested, |c| c.sentence_vectors);
        let sentence_vectors = requested.or(recorded);
        if sentence_vectors == Some(SentenceVectors::Late)
            && embedder.pool_spans(&[], &[])?.is_none()
        {
            return Err(EngineError::Unsupported(LATE_CHUNKING_NEEDS_TOKENS.into()));
        }
        let contextualizer = opts.contextualize.as_ref().map(|c| c.index_config());
        if let Some(existing) = &existing {
            let dir = self.backend.shown();
            match (&existing.contextualizer, &contextualizer) {
                (Some(e), None) => {
                    return Err(EngineError::ContextsRequired {
                        dir,
                        index: e.to_string(),
                        model: e.model.clone(),
                    })
                }
                (None, Some(_)) => return Err(EngineError::ContextsRefused { dir }),
                (Some(e), Some(r)) if e != r => {
                    return Err(EngineError::ContextualizerMismatch {
                        dir,
                        index: e.to_string(),
                        requested: r.to_string(),
                        model: e.model.clone(),
                    })
                }
                _ => {}
            }
        }
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
        let config = IndexConfig {
            model_id: embedder.model_id().to_string(),
            dimension: embedder.dimension(),
            chunker,
            headers,
            contextualizer,
            sentence_vectors: recorded,
        };
        Ok((config, sentence_vectors))
    }

    /// The directory whose `contextualize/cache.jsonl` caches the answers of
    /// `ingest --contextualize`: the index directory, or for a PostgreSQL index
    /// `$EXCERPT_HOME/pg-indexes/<hash of the URL without its password>` on this
    /// machine (the contexts themselves are stored with the chunks in the database).
    pub fn context_cache_home(&self) -> PathBuf {
        self.backend.context_cache_home()
    }

    /// Opens the writer and everything one ingest run needs.
    fn pipeline<'a>(
        &self,
        opts: &'a IngestOptions,
        progress: &'a dyn IngestProgress,
    ) -> Result<Pipeline<'a>, EngineError> {
        let started = Instant::now();
        let embedder = self.embedder()?;
        let (config, sentence_vectors) = self.ingest_config(embedder.as_ref(), opts)?;
        // An index this run creates (and whether its directory was there): removed
        // again when nothing could be ingested.
        let new_index = self.backend.creates_index();
        let writer = self.backend.open_sink(&config)?;
        let contextualizer = match &opts.contextualize {
            Some(c) => Some(Contextualizer::new(c, &self.context_cache_home())?),
            None => None,
        };
        Ok(Pipeline {
            writer,
            flush: Flush {
                embedder,
                config,
                opts,
                sentence_vectors,
                contextualizer,
            },
            batch: Batch::default(),
            seen: HashSet::new(),
            report: IngestReport::default(),
            progress,
            started,
            new_index,
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
        let mut run = self.pipeline(opts, progress)?;
        let mut files = Vec::new();
        for item in walk(paths, &opts.walk) {
            match item {
                WalkItem::File { path, root } => files.push((path, root)),
                WalkItem::Problem(e) => run.report.failed.push(Problem {
                    path: String::new(),
                    reason: e.to_string(),
                }),
            }
        }
        run.report.files = files.len();
        progress.files_found(files.len());
        // Files are read and parsed on a thread of their own, up to FILES_AHEAD ahead of
        // the one being chunked and embedded, so that the encoder does not wait for a
        // PDF's pages; documents still arrive in walk order.
        let (sender, receiver) = std::sync::mpsc::sync_channel(FILES_AHEAD);
        let cancel = opts.cancel.clone();
        std::thread::scope(|scope| -> Result<(), EngineError> {
            scope.spawn(move || {
                for (path, root) in files {
                    if cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                        break;
                    }
                    let shown = path.display().to_string();
                    let pages_read = |done, total| progress.pages_read(&shown, done, total);
                    let loaded = load_file_with_progress(&path, &root, &opts.load, &pages_read);
                    // The receiver is gone when the ingest stopped (cancelled, or failed).
                    if sender.send((shown, loaded)).is_err() {
                        break;
                    }
                }
            });
            // Dropped when this returns, which stops the reading thread at its next file.
            let receiver = receiver;
            loop {
                if run.interrupted() {
                    break;
                }
                let waiting = Instant::now();
                let Ok((shown, loaded)) = receiver.recv() else {
                    break;
                };
                run.report.wait_for_files_seconds += waiting.elapsed().as_secs_f64();
                run.loaded(&shown, loaded)?;
            }
            Ok(())
        })?;
        // An index this run created holds nothing to prune.
        if opts.prune && !run.interrupted() && run.new_index.is_none() {
            let gone: Vec<String> = self
                .documents()?
                .into_iter()
                .filter(|d| !run.seen.contains(&d.id))
                .filter(|d| d.source.as_deref().is_some_and(|s| source_gone(s, paths)))
                .map(|d| d.id)
                .collect();
            run.prune(gone)?;
        }
        run.finish()
    }

    /// Refuses a document this index cannot store, naming the document and the field:
    /// on PostgreSQL, a NUL character (`\0`) in its id, title, source, text or metadata
    /// (a bad input). A directory index stores any text. Ingests check this themselves
    /// (such a document fails alone); a caller that refuses a whole request for one bad
    /// document checks first.
    pub fn check_storable(&self, doc: &ParsedDocument) -> Result<(), EngineError> {
        self.backend.check_storable(doc)
    }

    /// Ingests documents already loaded in memory (e.g. with
    /// [`excerpt_ingest::load_str`]), through the same chunk, hash, embed and commit
    /// path as [`Engine::ingest`]. Problems are reported under the document id;
    /// `report.files` stays 0. A document id given twice keeps the first one.
    pub fn ingest_documents(
        &self,
        docs: Vec<ParsedDocument>,
        opts: &IngestOptions,
        progress: &dyn IngestProgress,
    ) -> Result<IngestReport, EngineError> {
        let mut run = self.pipeline(opts, progress)?;
        for parsed in docs {
            if run.interrupted() {
                break;
            }
            let shown = parsed.id.clone();
            run.add(parsed, &shown)?;
            progress.file_done(&shown);
        }
        run.finish()
    }

    /// Deletes documents by id; returns the ids that existed. One atomic commit. On a
    /// damaged index, fails with [`excerpt_index::IndexError::Corrupt`] (repair first).
    pub fn remove(&self, ids: &[String]) -> Result<Vec<String>, EngineError> {
        let mut sink = self.backend.existing_sink()?;
        let removed = sink.delete(ids)?;
        sink.commit()?;
        Ok(removed)
    }
}

/// One ingest run: the open writer, the batch waiting for vectors, the report so far.
/// Shared by [`Engine::ingest`] and [`Engine::ingest_documents`].
struct Pipeline<'a> {
    writer: Box<dyn Sink>,
    flush: Flush<'a>,
    batch: Batch,
    seen: HashSet<String>,
    report: IngestReport,
    progress: &'a dyn IngestProgress,
    started: Instant,
    /// `Some(whether the directory existed)` when this run created the index.
    new_index: Option<bool>,
}

/// Files read and parsed ahead of the one being embedded (each holds a whole file's
/// documents in memory until its turn).
const FILES_AHEAD: usize = 2;

impl Pipeline<'_> {
    /// Takes in one file's load: its problems and warnings go to the report, its
    /// documents to [`Pipeline::add`].
    fn loaded(
        &mut self,
        shown: &str,
        loaded: Result<excerpt_ingest::Loaded, excerpt_ingest::IngestError>,
    ) -> Result<(), EngineError> {
        let loaded = match loaded {
            Ok(l) => l,
            Err(e) => {
                let p = Problem {
                    path: shown.to_string(),
                    reason: e.to_string(),
                };
                if e.is_skip() {
                    self.report.skipped.push(p)
                } else {
                    self.report.failed.push(p)
                }
                self.progress.file_done(shown);
                return Ok(());
            }
        };
        for e in loaded.problems {
            self.report.failed.push(Problem {
                path: shown.to_string(),
                reason: e.to_string(),
            });
        }
        for w in loaded.warnings {
            self.report.warnings.push(Problem {
                path: shown.to_string(),
                reason: w,
            });
        }
        for parsed in loaded.documents {
            self.add(parsed, shown)?;
        }
        self.progress.file_done(shown);
        Ok(())
    }

    /// Whether the ingest was cancelled: no further file is read, and what is embedded
    /// by then is committed ([`IngestReport::interrupted`]).
    fn interrupted(&mut self) -> bool {
        if self.flush.cancelled() {
            self.report.interrupted = true;
        }
        self.report.interrupted
    }

    /// Chunks one loaded document and queues it unless its content hash is unchanged;
    /// commits when the batch is full. Per-document problems go to the report under
    /// `shown`.
    fn add(&mut self, parsed: ParsedDocument, shown: &str) -> Result<(), EngineError> {
        if let Err(reason) = excerpt_core::check_document_id(&parsed.id) {
            self.report.failed.push(Problem {
                path: shown.escape_debug().to_string(),
                reason,
            });
            return Ok(());
        }
        if !self.seen.insert(parsed.id.clone()) {
            self.report.failed.push(Problem {
                path: shown.to_string(),
                reason: format!(
                    "duplicate document id {:?}: the first one was kept",
                    parsed.id
                ),
            });
            return Ok(());
        }
        if let Err(reason) = self.writer.check_storable(&parsed) {
            self.report.failed.push(Problem {
                path: shown.to_string(),
                reason,
            });
            return Ok(());
        }
        let config = &self.flush.config;
        let counter = self.flush.embedder.token_counter();
        // Room for the LLM-written context in every chunk's token budget.
        let allowance = config.contextualizer.as_ref().map_or(0, |c| c.max_tokens);
        let opts = ChunkOptions::new(config.chunker)
            .counter(counter)
            .headers(config.headers)
            .extra_tokens(allowance);
        let doc = match chunk(parsed, &opts) {
            Ok(d) => d,
            Err(e) => {
                self.report.failed.push(Problem {
                    path: shown.to_string(),
                    reason: e.to_string(),
                });
                return Ok(());
            }
        };
        let committed = self.writer.committed_hash(&doc.id)?;
        match &committed {
            Some(h) if *h == doc.hash => {
                self.report.unchanged += 1;
                return Ok(());
            }
            _ if self.writer.counts_at_write() => {}
            Some(_) => self.report.updated += 1,
            None => self.report.added += 1,
        }
        let counted = (!self.writer.counts_at_write()).then_some(committed.is_none());
        self.batch.chunks += doc.chunks.len();
        self.progress.chunks_queued(doc.chunks.len());
        self.batch.docs.push(doc);
        self.batch.counted.push(counted);
        if self.batch.chunks >= self.flush.opts.commit_every_chunks {
            let batch = std::mem::take(&mut self.batch);
            self.flush
                .flush(self.writer.as_mut(), batch, &mut self.report, self.progress)?;
        }
        Ok(())
    }

    /// Removes the documents `ids` (staged for the final commit of the directory
    /// index; deleted at once on PostgreSQL), listing them in the report.
    fn prune(&mut self, ids: Vec<String>) -> Result<(), EngineError> {
        self.writer.delete(&ids)?;
        self.report.pruned = ids;
        Ok(())
    }

    /// Commits what is left and completes the report.
    fn finish(mut self) -> Result<IngestReport, EngineError> {
        let batch = std::mem::take(&mut self.batch);
        let nothing_queued = batch.docs.is_empty();
        self.flush
            .flush(self.writer.as_mut(), batch, &mut self.report, self.progress)?;
        if nothing_queued && !self.report.pruned.is_empty() {
            let generation = self.writer.commit()?;
            self.progress.committed(generation);
        }
        self.report.generation = self.writer.generation();
        self.report.documents = self.writer.document_count()?;
        self.report.seconds = self.started.elapsed().as_secs_f64();
        if let Some(dir_existed) = self.new_index {
            if self.report.nothing_ingested() {
                // No empty index left behind, its model and chunker fixed.
                self.writer.discard_new(!dir_existed)?;
            }
        }
        Ok(self.report)
    }
}

struct Flush<'a> {
    embedder: Arc<dyn Embedder>,
    config: IndexConfig,
    opts: &'a IngestOptions,
    /// The sentence vectors this run makes (the options', else the index's).
    sentence_vectors: Option<SentenceVectors>,
    /// Writes chunk contexts before embedding, when the index has them.
    contextualizer: Option<Contextualizer>,
}

impl Flush<'_> {
    fn cancelled(&self) -> bool {
        self.opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// One vector per sentence of each document, concatenated per document; identical
    /// sentence texts are embedded once.
    fn embed_sentences(
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
    fn pool_sentences(
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
    fn embed_group(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EngineError> {
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

    fn key(&self, text: &str) -> String {
        content_hash(&[self.config.model_id.as_bytes(), text.as_bytes()])
    }

    /// Embeds and writes a batch of documents, then commits: chunk contexts first (with
    /// a contextualizer), vectors the index already holds for the same text reused, the
    /// rest embedded in groups (an interrupted batch keeps the documents wholly
    /// embedded), sentence vectors when asked for.
    fn flush(
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
    fn late_vectors(
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
    fn chunk_inputs(&self, docs: &[Document]) -> Vec<ChunkInputs> {
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
    fn embed_texts(
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

/// Whether the file a document was read from (`source`, as recorded at its ingest) lies
/// under one of `paths` and is gone. Paths are compared as given and made absolute
/// against the current directory, so `notes/a.md` is under `notes` and `./notes`.
fn source_gone(source: &str, paths: &[PathBuf]) -> bool {
    let src = Path::new(source);
    let abs = |p: &Path| std::path::absolute(p).ok();
    let under = paths.iter().any(|root| {
        src.starts_with(root)
            || match (abs(src), abs(root)) {
                (Some(s), Some(r)) => s.starts_with(r),
                _ => false,
            }
    });
    under && !src.exists()
}
