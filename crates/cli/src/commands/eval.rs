//! `excerpt eval`: strategies compared on an evaluation set.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use excerpt::{parse_fusion, ChatConfig};

use crate::args::{AnswerArgs, EvalArgs, Global};

use super::common::{chat_config, engine, print_json, progress};

/// The answer endpoint asked for by `eval --answer-endpoint --answer-model` (clap makes
/// sure both or neither are given).
fn answer_config(g: &Global, a: &AnswerArgs) -> Option<ChatConfig> {
    let (url, model) = (a.answer_endpoint.as_deref()?, a.answer_model.as_deref()?);
    let mut chat = chat_config(g, url, model, a.answer_api_key_env.as_deref());
    chat.max_concurrency = a.answer_concurrency as usize;
    Some(chat)
}

pub(super) fn eval(g: &Global, a: EvalArgs) -> Result<ExitCode> {
    let engine = engine(g, a.chunker, a.no_headers.then_some(false));
    let mut opts = excerpt_eval::EvalOptions::new(a.corpus, a.queries, a.out.clone());
    opts.strategies = crate::args::split_strategy_specs(&a.strategies);
    if !a.budgets.is_empty() {
        opts.budgets = a.budgets;
    }
    opts.mode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    opts.fusion = parse_fusion(&a.fusion)?;
    opts.candidates = a.candidates;
    opts.quiet = g.quiet;
    opts.answer = answer_config(g, &a.answer);
    opts.sentence_vectors = a.sentence_vectors || a.late_chunking;
    opts.late_chunking = a.late_chunking;
    opts.export = a.export;
    opts.html = a.html.clone();
    let json = a.output.is_json()?;
    let bar = progress(g, excerpt::IngestOptions::default().commit_every_chunks);
    let result = excerpt_eval::run_eval(&engine, &opts, &bar);
    bar.finish();
    let report = result?;
    if json {
        print_json(&report)?;
    } else if !g.quiet {
        let md = std::fs::read_to_string(a.out.join("report.md")).unwrap_or_default();
        writeln!(std::io::stdout().lock(), "{md}")?;
        let answers = if report.run.answer.is_some() {
            "answers-*.jsonl, "
        } else {
            ""
        };
        eprintln!(
            "wrote {} (results-*.jsonl, {answers}report.json, report.md, recall-vs-budget.svg)",
            a.out.display()
        );
        if let Some(html) = &a.html {
            eprintln!("wrote {}", html.display());
        }
    }
    if !report.failures.is_empty() && !g.quiet {
        eprintln!(
            "{} query run(s) failed; see report.json",
            report.failures.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
