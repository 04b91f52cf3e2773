//! Excerpt's evaluation harness: how much of the gold evidence the context covers, at
//! what cost, how coherent it is and how fast it comes.
//!
//! ```text
//! corpus.jsonl or a folder ──ingest──▶ index ─┐
//! queries.jsonl ──▶ retrieve once per query ──▶ assemble per strategy × budget
//!        ──▶ DIR/results-<strategy>-<budget>.jsonl   (the eval format, one line per query)
//!        ──▶ metrics ──▶ DIR/report.json, DIR/report.md, DIR/recall-vs-budget.svg
//!        ──▶ (optional) chat endpoint ──▶ DIR/answers-<strategy>-<budget>.jsonl ──▶ F1, EM
//! ```
//!
//! - [`format`](mod@format): the tool-neutral file format: JSONL files of corpus
//!   documents (`id`, `text`), queries (`id`, `query`, gold `evidence` spans, optional
//!   reference `answer` and `scope`) and results (per query, the pieces handed to the
//!   LLM), with readers that report line-numbered errors. Offsets are half-open
//!   character offsets (Unicode scalar values), as Python string indices. Queries may
//!   instead be in the page format (financebench-dev: one `doc` per query, evidence as
//!   `{page, text}`), detected per file.
//! - [`metrics`]: pure functions. The coverage metrics (`recall`, `hit`, `full`,
//!   `precision`, `chars`, `pieces`, `bad_text`, `queries`, `missing`, with an optional
//!   character budget) reproduce the reference scorer exactly (a Python script kept with
//!   the tests, `tests/data/score_context.py`; a test runs it on the same files and
//!   compares). Also mean LLM tokens, intra-piece coherence (pairwise cosine of chunk
//!   vectors inside a piece), boundary coherence (pieces starting and ending on sentence
//!   boundaries) and latency percentiles ([`Latency`], also used by `excerpt bench`).
//! - [`pages`]: the page format's metrics, `text_recall` (share of the evidence's word
//!   4-grams in the context) and `page_hit` (a piece covers an evidence page), exactly as
//!   the reference scorer `tests/data/score_pdf.py` computes them.
//! - [`run_eval`]: in four stages (validate, ingest, query, write), checks the options
//!   and inputs, ingests the corpus (a `corpus.jsonl`, or a folder of documents ingested
//!   as `excerpt ingest` does) into an [`excerpt::Engine`]'s index (incremental; the
//!   index must hold exactly the corpus), runs every query once through retrieval
//!   and then through each strategy at each budget, streams the results files, and
//!   writes the report and the chart.
//! - [`answer`]: optional answer-level evaluation. An OpenAI-compatible chat endpoint
//!   ([`ChatConfig`] in [`EvalOptions::answer`]) answers each query that has a reference
//!   `answer` from each strategy's context; the answers are scored by SQuAD-style token
//!   F1 and exact match. Never part of a default run.
//! - [`report`], [`plot`]: `report.json`, `report.md`, `recall-vs-budget.svg`.

#![forbid(unsafe_code)]

pub mod answer;
pub mod format;
pub mod metrics;
pub mod pages;
pub mod plot;
pub mod report;
mod runner;

use std::path::{Path, PathBuf};

use excerpt_core::ErrorKind;

pub use answer::{exact_match, normalize_tokens, token_f1, AnswerLine, PROMPT_VERSION};
pub use excerpt_embed::ChatConfig;
pub use format::{
    CorpusDoc, Evidence, PageEvidence, PageQueryLine, QueryLine, QuerySet, ResultLine, ResultPiece,
};
pub use metrics::{
    boundary_coherence, intra_coherence, latency, mean, overlap, percentile, piece_coherence,
    score_query, score_results, sentence_boundaries, summarize, union, ChunkVectors, CorpusTexts,
    CoverageSummary, Latency, PieceSpan, QueryScore, SentenceBoundaries,
};
pub use pages::{score_page_query, score_page_results, summarize_pages, PageScore, PageSummary};
pub use report::{
    AnswerMetrics, AnswerRunInfo, EvalReport, Metrics, QueryFailure, RunInfo, StrategyResult,
};
pub use runner::{run_eval, EvalOptions, CHARS_PER_TOKEN, DEFAULT_BUDGETS};

/// Errors of an evaluation run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSONL line does not parse.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// JSON could not be written or a JSON file read.
    #[error("{path}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The inputs or options are unusable.
    #[error("{0}")]
    Invalid(String),
    /// The index holds something other than the corpus (documents missing or changed).
    #[error("{0}")]
    IndexMismatch(String),
    /// The index holds documents that are not in the corpus.
    #[error("the index {} holds {count} documents that are not in the corpus ({sample})", index.display())]
    ForeignDocuments {
        /// The index directory.
        index: PathBuf,
        /// How many documents are foreign.
        count: usize,
        /// Some of their ids.
        sample: String,
    },
    /// The engine failed outside a single query.
    #[error(transparent)]
    Engine(#[from] excerpt::EngineError),
    /// The answer endpoint failed a request after its retries.
    #[error("answer endpoint {endpoint} failed for query {query_id:?} ({strategy} at {budget} tokens): {message}")]
    Answer {
        /// The chat-completions URL.
        endpoint: String,
        /// The query being answered.
        query_id: String,
        /// The strategy whose context was sent.
        strategy: String,
        /// The budget of that context.
        budget: usize,
        /// What the endpoint or the connection said.
        message: String,
    },
    /// The chart could not be drawn.
    #[error("drawing the chart: {0}")]
    Plot(String),
}

impl EvalError {
    /// Whose fault it is: unreadable or malformed inputs and unusable options are
    /// [`ErrorKind::BadInput`]; an index holding another collection
    /// [`ErrorKind::Conflict`]; an answer endpoint that failed
    /// [`ErrorKind::Unavailable`]; the engine's errors report their own kind; files that
    /// cannot be written and charts that cannot be drawn are [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            EvalError::Parse { .. } | EvalError::Json { .. } | EvalError::Invalid(_) => {
                ErrorKind::BadInput
            }
            EvalError::IndexMismatch(_) | EvalError::ForeignDocuments { .. } => ErrorKind::Conflict,
            EvalError::Engine(e) => e.kind(),
            EvalError::Answer { .. } => ErrorKind::Unavailable,
            EvalError::Io { .. } | EvalError::Plot(_) => ErrorKind::Internal,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> EvalError {
        EvalError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
