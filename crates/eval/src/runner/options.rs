//! What to evaluate: [`EvalOptions`], parsed into the strategies and budgets a run
//! uses, and the file name of each strategy label.

use std::path::PathBuf;

use excerpt::{FusionMethod, IngestOptions, Mode, QueryRequest};
use excerpt_context::StrategyConfig;
use excerpt_embed::ChatConfig;

use crate::EvalError;

/// Characters per budget token at which contexts are also scored, as the evaluation
/// protocol does (`score_context.py`/`score_pdf.py --budget-chars`, 4 characters per
/// token): the export's `recall_at_chars`, and `text_recall`/`page_hit` of page-format
/// sets.
pub const CHARS_PER_TOKEN: usize = 4;

/// Characters allowed per piece for the capped figures: at `N` characters only the
/// first `ceil(N / CHARS_PER_PIECE)` pieces count (`score_context.py`/`score_pdf.py
/// --max-pieces`), so 3, 6 and 12 pieces at 2000, 4000 and 8000 characters.
pub const CHARS_PER_PIECE: usize = 700;

/// The pieces that count for the capped figures at a budget of `budget` tokens:
/// `ceil(budget × CHARS_PER_TOKEN / CHARS_PER_PIECE)`, at least 1.
pub fn max_pieces(budget: usize) -> usize {
    budget
        .saturating_mul(CHARS_PER_TOKEN)
        .div_ceil(CHARS_PER_PIECE)
        .max(1)
}

/// Token budgets run when none are given.
pub const DEFAULT_BUDGETS: [usize; 4] = [500, 1000, 2000, 4000];

/// What to evaluate and where to write it.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// `corpus.jsonl` (the eval format; ingested as is), or a folder of documents (PDF,
    /// Markdown, HTML, text), ingested as `excerpt ingest FOLDER` does: document ids are
    /// the files' paths relative to the folder.
    pub corpus: PathBuf,
    /// `queries.jsonl`, in the span or the page format ([`crate::format::read_query_set`]).
    pub queries: PathBuf,
    /// Output directory (created if needed; files in it are overwritten).
    pub out: PathBuf,
    /// Strategies besides `topk`, which always runs first (names as `StrategyConfig`
    /// parses them: `adjacent`, `rse`, `rse:precision`, `window`, `section`, `auto`).
    pub strategies: Vec<String>,
    /// LLM-token budgets (empty: [`DEFAULT_BUDGETS`]).
    pub budgets: Vec<usize>,
    /// First-stage retrieval.
    pub mode: Mode,
    /// Fusion of the dense and BM25 lists (hybrid mode).
    pub fusion: FusionMethod,
    /// Candidates each search returns before fusion.
    pub candidates: usize,
    /// No progress bar.
    pub quiet: bool,
    /// Answer-level evaluation: the OpenAI-compatible chat endpoint that answers each
    /// query with a reference `answer` from each strategy's context at each budget
    /// (`max_concurrency` requests in flight). `None` (the default): no answers.
    pub answer: Option<ChatConfig>,
    /// Ingest with sentence vectors ([`excerpt::IngestOptions::sentence_vectors`]), for
    /// `window`. Documents already in the index are not re-ingested: use a fresh index.
    pub sentence_vectors: bool,
    /// Sentence vectors by late chunking ([`excerpt::IngestOptions::late_chunking`]).
    pub late_chunking: bool,
    /// Also write `export.jsonl` and `export.md`: per question, strategy and budget, the
    /// context with its tokens, coherence and recall (default false).
    pub export: bool,
    /// Also write the report as one self-contained HTML page to this file
    /// ([`crate::html`]): the figures, the chart, the misses between strategies, and per
    /// question the evidence and every context with the evidence highlighted.
    pub html: Option<PathBuf>,
}

impl EvalOptions {
    /// Defaults: `topk` only, [`DEFAULT_BUDGETS`], hybrid retrieval with the default
    /// fusion, 100 candidates, a progress bar.
    pub fn new(
        corpus: impl Into<PathBuf>,
        queries: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
    ) -> EvalOptions {
        let req = QueryRequest::new("");
        EvalOptions {
            corpus: corpus.into(),
            queries: queries.into(),
            out: out.into(),
            strategies: Vec::new(),
            budgets: DEFAULT_BUDGETS.to_vec(),
            mode: req.mode,
            fusion: req.fusion,
            candidates: req.candidates,
            quiet: false,
            answer: None,
            sentence_vectors: false,
            late_chunking: false,
            export: false,
            html: None,
        }
    }

    /// The strategies run, parsed: `topk` first, then the others in the order given,
    /// duplicates dropped. Labels are the canonical names (`rse:precision` keeps its
    /// preset).
    pub(super) fn strategy_list(&self) -> Result<Vec<(String, StrategyConfig)>, EvalError> {
        let mut out: Vec<(String, StrategyConfig)> = Vec::new();
        for spec in std::iter::once("topk").chain(self.strategies.iter().map(String::as_str)) {
            let spec = spec.trim();
            let config: StrategyConfig = spec
                .parse()
                .map_err(|e| EvalError::Invalid(format!("strategy {spec:?}: {e}")))?;
            config
                .validate()
                .map_err(|e| EvalError::Invalid(format!("strategy {spec:?}: {e}")))?;
            let label = match spec.split_once(':') {
                None => config.to_string(),
                Some((_, arg)) => format!("{config}:{}", arg.trim().to_ascii_lowercase()),
            };
            if !out.iter().any(|(l, _)| *l == label) {
                out.push((label, config));
            }
        }
        Ok(out)
    }

    /// The ingest options of the run: the defaults of `excerpt ingest` (so a folder's
    /// files and ids are those it gives), with sentence vectors when asked for.
    pub(super) fn ingest_options(&self) -> IngestOptions {
        IngestOptions {
            sentence_vectors: self.sentence_vectors,
            late_chunking: self.late_chunking,
            ..IngestOptions::default()
        }
    }

    /// The budgets run: ascending, duplicates dropped, the defaults when empty.
    pub(super) fn budget_list(&self) -> Result<Vec<usize>, EvalError> {
        let mut b = if self.budgets.is_empty() {
            DEFAULT_BUDGETS.to_vec()
        } else {
            self.budgets.clone()
        };
        b.sort_unstable();
        b.dedup();
        if b.first() == Some(&0) {
            return Err(EvalError::Invalid(
                "budgets must be at least 1 token".into(),
            ));
        }
        Ok(b)
    }
}

/// A strategy label as it appears in a file name.
pub(super) fn file_label(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_start_with_topk_and_dedup() {
        let mut o = EvalOptions::new("c", "q", "o");
        o.strategies = vec![
            "adjacent".into(),
            "topk".into(),
            "ADJACENT".into(),
            "rse:precision".into(),
        ];
        let labels: Vec<String> = o
            .strategy_list()
            .unwrap()
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(labels, ["topk", "adjacent", "rse:precision"]);
        assert_eq!(file_label("rse:precision"), "rse_precision");
        o.strategies = vec!["nope".into()];
        assert!(matches!(o.strategy_list(), Err(EvalError::Invalid(_))));
    }

    #[test]
    fn pieces_allowed_per_budget() {
        assert_eq!(
            [500, 1000, 2000, 175, 176, 1].map(max_pieces),
            [3, 6, 12, 1, 2, 1]
        );
    }

    #[test]
    fn budgets_sorted_and_defaulted() {
        let mut o = EvalOptions::new("c", "q", "o");
        assert_eq!(o.budget_list().unwrap(), DEFAULT_BUDGETS);
        o.budgets = vec![400, 100, 400];
        assert_eq!(o.budget_list().unwrap(), [100, 400]);
        o.budgets = vec![];
        assert_eq!(o.budget_list().unwrap(), DEFAULT_BUDGETS);
        o.budgets = vec![0, 5];
        assert!(o.budget_list().is_err());
    }
}
