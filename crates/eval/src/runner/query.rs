//! The query stage: every query retrieved once and assembled by every strategy at every
//! budget, each result appended to its file and scored, answers asked for in batches.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use excerpt::{Engine, QueryRequest};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::accumulate::{Acc, AnswerAcc, IndexVectors, Scoring};
use super::answerer::{has_reference, AnswerJob, Answerer};
use super::export::{html_question, html_run, Exporter};
use super::ingest::Indexed;
use super::options::EvalOptions;
use super::validate::{Plan, RunSpec};
use crate::answer::answer_prompt;
use crate::format::{PageQueryLine, QueryLine};
use crate::html::HtmlQuestion;
use crate::report::QueryFailure;
use crate::EvalError;

/// What the query stage leaves for the write stage.
pub(super) struct Queried {
    /// One accumulator per run, in [`Plan::runs`] order, its files complete.
    pub(super) accs: Vec<Acc>,
    /// Queries whose retrieval or assembly failed.
    pub(super) failures: Vec<QueryFailure>,
    /// The answer client and its totals, with answer-level evaluation.
    pub(super) answerer: Option<Answerer>,
    /// Every query with its contexts, for the HTML report (`--html`).
    pub(super) html: Option<Vec<HtmlQuestion>>,
}

/// Query stage: creates (truncates) every results and answers file, then runs each
/// query once through retrieval and through every strategy at every budget, appending
/// each result to its file and scoring it; answers are asked for in batches. Fails when
/// every query failed.
pub(super) fn query(
    engine: &Engine,
    opts: &EvalOptions,
    plan: &Plan,
    indexed: &Indexed,
    mut answerer: Option<Answerer>,
) -> Result<Queried, EvalError> {
    let queries = &plan.queries;
    let mut accs = open_outputs(&opts.out, &plan.runs, queries.len(), plan.pages.is_some())?;
    let scoring = Scoring {
        texts: &indexed.texts,
        vectors: IndexVectors(&indexed.contents),
        boundaries: &indexed.boundaries,
    };
    let bar = query_bar(opts.quiet, queries.len());
    let mut exporter = opts
        .export
        .then(|| Exporter::create(&opts.out))
        .transpose()?;
    let mut html: Option<Vec<HtmlQuestion>> = opts.html.is_some().then(Vec::new);

    let mut failures: Vec<QueryFailure> = Vec::new();
    let mut retrieved_ok = 0usize;
    for (qi, q) in queries.iter().enumerate() {
        let page = plan.pages.as_ref().and_then(|p| p.get(qi));
        if let Some(h) = html.as_mut() {
            h.push(html_question(q, page, &scoring));
        }
        let req = query_request(opts, q);
        let t = Instant::now();
        let retrieved = engine.retrieve(&req);
        let retrieve_ms = t.elapsed().as_secs_f64() * 1e3;
        let retrieved = match retrieved {
            Ok(r) => r,
            Err(e) => {
                failures.push(QueryFailure {
                    query_id: q.id.clone(),
                    strategy: None,
                    budget: None,
                    message: e.to_string(),
                });
                for acc in &mut accs {
                    acc.record_failure(q, page, &scoring);
                }
                bar.inc(1);
                continue;
            }
        };
        retrieved_ok += 1;
        let one = OneQuery {
            query: q,
            index: qi,
            page,
            retrieve_ms,
        };
        let sinks = Sinks {
            exporter: exporter.as_mut(),
            html: html.as_mut().and_then(|h| h.last_mut()),
            answerer: answerer.as_mut(),
            failures: &mut failures,
        };
        assemble_runs(engine, &one, &retrieved, &mut accs, &scoring, sinks)?;
        if let Some(x) = exporter.as_mut() {
            x.finish_question(q, &scoring)?;
        }
        bar.inc(1);
        if let Some(a) = answerer.as_mut() {
            if a.pending.len() >= a.batch_size() {
                bar.set_message(format!("answering {}", a.pending.len()));
                a.flush(&mut accs, queries)?;
                bar.set_message("");
            }
        }
    }
    if let Some(a) = answerer.as_mut() {
        bar.set_message(format!("answering {}", a.pending.len()));
        a.flush(&mut accs, queries)?;
    }
    bar.finish_and_clear();
    if let Some(x) = exporter {
        x.finish()?;
    }
    if retrieved_ok == 0 {
        if let Some(f) = failures.first() {
            return Err(EvalError::Invalid(format!(
                "every query failed; the first, {:?}: {}",
                f.query_id, f.message
            )));
        }
    }
    Ok(Queried {
        accs,
        failures,
        answerer,
        html,
    })
}

/// One query of the stage: its line, its position, its page evidence (page-format
/// sets), and how long its retrieval took.
struct OneQuery<'a> {
    query: &'a QueryLine,
    index: usize,
    page: Option<&'a PageQueryLine>,
    retrieve_ms: f64,
}

/// Where a query's contexts go besides the accumulators: the export, the HTML report's
/// question, the answer jobs, and the failures.
struct Sinks<'a> {
    exporter: Option<&'a mut Exporter>,
    html: Option<&'a mut HtmlQuestion>,
    answerer: Option<&'a mut Answerer>,
    failures: &'a mut Vec<QueryFailure>,
}

/// Assembles query `one` from what its retrieval found with every run's strategy and
/// budget, recording and scoring each context (a failure is recorded as one), exporting
/// it, and queueing its answer job when the query has a reference answer.
fn assemble_runs(
    engine: &Engine,
    one: &OneQuery<'_>,
    retrieved: &excerpt::Retrieved,
    accs: &mut [Acc],
    scoring: &Scoring<'_>,
    mut sinks: Sinks<'_>,
) -> Result<(), EvalError> {
    let (q, page) = (one.query, one.page);
    for (ai, acc) in accs.iter_mut().enumerate() {
        let t = Instant::now();
        let context = engine.assemble(&q.query, retrieved, &acc.config, acc.budget);
        let ms = one.retrieve_ms + t.elapsed().as_secs_f64() * 1e3;
        let context = match context {
            Ok(c) => c,
            Err(e) => {
                sinks.failures.push(QueryFailure {
                    query_id: q.id.clone(),
                    strategy: Some(acc.label.clone()),
                    budget: Some(acc.budget),
                    message: e.to_string(),
                });
                acc.record_failure(q, page, scoring);
                continue;
            }
        };
        acc.record(q, page, &context, ms, scoring)?;
        if let Some(x) = sinks.exporter.as_deref_mut() {
            x.record(q, &acc.label, acc.budget, &context, scoring)?;
        }
        if let Some(h) = sinks.html.as_deref_mut() {
            h.runs
                .push(html_run(q, &acc.label, acc.budget, &context, scoring));
        }
        if let Some(a) = sinks.answerer.as_deref_mut().filter(|_| has_reference(q)) {
            a.pending.push(AnswerJob {
                acc: ai,
                query: one.index,
                user: answer_prompt(&q.query, &context),
            });
        }
    }
    Ok(())
}

/// Creates (truncates) the results file, and the answers file if any, of every run in
/// order, and an empty accumulator for each (gathering page-format figures with
/// `pages`).
fn open_outputs(
    out: &Path,
    runs: &[RunSpec],
    queries: usize,
    pages: bool,
) -> Result<Vec<Acc>, EvalError> {
    let create = |file: &str| -> Result<(PathBuf, BufWriter<File>), EvalError> {
        let path = out.join(file);
        let writer = BufWriter::new(File::create(&path).map_err(|e| EvalError::io(&path, e))?);
        Ok((path, writer))
    };
    let mut accs = Vec::with_capacity(runs.len());
    for run in runs {
        let (path, out) = create(&run.results_file)?;
        let answers = match &run.answers_file {
            Some(file) => {
                let (path, out) = create(file)?;
                Some(AnswerAcc {
                    file: file.clone(),
                    path,
                    out,
                    answered: 0,
                    f1_sum: 0.0,
                    em: 0,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                })
            }
            None => None,
        };
        accs.push(Acc {
            label: run.label.clone(),
            config: run.config,
            budget: run.budget,
            file: run.results_file.clone(),
            path,
            out,
            scores: Vec::with_capacity(queries),
            at_chars: Vec::with_capacity(queries),
            capped: Vec::with_capacity(queries),
            pages: pages.then(|| Vec::with_capacity(queries)),
            pages_capped: pages.then(|| Vec::with_capacity(queries)),
            tokens: Vec::with_capacity(queries),
            latency_ms: Vec::with_capacity(queries),
            intra: Vec::new(),
            boundary_on: 0,
            boundary_n: 0,
            answers,
        });
    }
    Ok(accs)
}

/// The progress bar of the query stage (hidden with `quiet`).
fn query_bar(quiet: bool, queries: usize) -> ProgressBar {
    let target = if quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(Some(queries as u64), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} queries [{bar:30}] {pos}/{len}  {per_sec}  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// The retrieval request of one query: the run's mode, fusion and candidates, restricted
/// to the query's `scope` when it has a non-empty one (a page-format query's is its
/// `doc`).
fn query_request(opts: &EvalOptions, q: &QueryLine) -> QueryRequest {
    let mut req = QueryRequest::new(q.query.clone());
    req.mode = opts.mode;
    req.fusion = opts.fusion;
    req.candidates = opts.candidates;
    if let Some(scope) = q.scope.as_ref().filter(|s| !s.is_empty()) {
        req.filter.doc_ids = scope.clone();
    }
    req
}
