//! One ingest run ([`Pipeline`]): the open writer, the documents seen, the batch
//! waiting for vectors and the report so far. It takes in each file's load (problems
//! and warnings to the report), chunks each document and leaves out those whose hash the
//! index already holds (unchanged), batches the others and flushes the batch every
//! `commit_every_chunks` chunks, prunes, and at the end commits (or discards an index it
//! created and filled with nothing).

use std::collections::HashSet;
use std::time::Instant;

use excerpt_ingest::{chunk, ChunkOptions, ParsedDocument};

use super::flush::{Batch, Flush};
use crate::backend::Sink;
use crate::report::{IngestProgress, IngestReport, Problem};
use crate::EngineError;

/// One ingest run: the open writer, the batch waiting for vectors, the report so far.
/// Shared by [`Engine::ingest`] and [`Engine::ingest_documents`].
pub(super) struct Pipeline<'a> {
    pub(super) writer: Box<dyn Sink>,
    pub(super) flush: Flush<'a>,
    pub(super) batch: Batch,
    pub(super) seen: HashSet<String>,
    pub(super) report: IngestReport,
    pub(super) progress: &'a dyn IngestProgress,
    pub(super) started: Instant,
    /// `Some(whether the directory existed)` when this run created the index.
    pub(super) new_index: Option<bool>,
    /// The ISO 639-3 code given to documents whose metadata names no language.
    pub(super) language: Option<&'static str>,
}

impl Pipeline<'_> {
    /// Takes in one file's load: its problems and warnings go to the report, its
    /// documents to [`Pipeline::add`].
    pub(super) fn loaded(
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
    pub(super) fn interrupted(&mut self) -> bool {
        if self.flush.cancelled() {
            self.report.interrupted = true;
        }
        self.report.interrupted
    }

    /// Chunks one loaded document and queues it unless its content hash is unchanged;
    /// commits when the batch is full. Per-document problems go to the report under
    /// `shown`.
    pub(super) fn add(
        &mut self,
        mut parsed: ParsedDocument,
        shown: &str,
    ) -> Result<(), EngineError> {
        if let Some(code) = self.language {
            parsed
                .metadata
                .entry(excerpt_ingest::LANGUAGE_KEY.to_string())
                .or_insert_with(|| code.into());
        }
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
    pub(super) fn prune(&mut self, ids: Vec<String>) -> Result<(), EngineError> {
        self.writer.delete(&ids)?;
        self.report.pruned = ids;
        Ok(())
    }

    /// Commits what is left and completes the report.
    pub(super) fn finish(mut self) -> Result<IngestReport, EngineError> {
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
