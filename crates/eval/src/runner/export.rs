//! Per-question export (`excerpt eval --export`): for every question, every strategy and
//! every budget, the context handed to the LLM with its token count, coherence and
//! recall, so a person can read why one strategy lost to another on a question.
//!
//! Two files in the output directory:
//! - `export.jsonl`: one line per question × strategy × budget, complete (every piece
//!   with its text);
//! - `export.md`: per question, the gold evidence, a table of every strategy and budget,
//!   and at the smallest budget each strategy's pieces, marked by whether they touch the
//!   evidence (texts shortened).
//!
//! The same contexts feed `--html OUT.html` ([`html_question`], [`html_run`]; rendered by
//! [`crate::html`]).
//!
//! Part of the runner's bottom layer with the accumulators: it imports none of the
//! stages.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use excerpt::Context;
use serde::Serialize;

use crate::format::{write_jsonl_line, Evidence, PageQueryLine, QueryLine, ResultPiece};
use crate::html::{HtmlEvidence, HtmlPiece, HtmlQuestion, HtmlRun};
use crate::metrics::{piece_coherence, round_to, score_query, PieceSpan, QueryScore};
use crate::EvalError;

use super::accumulate::Scoring;
use super::options::CHARS_PER_TOKEN;

/// Longest text shown for one piece or evidence span in `export.md`.
const SHOWN_CHARS: usize = 400;

/// One line of `export.jsonl`.
#[derive(Debug, Serialize)]
struct ExportLine<'a> {
    query_id: &'a str,
    query: &'a str,
    strategy: &'a str,
    budget: usize,
    tokens: usize,
    chars: usize,
    /// Share of evidence characters covered by the whole context.
    recall: f64,
    /// The same within the first `budget × 4` characters, in piece order.
    recall_at_chars: f64,
    /// Mean pairwise cosine of the chunk vectors inside the pieces (`None`: no piece
    /// spans two chunks with vectors).
    coherence: Option<f64>,
    notes: &'a [String],
    evidence: &'a [Evidence],
    pieces: Vec<ExportPiece<'a>>,
}

#[derive(Debug, Serialize)]
struct ExportPiece<'a> {
    doc_id: &'a str,
    start: usize,
    end: usize,
    tokens: usize,
    score: f32,
    /// Characters of the piece inside the gold evidence.
    evidence_chars: i64,
    text: &'a str,
}

/// One row of a question's table in `export.md`.
struct Row {
    strategy: String,
    budget: usize,
    tokens: usize,
    recall: f64,
    recall_at_chars: f64,
    coherence: Option<f64>,
    /// `(doc_id, start, end, evidence chars, text)` of each piece.
    pieces: Vec<(String, usize, usize, i64, String)>,
    notes: Vec<String>,
}

/// Writes both export files as the run goes, one question at a time.
pub(super) struct Exporter {
    jsonl: BufWriter<File>,
    jsonl_path: PathBuf,
    md: BufWriter<File>,
    md_path: PathBuf,
    rows: Vec<Row>,
}

fn share(s: &QueryScore) -> f64 {
    if s.evidence_chars > 0 {
        round_to(s.covered as f64 / s.evidence_chars as f64, 4)
    } else {
        0.0
    }
}

fn shorten(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(SHOWN_CHARS) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// Characters of `[start, end)` of `doc` that lie inside the query's evidence.
fn evidence_overlap(q: &QueryLine, doc: &str, start: usize, end: usize) -> i64 {
    q.evidence
        .iter()
        .filter(|e| e.doc_id == doc)
        .map(|e| (e.end.min(end as i64) - e.start.max(start as i64)).max(0))
        .sum()
}

/// The recall of `context` for `q`: of the whole context, and of its first `budget` ×
/// [`CHARS_PER_TOKEN`] characters in piece order.
fn recalls(q: &QueryLine, budget: usize, context: &Context, scoring: &Scoring<'_>) -> (f64, f64) {
    let result: Vec<ResultPiece> = context
        .pieces
        .iter()
        .map(|p| ResultPiece::place(&p.doc_id, p.start, p.end))
        .collect();
    let whole = score_query(q, Some(&result), scoring.texts, None);
    let cut = score_query(
        q,
        Some(&result),
        scoring.texts,
        Some(budget * CHARS_PER_TOKEN),
    );
    (share(&whole), share(&cut))
}

/// Question `q` as the HTML report shows it, before any context: its span evidence with
/// the corpus slices, or for a page-format query (`page`) the annotators' extracts.
pub(super) fn html_question(
    q: &QueryLine,
    page: Option<&PageQueryLine>,
    scoring: &Scoring<'_>,
) -> HtmlQuestion {
    let mut evidence: Vec<HtmlEvidence> = q
        .evidence
        .iter()
        .map(|e| HtmlEvidence {
            doc_id: e.doc_id.clone(),
            span: Some((e.start, e.end)),
            page: None,
            text: scoring
                .texts
                .slice(&e.doc_id, e.start.max(0) as usize, e.end.max(0) as usize)
                .unwrap_or_default()
                .to_string(),
        })
        .collect();
    if let Some(p) = page {
        evidence.extend(p.evidence.iter().map(|e| HtmlEvidence {
            doc_id: p.doc.clone(),
            span: None,
            page: Some(e.page),
            text: e.text.clone(),
        }));
    }
    HtmlQuestion {
        id: q.id.clone(),
        query: q.query.clone(),
        evidence,
        runs: Vec::new(),
    }
}

/// The context `strategy` at `budget` gave for `q`, as the HTML report shows it.
pub(super) fn html_run(
    q: &QueryLine,
    strategy: &str,
    budget: usize,
    context: &Context,
    scoring: &Scoring<'_>,
) -> HtmlRun {
    let (recall, recall_at_chars) = recalls(q, budget, context, scoring);
    HtmlRun {
        strategy: strategy.to_string(),
        budget,
        recall,
        recall_at_chars,
        tokens: context.pieces.iter().map(|p| p.tokens).sum(),
        pieces: context
            .pieces
            .iter()
            .map(|p| HtmlPiece {
                doc_id: p.doc_id.clone(),
                start: p.start,
                end: p.end,
                text: p.text.clone(),
            })
            .collect(),
    }
}

impl Exporter {
    /// Creates (truncates) `export.jsonl` and `export.md` in `out`.
    pub(super) fn create(out: &Path) -> Result<Exporter, EvalError> {
        let open = |name: &str| -> Result<(BufWriter<File>, PathBuf), EvalError> {
            let path = out.join(name);
            let f = File::create(&path).map_err(|e| EvalError::io(&path, e))?;
            Ok((BufWriter::new(f), path))
        };
        let (jsonl, jsonl_path) = open("export.jsonl")?;
        let (mut md, md_path) = open("export.md")?;
        writeln!(
            md,
            "# Per-question export\n\nRecall is the share of gold evidence characters the \
             context covers; `@chars` counts only the first budget × {CHARS_PER_TOKEN} \
             characters, in piece order, as the evaluation protocol does. Pieces marked ✓ \
             touch the evidence.\n"
        )
        .map_err(|e| EvalError::io(&md_path, e))?;
        Ok(Exporter {
            jsonl,
            jsonl_path,
            md,
            md_path,
            rows: Vec::new(),
        })
    }

    /// Adds the context `strategy` at `budget` gave for `q`.
    pub(super) fn record(
        &mut self,
        q: &QueryLine,
        strategy: &str,
        budget: usize,
        context: &Context,
        scoring: &Scoring<'_>,
    ) -> Result<(), EvalError> {
        let (recall, recall_at_chars) = recalls(q, budget, context, scoring);
        let coherences: Vec<f64> = context
            .pieces
            .iter()
            .filter_map(|p| {
                let span = PieceSpan {
                    doc_id: &p.doc_id,
                    start: p.start,
                    end: p.end,
                    first_chunk: p.first_chunk,
                    last_chunk: p.last_chunk,
                };
                piece_coherence(&span, &scoring.vectors)
            })
            .collect();
        let coherence = (!coherences.is_empty())
            .then(|| round_to(coherences.iter().sum::<f64>() / coherences.len() as f64, 4));
        let line = ExportLine {
            query_id: &q.id,
            query: &q.query,
            strategy,
            budget,
            tokens: context.pieces.iter().map(|p| p.tokens).sum(),
            chars: context.pieces.iter().map(|p| p.end - p.start).sum(),
            recall,
            recall_at_chars,
            coherence,
            notes: &context.notes,
            evidence: &q.evidence,
            pieces: context
                .pieces
                .iter()
                .map(|p| ExportPiece {
                    doc_id: &p.doc_id,
                    start: p.start,
                    end: p.end,
                    tokens: p.tokens,
                    score: p.score,
                    evidence_chars: evidence_overlap(q, &p.doc_id, p.start, p.end),
                    text: &p.text,
                })
                .collect(),
        };
        write_jsonl_line(&mut self.jsonl, &line, &self.jsonl_path)?;
        self.rows.push(Row {
            strategy: strategy.to_string(),
            budget,
            tokens: line.tokens,
            recall: line.recall,
            recall_at_chars: line.recall_at_chars,
            coherence,
            pieces: line
                .pieces
                .iter()
                .map(|p| {
                    (
                        p.doc_id.to_string(),
                        p.start,
                        p.end,
                        p.evidence_chars,
                        shorten(p.text),
                    )
                })
                .collect(),
            notes: context.notes.clone(),
        });
        Ok(())
    }

    /// Writes `q`'s section of `export.md` from what [`Exporter::record`] gathered
    /// since the last call.
    pub(super) fn finish_question(
        &mut self,
        q: &QueryLine,
        scoring: &Scoring<'_>,
    ) -> Result<(), EvalError> {
        let rows = std::mem::take(&mut self.rows);
        let mut s = format!("## {}\n\n> {}\n\nEvidence:\n", q.id, shorten(&q.query));
        for e in &q.evidence {
            let text = scoring
                .texts
                .slice(&e.doc_id, e.start.max(0) as usize, e.end.max(0) as usize)
                .map(shorten)
                .unwrap_or_default();
            s.push_str(&format!(
                "- `{}` {}..{}: {}\n",
                e.doc_id, e.start, e.end, text
            ));
        }
        s.push_str(
            "\n| strategy | budget | tokens | recall | recall @chars | coherence | pieces |\n\
             |---|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &rows {
            s.push_str(&format!(
                "| {} | {} | {} | {:.3} | {:.3} | {} | {} |\n",
                r.strategy,
                r.budget,
                r.tokens,
                r.recall,
                r.recall_at_chars,
                r.coherence.map_or("–".to_string(), |c| format!("{c:.3}")),
                r.pieces.len()
            ));
        }
        if let Some(smallest) = rows.iter().map(|r| r.budget).min() {
            s.push_str(&format!("\nPieces at budget {smallest}:\n"));
            for r in rows.iter().filter(|r| r.budget == smallest) {
                s.push_str(&format!(
                    "\n**{}** ({})\n\n",
                    r.strategy,
                    r.notes.join("; ")
                ));
                for (doc, start, end, ev, text) in &r.pieces {
                    let mark = if *ev > 0 { "✓" } else { "✗" };
                    s.push_str(&format!("- {mark} `{doc}` {start}..{end}: {text}\n"));
                }
            }
        }
        s.push('\n');
        self.md
            .write_all(s.as_bytes())
            .map_err(|e| EvalError::io(&self.md_path, e))
    }

    /// Flushes both files.
    pub(super) fn finish(mut self) -> Result<(), EvalError> {
        self.jsonl
            .flush()
            .map_err(|e| EvalError::io(&self.jsonl_path, e))?;
        self.md.flush().map_err(|e| EvalError::io(&self.md_path, e))
    }
}
