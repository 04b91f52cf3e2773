//! [`run_eval`]: a query set through the engine, every strategy at every budget.
//!
//! One module per stage, run in order by [`run_eval`]: `validate` (options and input
//! files), `ingest` (the corpus into the index), `query` (every query through retrieval
//! and every strategy at every budget, results files streamed) and `write` (metrics and
//! the report files). Each stage takes the previous stages' typed outputs. Below them,
//! `accumulate` holds what one strategy at one budget gathers, `answerer` the
//! answer-level evaluation and `options` the run's options; no module imports from a
//! stage after it.

mod accumulate;
mod answerer;
mod export;
mod ingest;
mod options;
mod query;
mod validate;
mod write;

use std::time::Instant;

use excerpt::{Engine, IngestProgress};

pub use options::{max_pieces, EvalOptions, CHARS_PER_PIECE, CHARS_PER_TOKEN, DEFAULT_BUDGETS};
use validate::Validated;

use crate::report::EvalReport;
use crate::EvalError;

/// Runs an evaluation in four stages: validate (options and input files, before anything
/// is written), ingest, query, write.
///
/// Ingests `opts.corpus` into the engine's index (incremental: a second run on the same
/// corpus embeds nothing) and checks the index then holds exactly the corpus (same ids,
/// same texts; another document in it is an error: use a fresh index directory). The
/// corpus is a `corpus.jsonl`, or a folder of documents ingested as `excerpt ingest`
/// ingests it (ids are the files' paths relative to it; the index must then hold one
/// document per supported file, files the ingest skips as empty or binary aside). Each
/// query is retrieved once (restricted to its `scope`, or in the page format its `doc`,
/// when it has one) and assembled by
/// every strategy at every budget; each result is appended at once, flushed, to
/// `out/results-<strategy>-<budget>.jsonl` in the eval format. A query whose retrieval or
/// assembly fails is recorded in [`EvalReport::failures`] and counts as missing; if every
/// query fails, the run fails. Then the metrics are computed natively (the coverage
/// numbers are those the reference scorer prints for each results file, unbudgeted: the
/// budget is the engine's token budget; for a page-format set, `text_recall` and
/// `page_hit` are those `score_pdf.py --budget-chars` prints at budget ×
/// [`CHARS_PER_TOKEN`] characters) and `report.json`, `report.md` and
/// `recall-vs-budget.svg` are written to `out`.
///
/// Latency is the wall time of `retrieve` (embedding the query included) plus
/// `assemble`, per strategy and budget.
///
/// With [`EvalOptions::answer`], every context of a query that has a reference `answer`
/// is also sent to the chat endpoint with the prompt of [`crate::answer`] (queries
/// without one are skipped and counted). Requests go in batches, at most
/// `max_concurrency` in flight, identical prompts of a batch once; each answer is scored
/// (token F1, exact match) and appended to `out/answers-<strategy>-<budget>.jsonl` as
/// its batch completes. A request that still fails after the client's retries fails
/// the run with [`EvalError::Answer`], naming the endpoint: an unreachable or
/// misconfigured endpoint is never scored as wrong answers. The files written up to
/// then stay on disk.
pub fn run_eval(
    engine: &Engine,
    opts: &EvalOptions,
    progress: &dyn IngestProgress,
) -> Result<EvalReport, EvalError> {
    let started = Instant::now();
    let Validated {
        plan,
        corpus,
        answerer,
    } = validate::validate(opts)?;
    std::fs::create_dir_all(&opts.out).map_err(|e| EvalError::io(&opts.out, e))?;
    // The documents the queries are about (page format), which the ingest must not skip.
    let needed = plan
        .pages
        .iter()
        .flatten()
        .map(|q| q.doc.as_str())
        .collect();
    let indexed = ingest::ingest(engine, opts, corpus, &needed, progress)?;
    let queried = query::query(engine, opts, &plan, &indexed, answerer)?;
    write::write(engine, opts, &plan, &indexed, queried, started)
}
