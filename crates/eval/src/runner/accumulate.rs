//! What one strategy at one budget accumulates over the queries (its results and
//! answers files, scores, tokens, latencies, coherence), and how it becomes the run's
//! entry of the report. The bottom layer of the runner: it imports none of the stages.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use excerpt::{Context, IndexContents};
use excerpt_context::StrategyConfig;

use super::options::{max_pieces, CHARS_PER_TOKEN};
use crate::format::{write_jsonl_line, PageQueryLine, QueryLine, ResultLine, ResultPiece};
use crate::metrics::{
    latency, mean, on_boundaries, piece_coherence, round_to, score_query, score_query_limited,
    summarize, ChunkVectors, CorpusTexts, Limits, PieceSpan, QueryScore,
};
use crate::pages::{score_page_query_limited, summarize_pages, PageScore};
use crate::report::{AnswerMetrics, Metrics, StrategyResult};
use crate::EvalError;

/// What one strategy at one budget accumulated over the queries.
pub(super) struct Acc {
    pub(super) label: String,
    pub(super) config: StrategyConfig,
    pub(super) budget: usize,
    pub(super) file: String,
    pub(super) path: PathBuf,
    pub(super) out: BufWriter<File>,
    pub(super) scores: Vec<QueryScore>,
    /// Each query's `score_context.py --budget-chars` figures at budget ×
    /// [`CHARS_PER_TOKEN`] characters (the readability figures, and the recall the
    /// capped one is compared with).
    pub(super) at_chars: Vec<QueryScore>,
    /// The same with at most [`max_pieces`] pieces (`--max-pieces`).
    pub(super) capped: Vec<QueryScore>,
    /// Page-format sets only: each query's `score_pdf.py` figures at budget ×
    /// [`CHARS_PER_TOKEN`] characters.
    pub(super) pages: Option<Vec<PageScore>>,
    /// Page-format sets only: the same with at most [`max_pieces`] pieces.
    pub(super) pages_capped: Option<Vec<PageScore>>,
    pub(super) tokens: Vec<f64>,
    pub(super) latency_ms: Vec<f64>,
    pub(super) intra: Vec<f64>,
    pub(super) boundary_on: usize,
    pub(super) boundary_n: usize,
    pub(super) answers: Option<AnswerAcc>,
}

/// What one strategy at one budget accumulated over its answers.
pub(super) struct AnswerAcc {
    pub(super) file: String,
    pub(super) path: PathBuf,
    pub(super) out: BufWriter<File>,
    pub(super) answered: usize,
    pub(super) f1_sum: f64,
    pub(super) em: usize,
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
}

/// What scoring a context needs besides the context.
pub(super) struct Scoring<'a> {
    pub(super) texts: &'a CorpusTexts,
    pub(super) vectors: IndexVectors<'a>,
    pub(super) boundaries: &'a HashMap<String, Vec<usize>>,
}

/// Chunk vectors of the indexed documents, by document id.
pub(super) struct IndexVectors<'a>(pub(super) &'a IndexContents);

impl ChunkVectors for IndexVectors<'_> {
    fn chunk_vector(&self, doc_id: &str, ordinal: u32) -> Option<&[f32]> {
        self.0.chunk_vector(doc_id, ordinal)
    }
}

impl Acc {
    /// The budget in characters the page-format figures are taken at.
    fn budget_chars(&self) -> usize {
        self.budget * CHARS_PER_TOKEN
    }

    /// The limits of the figures at budget × [`CHARS_PER_TOKEN`] characters, and of the
    /// capped ones.
    fn limits(&self) -> (Limits, Limits) {
        let at_chars = Limits::budget(Some(self.budget_chars()));
        (
            at_chars,
            at_chars.with_max_pieces(Some(max_pieces(self.budget))),
        )
    }

    /// A query without a context from this run: it scores as missing, with no tokens.
    /// `page` is the query as read from a page-format set.
    pub(super) fn record_failure(
        &mut self,
        q: &QueryLine,
        page: Option<&PageQueryLine>,
        scoring: &Scoring<'_>,
    ) {
        self.scores.push(score_query(q, None, scoring.texts, None));
        let (at_chars, capped) = self.limits();
        self.at_chars
            .push(score_query_limited(q, None, scoring.texts, at_chars));
        self.capped
            .push(score_query_limited(q, None, scoring.texts, capped));
        if let (Some(scores), Some(pq)) = (self.pages.as_mut(), page) {
            scores.push(score_page_query_limited(pq, None, at_chars));
        }
        if let (Some(scores), Some(pq)) = (self.pages_capped.as_mut(), page) {
            scores.push(score_page_query_limited(pq, None, capped));
        }
        self.tokens.push(0.0);
    }

    /// Appends the context of query `q` to the results file and adds its scores,
    /// tokens, latency (`ms`) and coherence figures. `page` is the query as read from a
    /// page-format set.
    pub(super) fn record(
        &mut self,
        q: &QueryLine,
        page: Option<&PageQueryLine>,
        context: &Context,
        ms: f64,
        scoring: &Scoring<'_>,
    ) -> Result<(), EvalError> {
        let line = ResultLine {
            query_id: q.id.clone(),
            strategy: self.label.clone(),
            pieces: context
                .pieces
                .iter()
                .map(|p| ResultPiece {
                    doc_id: p.doc_id.clone(),
                    start: p.start as i64,
                    end: p.end as i64,
                    text: Some(p.text.clone()),
                    score: Some(f64::from(p.score))
                        .filter(|s| s.is_finite())
                        .map(|s| round_to(s, 6)),
                    page_start: p.page_start,
                    page_end: p.page_end,
                })
                .collect(),
        };
        write_jsonl_line(&mut self.out, &line, &self.path)?;
        let pieces = Some(line.pieces.as_slice());
        self.scores
            .push(score_query(q, pieces, scoring.texts, None));
        let (at_chars, capped) = self.limits();
        self.at_chars
            .push(score_query_limited(q, pieces, scoring.texts, at_chars));
        self.capped
            .push(score_query_limited(q, pieces, scoring.texts, capped));
        if let (Some(scores), Some(pq)) = (self.pages.as_mut(), page) {
            scores.push(score_page_query_limited(pq, pieces, at_chars));
        }
        if let (Some(scores), Some(pq)) = (self.pages_capped.as_mut(), page) {
            scores.push(score_page_query_limited(pq, pieces, capped));
        }
        self.tokens
            .push(context.pieces.iter().map(|p| p.tokens).sum::<usize>() as f64);
        self.latency_ms.push(ms);
        for p in &context.pieces {
            let span = PieceSpan {
                doc_id: &p.doc_id,
                start: p.start,
                end: p.end,
                first_chunk: p.first_chunk,
                last_chunk: p.last_chunk,
            };
            if let Some(c) = piece_coherence(&span, &scoring.vectors) {
                self.intra.push(c);
            }
            if let Some(b) = scoring.boundaries.get(&p.doc_id) {
                self.boundary_n += 1;
                self.boundary_on += usize::from(on_boundaries(b, p.start, p.end));
            }
        }
        Ok(())
    }

    /// The run's entry of the report; `with_reference` queries could be answered.
    pub(super) fn into_result(self, with_reference: usize) -> StrategyResult {
        drop(self.out);
        let coverage = summarize(&self.scores);
        let boundary =
            (self.boundary_n > 0).then(|| self.boundary_on as f64 / self.boundary_n as f64);
        let answer = self.answers.map(|a| {
            drop(a.out);
            let share = |x: f64| {
                if with_reference == 0 {
                    0.0
                } else {
                    round_to(x / with_reference as f64, 4)
                }
            };
            AnswerMetrics {
                answers_file: a.file,
                answered: a.answered,
                f1: share(a.f1_sum),
                em: share(a.em as f64),
                prompt_tokens: a.prompt_tokens,
                completion_tokens: a.completion_tokens,
            }
        });
        let mut metrics = Metrics::new(
            &coverage,
            mean(&self.tokens).unwrap_or(0.0),
            mean(&self.intra),
            boundary,
            latency(&self.latency_ms),
        );
        let at_chars = summarize(&self.at_chars);
        metrics = metrics.with_readability(&at_chars);
        let k = max_pieces(self.budget);
        match (&self.pages, &self.pages_capped) {
            (Some(pages), Some(capped)) => {
                metrics = metrics
                    .with_pages(&summarize_pages(pages))
                    .with_capped_pages(k, &summarize_pages(capped));
            }
            _ => {
                metrics = metrics.with_capped_recall(k, &at_chars, &summarize(&self.capped));
            }
        }
        StrategyResult {
            strategy: self.label,
            budget: self.budget,
            results_file: self.file,
            answer,
            metrics,
        }
    }
}
