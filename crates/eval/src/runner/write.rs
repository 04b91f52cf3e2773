//! The write stage: every run's metrics, and `report.json`, `report.md` and
//! `recall-vs-budget.svg` in the output directory (and the HTML report, with `--html`).

use std::time::Instant;

use excerpt::Engine;

use super::ingest::Indexed;
use super::options::EvalOptions;
use super::query::Queried;
use super::validate::Plan;
use crate::answer::PROMPT_VERSION;
use crate::html::render_html;
use crate::metrics::round_to;
use crate::plot::recall_vs_budget_svg;
use crate::report::{AnswerRunInfo, EvalReport, RunInfo, StrategyResult};
use crate::EvalError;

/// Write stage: computes every run's metrics and writes `report.json`, `report.md` and
/// `recall-vs-budget.svg` to the output directory, and the HTML report to
/// [`EvalOptions::html`] when set. `started` is when the run began.
pub(super) fn write(
    engine: &Engine,
    opts: &EvalOptions,
    plan: &Plan,
    indexed: &Indexed,
    queried: Queried,
    started: Instant,
) -> Result<EvalReport, EvalError> {
    let Queried {
        accs,
        failures,
        answerer,
        html,
    } = queried;
    let with_reference = plan.with_reference;
    let results: Vec<StrategyResult> = accs
        .into_iter()
        .map(|acc| acc.into_result(with_reference))
        .collect();
    let config = indexed.contents.config();
    let queries = plan.queries.len();
    let report = EvalReport {
        run: RunInfo {
            corpus: opts.corpus.display().to_string(),
            queries_file: opts.queries.display().to_string(),
            query_format: if plan.pages.is_some() {
                "pages"
            } else {
                "spans"
            }
            .to_string(),
            queries,
            documents: indexed.documents,
            index: engine.index_shown(),
            mode: serde_json::to_value(opts.mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{:?}", opts.mode)),
            fusion: serde_json::to_value(opts.fusion).unwrap_or(serde_json::Value::Null),
            candidates: opts.candidates,
            model_id: config.model_id.clone(),
            chunker: config.chunker.to_string(),
            llm_encoding: indexed.llm_encoding.clone(),
            strategies: plan.strategies.iter().map(|(l, _)| l.clone()).collect(),
            budgets: plan.budgets.clone(),
            ingested: indexed.ingested,
            ingest_seconds: round_to(indexed.ingest_seconds, 3),
            seconds: round_to(started.elapsed().as_secs_f64(), 3),
            answer: match (&opts.answer, &answerer) {
                (Some(config), Some(a)) => Some(AnswerRunInfo {
                    endpoint: a.client.endpoint().to_string(),
                    model: config.endpoint.model.trim().to_string(),
                    prompt_version: PROMPT_VERSION.to_string(),
                    concurrency: a.concurrency,
                    with_reference,
                    without_reference: queries - with_reference,
                    requests: a.requests,
                    seconds: round_to(a.seconds, 3),
                }),
                _ => None,
            },
        },
        results,
        failures,
        not_done: if opts.answer.is_some() {
            Vec::new()
        } else {
            vec!["answer-level evaluation (not requested; see --answer-endpoint)".into()]
        },
    };
    report.write_json(&opts.out.join("report.json"))?;
    report.write_markdown(&opts.out.join("report.md"))?;
    let svg = recall_vs_budget_svg(&report.results)?;
    let svg_path = opts.out.join("recall-vs-budget.svg");
    std::fs::write(&svg_path, &svg).map_err(|e| EvalError::io(&svg_path, e))?;
    if let (Some(path), Some(questions)) = (&opts.html, html) {
        let page = render_html(&report, &questions, Some(&svg));
        std::fs::write(path, page).map_err(|e| EvalError::io(path, e))?;
    }
    Ok(report)
}
