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
//!   compares), and so do the readability figures (`piece_chars`, `whole`, `tiny`,
//!   `in_order`, `grouped`) and, with `--max-pieces`, everything counted over only the
//!   first K pieces. Also mean LLM tokens, intra-piece coherence (pairwise cosine of chunk
//!   vectors inside a piece), boundary coherence (pieces starting and ending on sentence
//!   boundaries) and latency percentiles ([`Latency`], also used by `excerpt bench`).
//! - [`pages`]: the page format's metrics, `text_recall` (share of the evidence's word
//!   4-grams in the context) and `page_hit` (a piece covers an evidence page), exactly as
//!   the reference scorer `tests/data/score_pdf.py` computes them (with its
//!   `--max-pieces`, `pieces` and `tiny`).
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
//! - [`html`](mod@html): `--html OUT.html`, the report as one self-contained page: the
//!   figures, the chart, the misses between strategies, and per question the evidence and
//!   every strategy's pieces with the evidence highlighted in them.

#![forbid(unsafe_code)]

pub mod answer;
mod error;
pub mod format;
pub mod html;
pub mod metrics;
pub mod pages;
pub mod plot;
pub mod report;
mod runner;

pub use answer::{exact_match, normalize_tokens, token_f1, AnswerLine, PROMPT_VERSION};
pub use error::EvalError;
pub use excerpt_embed::{ChatConfig, EndpointConfig};
pub use format::{
    CorpusDoc, Evidence, PageEvidence, PageQueryLine, QueryLine, QuerySet, ResultLine, ResultPiece,
};
pub use html::{escape_html, render_html, HtmlEvidence, HtmlPiece, HtmlQuestion, HtmlRun};
pub use metrics::{
    boundary_coherence, clean_end, clean_start, intra_coherence, latency, mean, overlap,
    percentile, piece_coherence, score_query, score_query_limited, score_results,
    score_results_limited, sentence_boundaries, summarize, union, ChunkVectors, CorpusTexts,
    CoverageSummary, Latency, Limits, PieceSpan, QueryScore, SentenceBoundaries, TINY_CHARS,
};
pub use pages::{
    score_page_query, score_page_query_limited, score_page_results, score_page_results_limited,
    summarize_pages, PageScore, PageSummary,
};
pub use report::{
    AnswerMetrics, AnswerRunInfo, EvalReport, Metrics, QueryFailure, RunInfo, StrategyResult,
};
pub use runner::{
    max_pieces, run_eval, EvalOptions, CHARS_PER_PIECE, CHARS_PER_TOKEN, DEFAULT_BUDGETS,
};
