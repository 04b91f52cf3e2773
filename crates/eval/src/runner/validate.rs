//! The validate stage: options and input files checked, output files named, before
//! anything is written.

use std::collections::{HashMap, HashSet};

use excerpt_context::StrategyConfig;
use excerpt_core::content_hash;
use excerpt_embed::ChatClient;

use super::answerer::{endpoint_message, has_reference, Answerer};
use super::options::{file_label, EvalOptions};
use crate::format::{read_corpus, read_queries, CorpusDoc, QueryLine};
use crate::EvalError;

/// One strategy at one budget: what runs and which files it writes (relative to the
/// output directory).
pub(super) struct RunSpec {
    pub(super) label: String,
    pub(super) config: StrategyConfig,
    pub(super) budget: usize,
    pub(super) results_file: String,
    /// With answer-level evaluation.
    pub(super) answers_file: Option<String>,
}

/// What a run does, once the options and input files are checked.
pub(super) struct Plan {
    /// Strategy labels and configs, `topk` first.
    pub(super) strategies: Vec<(String, StrategyConfig)>,
    /// Budgets, ascending.
    pub(super) budgets: Vec<usize>,
    /// Every strategy at every budget, strategies in order, budgets ascending.
    pub(super) runs: Vec<RunSpec>,
    /// The queries, in file order.
    pub(super) queries: Vec<QueryLine>,
    /// How many queries have a reference answer.
    pub(super) with_reference: usize,
}

/// What [`validate`] returns: the plan, the corpus to ingest and the answer client.
pub(super) struct Validated {
    pub(super) plan: Plan,
    pub(super) corpus: Vec<CorpusDoc>,
    /// Content hash of every corpus text, by document id.
    pub(super) corpus_hashes: HashMap<String, String>,
    pub(super) answerer: Option<Answerer>,
}

/// Validate stage: checks the options (strategies, budgets, candidates, fusion, answer
/// endpoint), reads the corpus and the queries and checks their ids are unique, the
/// corpus is not empty and, for answer-level evaluation, that some query has a reference
/// answer; names every output file and checks no two runs share one. Writes nothing.
pub(super) fn validate(opts: &EvalOptions) -> Result<Validated, EvalError> {
    let strategies = opts.strategy_list()?;
    let budgets = opts.budget_list()?;
    if opts.candidates == 0 {
        return Err(EvalError::Invalid("candidates must be at least 1".into()));
    }
    opts.fusion
        .validate()
        .map_err(|e| EvalError::Invalid(format!("fusion: {e}")))?;
    let answerer = match &opts.answer {
        Some(config) => Some(Answerer {
            client: ChatClient::new(config.clone()).map_err(|e| {
                EvalError::Invalid(format!(
                    "answer endpoint {}: {}",
                    config.url,
                    endpoint_message(&e)
                ))
            })?,
            concurrency: config.max_concurrency.max(1),
            pending: Vec::new(),
            requests: 0,
            seconds: 0.0,
        }),
        None => None,
    };

    let corpus = read_corpus(&opts.corpus)?;
    let mut corpus_hashes: HashMap<String, String> = HashMap::with_capacity(corpus.len());
    for d in &corpus {
        let h = content_hash(&[d.text.as_bytes()]);
        if corpus_hashes.insert(d.id.clone(), h).is_some() {
            return Err(EvalError::Invalid(format!(
                "{}: document id {:?} appears twice",
                opts.corpus.display(),
                d.id
            )));
        }
    }
    if corpus.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no documents",
            opts.corpus.display()
        )));
    }
    let queries = read_queries(&opts.queries)?;
    let mut seen = HashSet::new();
    for q in &queries {
        if !seen.insert(q.id.as_str()) {
            return Err(EvalError::Invalid(format!(
                "{}: query id {:?} appears twice",
                opts.queries.display(),
                q.id
            )));
        }
    }
    let with_reference = queries.iter().filter(|q| has_reference(q)).count();
    if answerer.is_some() && with_reference == 0 {
        return Err(EvalError::Invalid(format!(
            "answer-level evaluation needs reference answers, and no query in {} has an \"answer\"",
            opts.queries.display()
        )));
    }

    let mut runs = Vec::with_capacity(strategies.len() * budgets.len());
    let mut files_seen = HashSet::new();
    for (label, config) in &strategies {
        for &budget in &budgets {
            let results_file = format!("results-{}-{budget}.jsonl", file_label(label));
            if !files_seen.insert(results_file.clone()) {
                return Err(EvalError::Invalid(format!(
                    "two strategies would write the same file {results_file}"
                )));
            }
            runs.push(RunSpec {
                label: label.clone(),
                config: *config,
                budget,
                results_file,
                answers_file: answerer
                    .as_ref()
                    .map(|_| format!("answers-{}-{budget}.jsonl", file_label(label))),
            });
        }
    }
    Ok(Validated {
        plan: Plan {
            strategies,
            budgets,
            runs,
            queries,
            with_reference,
        },
        corpus,
        corpus_hashes,
        answerer,
    })
}
