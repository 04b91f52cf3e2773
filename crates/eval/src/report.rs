//! The evaluation report: `report.json` (machine-readable) and `report.md` (a table, and
//! a second one for answer-level scores when answers were generated).

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::metrics::{round_to, CoverageSummary, Latency};
use crate::pages::PageSummary;
use crate::EvalError;

/// How the run was made.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunInfo {
    /// The corpus file.
    pub corpus: String,
    /// The queries file.
    pub queries_file: String,
    /// Its format: `spans` (character-span evidence) or `pages` (page evidence, scored
    /// by `text_recall` and `page_hit`).
    #[serde(default)]
    pub query_format: String,
    /// Queries run.
    pub queries: usize,
    /// Documents in the corpus (and the index).
    pub documents: usize,
    /// The index directory.
    pub index: String,
    /// First-stage retrieval mode.
    pub mode: String,
    /// Fusion of dense and BM25 lists (hybrid mode).
    pub fusion: serde_json::Value,
    /// Candidates per search before fusion.
    pub candidates: usize,
    /// Embedding model of the index.
    pub model_id: String,
    /// Chunker of the index.
    pub chunker: String,
    /// LLM token encoding the budgets are measured in.
    pub llm_encoding: String,
    /// Strategies run.
    pub strategies: Vec<String>,
    /// Token budgets run.
    pub budgets: Vec<usize>,
    /// Documents the ingest added or updated (0 when the index was already current).
    pub ingested: usize,
    /// Seconds spent ingesting.
    pub ingest_seconds: f64,
    /// Seconds for the whole run.
    pub seconds: f64,
    /// Answer-level evaluation settings, when answers were generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerRunInfo>,
}

/// How answers were generated (`--answer-endpoint`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerRunInfo {
    /// The chat-completions URL requests went to.
    pub endpoint: String,
    /// The model named in each request.
    pub model: String,
    /// [`crate::answer::PROMPT_VERSION`] of the prompt used.
    pub prompt_version: String,
    /// Requests kept in flight at once.
    pub concurrency: usize,
    /// Queries with a reference answer (the only ones answered).
    pub with_reference: usize,
    /// Queries without a reference answer: never sent, not scored.
    pub without_reference: usize,
    /// Requests sent (identical prompts of one query, e.g. two budgets that produced
    /// the same context, are sent once; retries not counted).
    pub requests: usize,
    /// Seconds spent waiting for answers.
    pub seconds: f64,
}

/// Answer-level scores of one strategy at one budget.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerMetrics {
    /// The answers file, relative to the output directory.
    pub answers_file: String,
    /// Queries answered: those with a reference answer whose context was assembled.
    pub answered: usize,
    /// Mean token F1 over the queries with a reference answer (one whose retrieval or
    /// assembly failed, and so was not answered, scores 0 as it counts as missing).
    pub f1: f64,
    /// Share of the queries with a reference answer whose answer matches it exactly
    /// after normalisation.
    pub em: f64,
    /// Prompt tokens over all answered queries, as the endpoint reported them (0 if it
    /// reports no usage).
    pub prompt_tokens: u64,
    /// Completion tokens over all answered queries, as reported.
    pub completion_tokens: u64,
}

/// All metrics of one strategy at one budget.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metrics {
    /// Queries scored.
    pub queries: usize,
    /// Queries without a result (retrieval or assembly failed).
    pub missing: usize,
    /// Mean fraction of evidence characters covered.
    pub recall: f64,
    /// Fraction of queries with any evidence covered.
    pub hit: f64,
    /// Fraction of queries with ≥ 90 % of their evidence covered.
    pub full: f64,
    /// Evidence characters returned / characters returned.
    pub precision: f64,
    /// Mean characters returned per query.
    pub chars: f64,
    /// Mean pieces per query.
    pub pieces: f64,
    /// Pieces whose text is not the corpus slice (must be 0).
    pub bad_text: usize,
    /// Mean LLM tokens returned per query.
    pub tokens: f64,
    /// Mean pairwise cosine of chunk vectors inside pieces of two or more chunks.
    pub intra_coherence: Option<f64>,
    /// Share of pieces starting and ending on sentence boundaries.
    pub boundary_coherence: Option<f64>,
    /// Median latency (retrieve + assemble), milliseconds.
    pub p50_ms: f64,
    /// 95th-percentile latency, milliseconds.
    pub p95_ms: f64,
    /// Mean latency, milliseconds.
    pub mean_ms: f64,
    /// Page-format sets only: mean share of the evidence's word 4-grams found in the
    /// first budget × 4 characters of the context, as `score_pdf.py --budget-chars`
    /// scores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_recall: Option<f64>,
    /// Page-format sets only: share of queries where a piece within the first budget × 4
    /// characters covers an evidence page (`score_pdf.py --budget-chars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_hit: Option<f64>,
    /// K, the pieces that count for the capped figures: `ceil(budget × 4 / 700)`
    /// ([`crate::max_pieces`]; 3, 6 and 12 at 500, 1000 and 2000 tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pieces: Option<usize>,
    /// Span-format sets: the recall of the first budget × 4 characters of the context
    /// (`score_context.py --budget-chars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_chars: Option<f64>,
    /// Span-format sets: the recall of the first K pieces within the first budget × 4
    /// characters (`score_context.py --budget-chars --max-pieces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_recall: Option<f64>,
    /// Page-format sets: `text_recall` of the first K pieces within the first budget × 4
    /// characters (`score_pdf.py --budget-chars --max-pieces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_text_recall: Option<f64>,
    /// Page-format sets: `page_hit` of the first K pieces within the first budget × 4
    /// characters (`score_pdf.py --budget-chars --max-pieces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_page_hit: Option<f64>,
    /// How the context reads, over its pieces within the first budget × 4 characters
    /// (`score_context.py --budget-chars`; for page-format sets, on the texts the ingest
    /// extracted): mean characters per piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_chars: Option<f64>,
    /// Share of those pieces that start and end on a sentence or line boundary (a piece
    /// cut by the budget counts by its real end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<f64>,
    /// Share of those pieces under 80 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiny: Option<f64>,
    /// Share of same-document pairs of those pieces given in reading order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_order: Option<f64>,
    /// Share of contexts whose pieces of each document come together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped: Option<f64>,
}

impl Metrics {
    /// Combines the scorer's numbers (rounded as it prints them) with the others.
    pub fn new(
        coverage: &CoverageSummary,
        tokens: f64,
        intra_coherence: Option<f64>,
        boundary_coherence: Option<f64>,
        latency: Latency,
    ) -> Metrics {
        let c = coverage.rounded();
        Metrics {
            queries: c.queries,
            missing: c.missing,
            recall: c.recall,
            hit: c.hit,
            full: c.full,
            precision: c.precision,
            chars: c.chars,
            pieces: c.pieces,
            bad_text: c.bad_text,
            tokens: round_to(tokens, 1),
            intra_coherence: intra_coherence.map(|x| round_to(x, 4)),
            boundary_coherence: boundary_coherence.map(|x| round_to(x, 4)),
            p50_ms: round_to(latency.p50_ms, 3),
            p95_ms: round_to(latency.p95_ms, 3),
            mean_ms: round_to(latency.mean_ms, 3),
            text_recall: None,
            page_hit: None,
            max_pieces: None,
            recall_at_chars: None,
            capped_recall: None,
            capped_text_recall: None,
            capped_page_hit: None,
            piece_chars: None,
            whole: None,
            tiny: None,
            in_order: None,
            grouped: None,
        }
    }

    /// With the readability figures of `at_chars` (the context scored within budget × 4
    /// characters; rounded as `score_context.py` prints them).
    pub fn with_readability(self, at_chars: &CoverageSummary) -> Metrics {
        let c = at_chars.rounded();
        Metrics {
            piece_chars: Some(c.piece_chars),
            whole: Some(c.whole),
            tiny: Some(c.tiny),
            in_order: Some(c.in_order),
            grouped: Some(c.grouped),
            ..self
        }
    }

    /// With the recall within budget × 4 characters (`at_chars`) and the recall of its
    /// first `max_pieces` pieces (`capped`), rounded as `score_context.py` prints them.
    pub fn with_capped_recall(
        self,
        max_pieces: usize,
        at_chars: &CoverageSummary,
        capped: &CoverageSummary,
    ) -> Metrics {
        Metrics {
            max_pieces: Some(max_pieces),
            recall_at_chars: Some(at_chars.rounded().recall),
            capped_recall: Some(capped.rounded().recall),
            ..self
        }
    }

    /// With the page-format figures of the first `max_pieces` pieces within budget × 4
    /// characters (`capped`, rounded as `score_pdf.py` prints them).
    pub fn with_capped_pages(self, max_pieces: usize, capped: &PageSummary) -> Metrics {
        let p = capped.rounded();
        Metrics {
            max_pieces: Some(max_pieces),
            capped_text_recall: Some(p.text_recall),
            capped_page_hit: Some(p.page_hit),
            ..self
        }
    }

    /// With the page-format figures of `pages` (rounded as `score_pdf.py` prints them).
    pub fn with_pages(self, pages: &PageSummary) -> Metrics {
        let p = pages.rounded();
        Metrics {
            text_recall: Some(p.text_recall),
            page_hit: Some(p.page_hit),
            ..self
        }
    }
}

/// One strategy at one budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyResult {
    /// The strategy's name.
    pub strategy: String,
    /// The LLM-token budget.
    pub budget: usize,
    /// The results file, relative to the output directory.
    pub results_file: String,
    /// The metrics.
    pub metrics: Metrics,
    /// Answer-level scores, when answers were generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerMetrics>,
}

/// A query that produced no result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryFailure {
    /// The query.
    pub query_id: String,
    /// The strategy and budget, when assembly failed (`None`: retrieval failed).
    pub strategy: Option<String>,
    /// The budget, when assembly failed.
    pub budget: Option<usize>,
    /// Why.
    pub message: String,
}

/// Everything an evaluation run measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EvalReport {
    /// How the run was made.
    pub run: RunInfo,
    /// One entry per strategy and budget, strategies in the order given, budgets
    /// ascending.
    pub results: Vec<StrategyResult>,
    /// Queries that failed (they count as missing).
    pub failures: Vec<QueryFailure>,
    /// Parts of the evaluation not performed.
    pub not_done: Vec<String>,
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

fn opt1(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
}

fn count(x: Option<usize>) -> String {
    x.map(|v| v.to_string()).unwrap_or_else(|| "–".into())
}

impl EvalReport {
    /// The result of a strategy at a budget.
    pub fn get(&self, strategy: &str, budget: usize) -> Option<&StrategyResult> {
        self.results
            .iter()
            .find(|r| r.strategy == strategy && r.budget == budget)
    }

    /// The report as Markdown: run information, then one table row per strategy and
    /// budget.
    pub fn to_markdown(&self) -> String {
        let r = &self.run;
        let mut s = String::new();
        let _ = writeln!(s, "# Context evaluation\n");
        let _ = writeln!(s, "- corpus: `{}` ({} documents)", r.corpus, r.documents);
        let pages = self.results.iter().any(|x| x.metrics.text_recall.is_some());
        let evidence = if pages { ", page evidence" } else { "" };
        let _ = writeln!(
            s,
            "- queries: `{}` ({} queries{evidence})",
            r.queries_file, r.queries
        );
        let _ = writeln!(
            s,
            "- retrieval: {} (fusion {}), {} candidates",
            r.mode, r.fusion, r.candidates
        );
        let _ = writeln!(s, "- model: {}, chunker: {}", r.model_id, r.chunker);
        if pages {
            let _ = writeln!(
                s,
                "- budgets in {} tokens; text_recall and page_hit as scored by `score_pdf.py --budget-chars` at budget × 4 characters, chars and pieces over the whole context",
                r.llm_encoding
            );
            let _ = writeln!(
                s,
                "- ≤K: the same of the first K = ⌈budget × 4 / 700⌉ pieces only (`score_pdf.py --budget-chars --max-pieces K`); piece chars, whole, tiny, in order and grouped of the pieces within budget × 4 characters, as `score_context.py --budget-chars` defines them, on the extracted texts"
            );
        } else {
            let _ = writeln!(
                s,
                "- budgets in {} tokens; recall, hit, full, precision and chars as scored by `score_context.py` on each results file",
                r.llm_encoding
            );
            let _ = writeln!(
                s,
                "- @chars: recall of the first budget × 4 characters (`score_context.py --budget-chars`); ≤K: of the first K = ⌈budget × 4 / 700⌉ pieces of those (`--max-pieces K`); piece chars, whole, tiny, in order and grouped of the pieces within budget × 4 characters (`--budget-chars`)"
            );
        }
        let _ = writeln!(
            s,
            "- {:.1} s in all ({:.1} s ingesting, {} documents ingested)\n",
            r.seconds, r.ingest_seconds, r.ingested
        );
        if pages {
            self.pages_table(&mut s);
        } else {
            self.spans_table(&mut s);
        }
        self.answers_markdown(&mut s);
        let bad: usize = self.results.iter().map(|x| x.metrics.bad_text).sum();
        if bad > 0 {
            let _ = writeln!(
                s,
                "\n**{bad} pieces had text differing from the corpus (bad_text).**"
            );
        }
        if !self.failures.is_empty() {
            let _ = writeln!(
                s,
                "\n{} failures (counted as missing):\n",
                self.failures.len()
            );
            for f in self.failures.iter().take(20) {
                let at = match (&f.strategy, f.budget) {
                    (Some(st), Some(b)) => format!(" ({st} @ {b})"),
                    _ => String::new(),
                };
                let _ = writeln!(s, "- `{}`{at}: {}", f.query_id, f.message);
            }
            if self.failures.len() > 20 {
                let _ = writeln!(
                    s,
                    "- … and {} more (see report.json)",
                    self.failures.len() - 20
                );
            }
        }
        if !self.not_done.is_empty() {
            let _ = writeln!(s, "\nNot done: {}.", self.not_done.join("; "));
        }
        s
    }

    /// The table of a span-format set: one row per strategy and budget.
    fn spans_table(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "| strategy | budget | recall | recall @chars | recall ≤K | K | hit | full | precision | chars | tokens | pieces | piece chars | whole | tiny | in order | grouped | intra-coh | boundary-coh | p50 ms | p95 ms |"
        );
        let _ = writeln!(
            s,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for x in &self.results {
            let m = &x.metrics;
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.0} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} |",
                x.strategy,
                x.budget,
                m.recall,
                opt(m.recall_at_chars),
                opt(m.capped_recall),
                count(m.max_pieces),
                m.hit,
                m.full,
                m.precision,
                m.chars,
                m.tokens,
                m.pieces,
                opt1(m.piece_chars),
                opt(m.whole),
                opt(m.tiny),
                opt(m.in_order),
                opt(m.grouped),
                opt(m.intra_coherence),
                opt(m.boundary_coherence),
                m.p50_ms,
                m.p95_ms
            );
        }
    }

    /// The table of a page-format set: one row per strategy and budget.
    fn pages_table(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "| strategy | budget | text_recall | page_hit | text_recall ≤K | page_hit ≤K | K | chars | tokens | pieces | piece chars | whole | tiny | in order | grouped | intra-coh | boundary-coh | p50 ms | p95 ms |"
        );
        let _ = writeln!(
            s,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for x in &self.results {
            let m = &x.metrics;
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} |",
                x.strategy,
                x.budget,
                opt(m.text_recall),
                opt(m.page_hit),
                opt(m.capped_text_recall),
                opt(m.capped_page_hit),
                count(m.max_pieces),
                m.chars,
                m.tokens,
                m.pieces,
                opt1(m.piece_chars),
                opt(m.whole),
                opt(m.tiny),
                opt(m.in_order),
                opt(m.grouped),
                opt(m.intra_coherence),
                opt(m.boundary_coherence),
                m.p50_ms,
                m.p95_ms
            );
        }
    }

    /// The answer-level section of the Markdown report, when answers were generated.
    fn answers_markdown(&self, s: &mut String) {
        let Some(a) = &self.run.answer else {
            return;
        };
        let _ = writeln!(s, "\n## Answers\n");
        let _ = writeln!(
            s,
            "- model `{}` at {} (prompt {}), {} requests in {:.1} s",
            a.model, a.endpoint, a.prompt_version, a.requests, a.seconds
        );
        let _ = writeln!(
            s,
            "- {} queries with a reference answer scored by token F1 and exact match (SQuAD normalisation); {} without one skipped\n",
            a.with_reference, a.without_reference
        );
        let _ = writeln!(
            s,
            "| strategy | budget | answered | F1 | EM | prompt tokens | completion tokens |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for x in &self.results {
            if let Some(m) = &x.answer {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.3} | {:.3} | {} | {} |",
                    x.strategy,
                    x.budget,
                    m.answered,
                    m.f1,
                    m.em,
                    m.prompt_tokens,
                    m.completion_tokens
                );
            }
        }
    }

    /// Writes `report.json` (pretty-printed).
    pub fn write_json(&self, path: &Path) -> Result<(), EvalError> {
        let mut json = serde_json::to_string_pretty(self).map_err(|e| EvalError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        json.push('\n');
        std::fs::write(path, json).map_err(|e| EvalError::io(path, e))
    }

    /// Writes `report.md`.
    pub fn write_markdown(&self, path: &Path) -> Result<(), EvalError> {
        std::fs::write(path, self.to_markdown()).map_err(|e| EvalError::io(path, e))
    }

    /// Reads a `report.json`.
    pub fn read_json(path: &Path) -> Result<EvalReport, EvalError> {
        let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| EvalError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_one_row_per_result() {
        let cov = CoverageSummary {
            queries: 2,
            missing: 0,
            recall: 0.123456,
            hit: 0.5,
            full: 0.0,
            precision: 0.25,
            chars: 1234.56,
            pieces: 2.5,
            bad_text: 0,
            ..Default::default()
        };
        let m = Metrics::new(&cov, 300.0, Some(0.61234), None, Latency::default());
        assert_eq!(m.recall, 0.1235);
        assert_eq!(m.chars, 1234.6);
        let at_chars = CoverageSummary {
            recall: 0.1,
            piece_chars: 412.345,
            whole: 0.87654,
            tiny: 0.125,
            in_order: 0.5,
            grouped: 1.0,
            ..cov
        };
        let capped = CoverageSummary {
            recall: 0.08765,
            ..at_chars
        };
        let read = m
            .clone()
            .with_readability(&at_chars)
            .with_capped_recall(3, &at_chars, &capped);
        assert_eq!(
            (
                read.piece_chars,
                read.whole,
                read.max_pieces,
                read.capped_recall
            ),
            (Some(412.3), Some(0.8765), Some(3), Some(0.0877))
        );
        assert_eq!(read.recall, m.recall, "the other figures are unchanged");
        let report = EvalReport {
            results: vec![
                StrategyResult {
                    strategy: "topk".into(),
                    budget: 500,
                    results_file: "results-topk-500.jsonl".into(),
                    metrics: m.clone(),
                    answer: None,
                },
                StrategyResult {
                    strategy: "rse".into(),
                    budget: 500,
                    results_file: "results-rse-500.jsonl".into(),
                    metrics: m,
                    answer: None,
                },
                StrategyResult {
                    strategy: "auto".into(),
                    budget: 500,
                    results_file: "results-auto-500.jsonl".into(),
                    metrics: read,
                    answer: None,
                },
            ],
            not_done: vec!["answer-level evaluation".into()],
            ..Default::default()
        };
        let md = report.to_markdown();
        assert!(
            md.contains(
                "| topk | 500 | 0.123 | – | – | – | 0.500 | 0.000 | 0.250 | 1235 | 300 | 2.50 | – | – | – | – | – | 0.612 | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| auto | 500 | 0.123 | 0.100 | 0.088 | 3 | 0.500 | 0.000 | 0.250 | 1235 | 300 | 2.50 | 412.3 | 0.876 | 0.125 | 0.500 | 1.000 | 0.612 | – |"
            ),
            "{md}"
        );
        assert!(md.contains("| rse | 500 |"));
        assert!(md.contains("Not done: answer-level evaluation."));
        assert!(!md.contains("## Answers"));
        assert!(report.get("rse", 500).is_some());
        let back: EvalReport =
            serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(back, report);
    }
}
