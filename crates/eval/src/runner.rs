//! [`run_eval`]: a query set through the engine, every strategy at every budget.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use excerpt::{Engine, FusionMethod, IngestOptions, IngestProgress, Mode, QueryRequest, Snapshot};
use excerpt_context::{LlmTokens, StrategyConfig};
use excerpt_core::{content_hash, ChunkKey, EmbedError};
use excerpt_embed::{ChatClient, ChatConfig};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::answer::{
    answer_prompt, exact_match, token_f1, AnswerLine, PROMPT_VERSION, SYSTEM_PROMPT,
};
use crate::format::{
    read_corpus, read_queries, write_jsonl_line, QueryLine, ResultLine, ResultPiece,
};
use crate::metrics::{
    latency, mean, on_boundaries, piece_coherence, round_to, score_query, summarize, ChunkVectors,
    CorpusTexts, PieceSpan, QueryScore,
};
use crate::plot::write_recall_vs_budget;
use crate::report::{
    AnswerMetrics, AnswerRunInfo, EvalReport, Metrics, QueryFailure, RunInfo, StrategyResult,
};
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
    /// Answer-level evaluation: the OpenAI-compatible chat endpoint that answers each
    /// query with a reference `answer` from each strategy's context at each budget
    /// (`max_concurrency` requests in flight). `None` (the default): no answers.
    pub answer: Option<ChatConfig>,
    /// Ingest with sentence vectors ([`IngestOptions::sentence_vectors`]), for `window`.
    /// Documents already in the index are not re-ingested: use a fresh index.
    pub sentence_vectors: bool,
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
    answers: Option<AnswerAcc>,
}

/// What one strategy at one budget accumulated over its answers.
struct AnswerAcc {
    file: String,
    path: PathBuf,
    out: BufWriter<File>,
    answered: usize,
    f1_sum: f64,
    em: usize,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// A question waiting to be sent: the user message for one query's context from one
/// strategy at one budget.
struct AnswerJob {
    acc: usize,
    query: usize,
    user: String,
}

/// The answer client and what it has done so far.
struct Answerer {
    client: ChatClient,
    concurrency: usize,
    pending: Vec<AnswerJob>,
    requests: usize,
    seconds: f64,
}

impl Answerer {
    /// Jobs gathered before a batch is sent: enough to keep every request slot busy
    /// through most of the batch.
    fn batch_size(&self) -> usize {
        self.concurrency.saturating_mul(4).max(1)
    }

    /// Sends the pending jobs (identical prompts once), then scores each answer and
    /// appends its line to its strategy's answers file, jobs in the order queued. The
    /// first request that failed after the client's retries fails the run.
    fn flush(&mut self, accs: &mut [Acc], queries: &[QueryLine]) -> Result<(), EvalError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let jobs = std::mem::take(&mut self.pending);
        let mut unique: Vec<(Option<String>, String)> = Vec::new();
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut slots = Vec::with_capacity(jobs.len());
        for job in &jobs {
            let slot = *slot_of.entry(job.user.as_str()).or_insert_with(|| {
                unique.push((Some(SYSTEM_PROMPT.to_string()), job.user.clone()));
                unique.len() - 1
            });
            slots.push(slot);
        }
        let t = Instant::now();
        let responses = self.client.complete_many(&unique, self.concurrency);
        self.seconds += t.elapsed().as_secs_f64();
        self.requests += unique.len();
        for (job, slot) in jobs.iter().zip(slots) {
            let (Some(acc), Some(q)) = (accs.get_mut(job.acc), queries.get(job.query)) else {
                continue;
            };
            let (Some(answers), Some(reference)) = (acc.answers.as_mut(), q.answer.as_deref())
            else {
                continue;
            };
            let response = match responses.get(slot) {
                Some(Ok(r)) => r,
                Some(Err(e)) => {
                    return Err(EvalError::Answer {
                        endpoint: self.client.endpoint().to_string(),
                        query_id: q.id.clone(),
                        strategy: acc.label.clone(),
                        budget: acc.budget,
                        message: endpoint_message(e),
                    })
                }
                None => continue,
            };
            let f1 = token_f1(&response.text, reference);
            let em = exact_match(&response.text, reference);
            let line = AnswerLine {
                query_id: q.id.clone(),
                answer: response.text.clone(),
                reference: reference.to_string(),
                f1: round_to(f1, 4),
                em,
                prompt_tokens: response.prompt_tokens,
                completion_tokens: response.completion_tokens,
            };
            write_jsonl_line(&mut answers.out, &line, &answers.path)?;
            answers.answered += 1;
            answers.f1_sum += f1;
            answers.em += usize::from(em);
            answers.prompt_tokens += response.prompt_tokens.unwrap_or(0);
            answers.completion_tokens += response.completion_tokens.unwrap_or(0);
        }
        Ok(())
    }
}

/// What the chat endpoint said, without the client's own "embedding endpoint" wording.
fn endpoint_message(e: &EmbedError) -> String {
    match e {
        EmbedError::Remote {
            status: Some(status),
            message,
            ..
        } => format!("HTTP {status}: {message}"),
        EmbedError::Remote { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Whether a query has a reference answer to score against.
fn has_reference(q: &QueryLine) -> bool {
    q.answer.as_deref().is_some_and(|a| !a.trim().is_empty())
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
        return Err(EvalError::ForeignDocuments {
            index: index_dir.to_path_buf(),
            count: extra.len(),
            sample: ids_sample(extra),
        });
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
    let strategies = opts.strategy_list()?;
    let budgets = opts.budget_list()?;
    if opts.candidates == 0 {
        return Err(EvalError::Invalid("candidates must be at least 1".into()));
    }
    opts.fusion
        .validate()
        .map_err(|e| EvalError::Invalid(format!("fusion: {e}")))?;
    let mut answerer = match &opts.answer {
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
    std::fs::create_dir_all(&opts.out).map_err(|e| EvalError::io(&opts.out, e))?;

    // Ingest (incremental) and check the index is exactly the corpus.
    let ingest = engine.ingest(
        std::slice::from_ref(&opts.corpus),
        &IngestOptions {
            sentence_vectors: opts.sentence_vectors,
            ..IngestOptions::default()
        },
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
            let answers = match answerer {
                Some(_) => {
                    let file = format!("answers-{}-{budget}.jsonl", file_label(label));
                    let path = opts.out.join(&file);
                    let out =
                        BufWriter::new(File::create(&path).map_err(|e| EvalError::io(&path, e))?);
                    Some(AnswerAcc {
                        file,
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
                answers,
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
    for (qi, q) in queries.iter().enumerate() {
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
        for (ai, acc) in accs.iter_mut().enumerate() {
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
            if let Some(a) = answerer.as_mut().filter(|_| has_reference(q)) {
                a.pending.push(AnswerJob {
                    acc: ai,
                    query: qi,
                    user: answer_prompt(&q.query, &context),
                });
            }
        }
        bar.inc(1);
        if let Some(a) = answerer.as_mut() {
            if a.pending.len() >= a.batch_size() {
                bar.set_message(format!("answering {}", a.pending.len()));
                a.flush(&mut accs, &queries)?;
                bar.set_message("");
            }
        }
    }
    if let Some(a) = answerer.as_mut() {
        bar.set_message(format!("answering {}", a.pending.len()));
        a.flush(&mut accs, &queries)?;
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
        let answer = acc.answers.map(|a| {
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
        results.push(StrategyResult {
            strategy: acc.label,
            budget: acc.budget,
            results_file: acc.file,
            answer,
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
            answer: match (&opts.answer, &answerer) {
                (Some(config), Some(a)) => Some(AnswerRunInfo {
                    endpoint: a.client.endpoint().to_string(),
                    model: config.model.trim().to_string(),
                    prompt_version: PROMPT_VERSION.to_string(),
                    concurrency: a.concurrency,
                    with_reference,
                    without_reference: queries.len() - with_reference,
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
