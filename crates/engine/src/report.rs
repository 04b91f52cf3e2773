//! What an ingest reports: its progress events as they happen and its summary at the
//! end. Below both the ingest pipeline and the contextualizer, which fill them in.

use serde::Serialize;

/// Progress events of an ingest (all methods optional). Called from the ingesting thread.
pub trait IngestProgress: Sync {
    /// The walk found `files` files.
    fn files_found(&self, _files: usize) {}
    /// `done` of the `total` pages of the PDF at `path` were read (called after each
    /// page, before the file is chunked).
    fn pages_read(&self, _path: &str, _done: usize, _total: usize) {}
    /// A file was loaded and chunked (or skipped).
    fn file_done(&self, _path: &str) {}
    /// `chunks` more chunks need embedding.
    fn chunks_queued(&self, _chunks: usize) {}
    /// `chunks` more chunks were embedded or reused.
    fn chunks_done(&self, _chunks: usize) {}
    /// `chunks` more chunk contexts were written by the LLM or found in the cache.
    fn contexts_done(&self, _chunks: usize) {}
    /// A commit made generation `generation` visible.
    fn committed(&self, _generation: u64) {}
}

/// An [`IngestProgress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;
impl IngestProgress for NoProgress {}

/// A file or line that was not ingested, and why.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    /// The path (with `:line` for JSONL lines).
    pub path: String,
    /// The reason.
    pub reason: String,
}

/// What an ingest did.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// Files ingested, but not quite as written (front matter refused and kept as text).
    pub warnings: Vec<Problem>,
    /// Documents removed because their source file is gone (`prune`).
    pub pruned: Vec<String>,
    /// The ingest was cancelled (`IngestOptions::cancel`, Ctrl-C in the CLI): files
    /// after that point were not read, and of the documents read only those wholly
    /// embedded by then were committed.
    pub interrupted: bool,
    /// Documents read but not committed because the ingest was interrupted before they
    /// were embedded (not counted as added or updated).
    pub left_out: Vec<String>,
    /// Chunks embedded by the model.
    pub chunks_embedded: usize,
    /// Chunks whose vector was reused from the index (same text, same model).
    pub chunks_reused: usize,
    /// Seconds spent embedding chunks.
    pub embed_seconds: f64,
    /// Seconds the embedding side waited for files to be read and parsed (they are read
    /// on a thread of their own, ahead of it): with `seconds`, the encoder's idle share
    /// while files remained.
    pub wait_for_files_seconds: f64,
    /// Sentences embedded and stored (`sentence_vectors`).
    pub sentences_embedded: usize,
    /// Seconds spent embedding sentences.
    pub sentence_embed_seconds: f64,
    /// Chunks whose context the LLM wrote (`--contextualize`).
    pub chunks_contextualized: usize,
    /// Chunks whose context came from the cache of earlier answers.
    pub context_cache_hits: usize,
    /// Prompt tokens the LLM reported for those requests.
    pub llm_prompt_tokens: u64,
    /// Completion tokens the LLM reported for those requests.
    pub llm_completion_tokens: u64,
    /// Seconds spent getting contexts.
    pub contextualize_seconds: f64,
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
