//! [`run_eval`]: a query set through the engine, every strategy at every budget.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use excerpt::{Engine, FusionMethod, IngestOptions, IngestProgress, Mode, QueryRequest, Snapshot};
use excerpt_context::{LlmTokens, StrategyConfig};
use excerpt_core::{content_hash, ChunkKey};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::format::{read_corpus, read_queries, write_jsonl_line, ResultLine, ResultPiece};
use crate::metrics::{
    latency, mean, on_boundaries, piece_coherence, round_to, score_query, summarize, ChunkVectors,
    CorpusTexts, PieceSpan, QueryScore,
};
use crate::plot::write_recall_vs_budget;
use crate::report::{EvalReport, Metrics, QueryFailure, RunInfo, StrategyResult};
use crate::EvalError;

/// Token budgets run when none are given.
pub const DEFAULT_BUDGETS: [usize; 4] = [500, 1000, 2000, 4000];

/// What to evaluate and where to write it.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// `corpus.jsonl` (the eval format; ingested as is).
    pub corpus: PathBuf,
    /// `queries.jsonl`.
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
        }
    }

    /// The strategies run, parsed: `topk` first, then the others in the order given,
    /// duplicates dropped. Labels are the canonical names (`rse:precision` keeps its
    /// preset).
    fn strategy_list(&self) -> Result<Vec<(String, StrategyConfig)>, EvalError> {
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

    /// The budgets run: ascending, duplicates dropped, the defaults when empty.
    fn budget_list(&self) -> Result<Vec<usize>, EvalError> {
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
fn file_label(label: &str) -> String {
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

/// Chunk vectors of a snapshot, by document id.
struct SnapshotVectors<'a>(&'a Snapshot);

impl ChunkVectors for SnapshotVectors<'_> {
    fn chunk_vector(&self, doc_id: &str, ordinal: u32) -> Option<&[f32]> {
        let d = self.0.doc_index(doc_id)?;
        self.0.vector(ChunkKey::new(d, ordinal))
    }
}

/// Boundary offsets of every indexed document: sentence starts, ends, and ends without
/// their trailing whitespace (see [`crate::metrics::sentence_boundaries`]).
fn snapshot_boundaries(snapshot: &Snapshot) -> HashMap<String, Vec<usize>> {
    snapshot
        .documents()
        .iter()
        .map(|doc| {
            let mut b = Vec::with_capacity(doc.sentences.len() * 3);
            for s in &doc.sentences {
                b.push(s.char_start);
                b.push(s.char_end);
                let trailing = doc
                    .text
                    .get(s.byte_start..s.byte_end)
                    .map(|t| t.chars().rev().take_while(|c| c.is_whitespace()).count())
                    .unwrap_or(0);
                b.push(s.char_end - trailing.min(s.char_len()));
            }
            b.sort_unstable();
            b.dedup();
            (doc.id.clone(), b)
        })
        .collect()
}

/// What one strategy at one budget accumulated over the queries.
struct Acc {
    label: String,
    config: StrategyConfig,
    budget: usize,
    file: String,
    path: PathBuf,
    out: BufWriter<File>,
    scores: Vec<QueryScore>,
    tokens: Vec<f64>,
    latency_ms: Vec<f64>,
    intra: Vec<f64>,
    boundary_on: usize,
    boundary_n: usize,
}

fn ids_sample<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = ids.into_iter().collect();
    v.sort_unstable();
    let more = v.len().saturating_sub(5);
    let mut s = v
        .iter()
        .take(5)
        .map(|id| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Checks that the index holds exactly the corpus: the same ids, the same texts.
fn verify_index(
    snapshot: &Snapshot,
    corpus_hashes: &HashMap<String, String>,
    index_dir: &Path,
    ingest_failures: &[String],
) -> Result<(), EvalError> {
    let indexed: HashMap<&str, String> = snapshot
        .documents()
        .iter()
        .map(|d| (d.id.as_str(), content_hash(&[d.text.as_bytes()])))
        .collect();
    let extra: Vec<&str> = indexed
        .keys()
        .copied()
        .filter(|id| !corpus_hashes.contains_key(*id))
        .collect();
    if !extra.is_empty() {
        return Err(EvalError::IndexMismatch(format!(
            "the index {} holds {} documents that are not in the corpus ({}): evaluate with a fresh --index directory",
            index_dir.display(),
            extra.len(),
            ids_sample(extra)
        )));
    }
    let missing: Vec<&str> = corpus_hashes
        .keys()
        .map(String::as_str)
        .filter(|id| !indexed.contains_key(id))
        .collect();
    let changed: Vec<&str> = corpus_hashes
        .iter()
        .filter(|(id, h)| indexed.get(id.as_str()).is_some_and(|ih| ih != *h))
        .map(|(id, _)| id.as_str())
        .collect();
    if !missing.is_empty() || !changed.is_empty() {
        let mut msg = String::new();
        if !missing.is_empty() {
            msg.push_str(&format!(
                "{} corpus documents are not in the index ({})",
                missing.len(),
                ids_sample(missing)
            ));
        }
        if !changed.is_empty() {
            if !msg.is_empty() {
                msg.push_str("; ");
            }
            msg.push_str(&format!(
                "{} documents have another text in the index ({})",
                changed.len(),
                ids_sample(changed)
            ));
        }
        if !ingest_failures.is_empty() {
            msg.push_str(&format!(
                "; the ingest reported: {}",
                ingest_failures
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        return Err(EvalError::IndexMismatch(msg));
    }
    Ok(())
}

/// Runs an evaluation.
///
/// Ingests `opts.corpus` into the engine's index (incremental: a second run on the same
/// corpus embeds nothing) and checks the index then holds exactly the corpus (same ids,
/// same texts; another document in it is an error: use a fresh index directory). Each
/// query is retrieved once (restricted to its `scope` when it has one) and assembled by
/// every strategy at every budget; each result is appended at once, flushed, to
/// `out/results-<strategy>-<budget>.jsonl` in the eval format. A query whose retrieval or
/// assembly fails is recorded in [`EvalReport::failures`] and counts as missing; if every
/// query fails, the run fails. Then the metrics are computed natively (the coverage
/// numbers are those `score_context.py` prints for each results file, unbudgeted: the
/// budget is the engine's token budget) and `report.json`, `report.md` and
/// `recall-vs-budget.svg` are written to `out`.
///
/// Latency is the wall time of `retrieve` (embedding the query included) plus
/// `assemble`, per strategy and budget.
pub fn run_eval(
    engine: &Engine,
    opts: &EvalOptions,
    progress: &dyn IngestProgress,
) -> Result<EvalReport, EvalError> {
    let started = Instant::now();
    let strategies = opts.strategy_list()?;
    let budgets = opts.budget_list()?;
    if opts.candidates == 0 {
        return Err(EvalError::Invalid("candidates must be at least 1".into()));
    }
    opts.fusion
        .validate()
        .map_err(|e| EvalError::Invalid(format!("fusion: {e}")))?;

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
    std::fs::create_dir_all(&opts.out).map_err(|e| EvalError::io(&opts.out, e))?;

    // Ingest (incremental) and check the index is exactly the corpus.
    let ingest = engine.ingest(
        std::slice::from_ref(&opts.corpus),
        &IngestOptions::default(),
        progress,
    )?;
    let failures_seen: Vec<String> = ingest
        .failed
        .iter()
        .chain(&ingest.skipped)
        .map(|p| format!("{}: {}", p.path, p.reason))
        .collect();
    let snapshot = engine.snapshot()?;
    verify_index(
        &snapshot,
        &corpus_hashes,
        engine.index_dir(),
        &failures_seen,
    )?;
    drop(corpus_hashes);
    let documents = corpus.len();
    let texts = CorpusTexts::new(corpus.into_iter().map(|d| (d.id, d.text)));
    let boundaries = snapshot_boundaries(&snapshot);
    let vectors = SnapshotVectors(&snapshot);
    let llm_encoding = engine.llm_tokens()?.name().to_string();

    // One results file per strategy and budget, truncated now, appended per query.
    let mut accs: Vec<Acc> = Vec::new();
    let mut files_seen = HashSet::new();
    for (label, config) in &strategies {
        for &budget in &budgets {
            let file = format!("results-{}-{budget}.jsonl", file_label(label));
            if !files_seen.insert(file.clone()) {
                return Err(EvalError::Invalid(format!(
                    "two strategies would write the same file {file}"
                )));
            }
            let path = opts.out.join(&file);
            let out = BufWriter::new(File::create(&path).map_err(|e| EvalError::io(&path, e))?);
            accs.push(Acc {
                label: label.clone(),
                config: *config,
                budget,
                file,
                path,
                out,
                scores: Vec::with_capacity(queries.len()),
                tokens: Vec::with_capacity(queries.len()),
                latency_ms: Vec::with_capacity(queries.len()),
                intra: Vec::new(),
                boundary_on: 0,
                boundary_n: 0,
            });
        }
    }

    let target = if opts.quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(Some(queries.len() as u64), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} queries [{bar:30}] {pos}/{len}  {per_sec}  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );

    let mut failures: Vec<QueryFailure> = Vec::new();
    let mut retrieved_ok = 0usize;
    for q in &queries {
        let mut req = QueryRequest::new(q.query.clone());
        req.mode = opts.mode;
        req.fusion = opts.fusion;
        req.candidates = opts.candidates;
        if let Some(scope) = q.scope.as_ref().filter(|s| !s.is_empty()) {
            req.filter.doc_ids = scope.clone();
        }
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
                    acc.scores.push(score_query(q, None, &texts, None));
                    acc.tokens.push(0.0);
                }
                bar.inc(1);
                continue;
            }
        };
        retrieved_ok += 1;
        for acc in &mut accs {
            let t = Instant::now();
            let context = engine.assemble(&q.query, &retrieved, &acc.config, acc.budget);
            let ms = retrieve_ms + t.elapsed().as_secs_f64() * 1e3;
            let context = match context {
                Ok(c) => c,
                Err(e) => {
                    failures.push(QueryFailure {
                        query_id: q.id.clone(),
                        strategy: Some(acc.label.clone()),
                        budget: Some(acc.budget),
                        message: e.to_string(),
                    });
                    acc.scores.push(score_query(q, None, &texts, None));
                    acc.tokens.push(0.0);
                    continue;
                }
            };
            let line = ResultLine {
                query_id: q.id.clone(),
                strategy: acc.label.clone(),
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
                    })
                    .collect(),
            };
            write_jsonl_line(&mut acc.out, &line, &acc.path)?;
            acc.scores
                .push(score_query(q, Some(&line.pieces), &texts, None));
            acc.tokens
                .push(context.pieces.iter().map(|p| p.tokens).sum::<usize>() as f64);
            acc.latency_ms.push(ms);
            for p in &context.pieces {
                let span = PieceSpan {
                    doc_id: &p.doc_id,
                    start: p.start,
                    end: p.end,
                    first_chunk: p.first_chunk,
                    last_chunk: p.last_chunk,
                };
                if let Some(c) = piece_coherence(&span, &vectors) {
                    acc.intra.push(c);
                }
                if let Some(b) = boundaries.get(&p.doc_id) {
                    acc.boundary_n += 1;
                    acc.boundary_on += usize::from(on_boundaries(b, p.start, p.end));
                }
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if retrieved_ok == 0 {
        if let Some(f) = failures.first() {
            return Err(EvalError::Invalid(format!(
                "every query failed; the first, {:?}: {}",
                f.query_id, f.message
            )));
        }
    }

    let mut results = Vec::with_capacity(accs.len());
    for acc in accs {
        drop(acc.out);
        let coverage = summarize(&acc.scores);
        let boundary = (acc.boundary_n > 0).then(|| acc.boundary_on as f64 / acc.boundary_n as f64);
        results.push(StrategyResult {
            strategy: acc.label,
            budget: acc.budget,
            results_file: acc.file,
            metrics: Metrics::new(
                &coverage,
                mean(&acc.tokens).unwrap_or(0.0),
                mean(&acc.intra),
                boundary,
                latency(&acc.latency_ms),
            ),
        });
    }

    let config = snapshot.config();
    let report = EvalReport {
        run: RunInfo {
            corpus: opts.corpus.display().to_string(),
            queries_file: opts.queries.display().to_string(),
            queries: queries.len(),
            documents,
            index: engine.index_dir().display().to_string(),
            mode: serde_json::to_value(opts.mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{:?}", opts.mode)),
            fusion: serde_json::to_value(opts.fusion).unwrap_or(serde_json::Value::Null),
            candidates: opts.candidates,
            model_id: config.model_id.clone(),
            chunker: config.chunker.to_string(),
            llm_encoding,
            strategies: strategies.iter().map(|(l, _)| l.clone()).collect(),
            budgets,
            ingested: ingest.added + ingest.updated,
            ingest_seconds: round_to(ingest.seconds, 3),
            seconds: round_to(started.elapsed().as_secs_f64(), 3),
        },
        results,
        failures,
        not_done: vec![
            "answer-level evaluation (generating answers from the context and grading them against the reference answers)".into(),
        ],
    };
    report.write_json(&opts.out.join("report.json"))?;
    report.write_markdown(&opts.out.join("report.md"))?;
    write_recall_vs_budget(&report.results, &opts.out.join("recall-vs-budget.svg"))?;
    Ok(report)
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
