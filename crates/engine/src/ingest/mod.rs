//! Ingest: files or in-memory documents chunked, embedded and committed. The entry
//! points are [`Engine::ingest`] (paths, walked and read on a thread of their own a few
//! files ahead), [`Engine::ingest_documents`] and [`Engine::remove`], with their
//! [`IngestOptions`]. Both ingests run one [`Pipeline`](pipeline::Pipeline) (the open
//! writer, the documents seen, the report), which hands each batch of chunked documents
//! to its [`Flush`](flush::Flush) (contexts, vectors reused or embedded, sentence
//! vectors, the write and the commit).

mod flush;
mod pipeline;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use excerpt_core::Embedder;
use excerpt_index::{IndexConfig, SentenceVectors};
use excerpt_ingest::{
    load_file_with_progress, walk, LoadOptions, ParsedDocument, WalkItem, WalkOptions,
};

use crate::contextualize::{ContextualizeOptions, Contextualizer};
use crate::report::{IngestProgress, IngestReport, Problem};
use crate::{Engine, EngineError};
use flush::{Batch, Flush};
use pipeline::Pipeline;

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
    /// The language of every document of this ingest whose metadata names none (an ISO
    /// 639-1 or 639-3 code or an English name: `de`, `deu`, `German`), recorded as its
    /// ISO 639-3 code under [`excerpt_ingest::LANGUAGE_KEY`] instead of the detected one;
    /// it chooses how BM25 and the sentence route split and stem its words. `None`:
    /// detected per document. A name the analysis does not know is an error.
    pub language: Option<String>,
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
            language: None,
        }
    }
}

/// Why an ingest with late chunking is refused before it starts.
const LATE_CHUNKING_NEEDS_TOKENS: &str = "late chunking needs the token vectors of a local \
     model, and this embedder is a remote endpoint (ingest without --late-chunking)";

/// Files read and parsed ahead of the one being embedded (each holds a whole file's
/// documents in memory until its turn).
const FILES_AHEAD: usize = 2;

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
        let language = match opts.language.as_deref() {
            Some(name) => Some(excerpt_ingest::language_code(name).ok_or_else(|| {
                EngineError::BadRequest(format!(
                    "unknown language {name:?}: give an ISO 639-1 or 639-3 code or an English name (de, deu, German)"
                ))
            })?),
            None => None,
        };
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
            language,
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
