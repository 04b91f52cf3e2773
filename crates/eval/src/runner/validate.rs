//! The validate stage: options and input files checked, output files named, before
//! anything is written.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use excerpt_context::StrategyConfig;
use excerpt_core::content_hash;
use excerpt_embed::ChatClient;
use excerpt_ingest::{relative_id, walk, DocFormat, WalkItem};

use super::answerer::{endpoint_message, has_reference, Answerer};
use super::options::{file_label, EvalOptions};
use crate::format::{read_corpus, read_query_set, CorpusDoc, PageQueryLine, QueryLine, QuerySet};
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
    /// The queries, in file order (page-format queries scoped to their `doc`).
    pub(super) queries: Vec<QueryLine>,
    /// For a page-format set, the queries as read (in the same order): their evidence is
    /// scored by `text_recall` and `page_hit`.
    pub(super) pages: Option<Vec<PageQueryLine>>,
    /// How many queries have a reference answer.
    pub(super) with_reference: usize,
}

/// The corpus to ingest, as read before the ingest.
pub(super) enum Corpus {
    /// A `corpus.jsonl`: its documents and the content hash of each text, by id.
    Jsonl {
        docs: Vec<CorpusDoc>,
        hashes: HashMap<String, String>,
    },
    /// A folder: the document id and path of every file the ingest loads (supported
    /// formats, after the ingest's ignore rules), in path order.
    Folder { files: Vec<(String, PathBuf)> },
}

impl Corpus {
    fn has(&self, id: &str) -> bool {
        match self {
            Corpus::Jsonl { hashes, .. } => hashes.contains_key(id),
            Corpus::Folder { files } => files.iter().any(|(f, _)| f == id),
        }
    }

    fn sample(&self) -> String {
        let ids: Vec<&str> = match self {
            Corpus::Jsonl { docs, .. } => docs.iter().take(3).map(|d| d.id.as_str()).collect(),
            Corpus::Folder { files } => files.iter().take(3).map(|(f, _)| f.as_str()).collect(),
        };
        ids.iter()
            .map(|id| format!("{id:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What [`validate`] returns: the plan, the corpus to ingest and the answer client.
pub(super) struct Validated {
    pub(super) plan: Plan,
    pub(super) corpus: Corpus,
    pub(super) answerer: Option<Answerer>,
}

/// The files of a folder corpus: every file the ingest walks (same ignore rules) with a
/// supported extension, by document id. A JSONL file inside is refused (its documents
/// carry their own ids: pass it as the corpus).
fn folder_files(
    dir: &Path,
    opts: &excerpt::IngestOptions,
) -> Result<Vec<(String, PathBuf)>, EvalError> {
    let mut files = Vec::new();
    for item in walk(&[dir.to_path_buf()], &opts.walk) {
        match item {
            WalkItem::File { path, root } => match DocFormat::from_path(&path, &opts.load) {
                None => {}
                Some(DocFormat::Jsonl) => {
                    return Err(EvalError::Invalid(format!(
                        "{}: a folder corpus holds documents, not JSONL files ({}); pass a corpus.jsonl itself as the corpus",
                        dir.display(),
                        path.display()
                    )))
                }
                Some(_) => files.push((relative_id(&path, &root), path)),
            },
            WalkItem::Problem(e) => {
                return Err(EvalError::Invalid(format!("{}: {e}", dir.display())))
            }
        }
    }
    if files.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no documents (PDF, Markdown, HTML or text files) in the folder",
            dir.display()
        )));
    }
    Ok(files)
}

/// Reads the corpus: a folder's file list, or a `corpus.jsonl` with the hash of every
/// text (ids checked unique, at least one document).
fn read_corpus_input(opts: &EvalOptions) -> Result<Corpus, EvalError> {
    if opts.corpus.is_dir() {
        return Ok(Corpus::Folder {
            files: folder_files(&opts.corpus, &opts.ingest_options())?,
        });
    }
    let docs = read_corpus(&opts.corpus)?;
    let mut hashes: HashMap<String, String> = HashMap::with_capacity(docs.len());
    for d in &docs {
        let h = content_hash(&[d.text.as_bytes()]);
        if hashes.insert(d.id.clone(), h).is_some() {
            return Err(EvalError::Invalid(format!(
                "{}: document id {:?} appears twice",
                opts.corpus.display(),
                d.id
            )));
        }
    }
    if docs.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no documents",
            opts.corpus.display()
        )));
    }
    Ok(Corpus::Jsonl { docs, hashes })
}

/// Validate stage: checks the options (strategies, budgets, candidates, fusion, answer
/// endpoint), reads the corpus (a folder: its file list) and the queries (either format)
/// and checks their ids are unique, the corpus is not empty, every page-format query's
/// `doc` is a corpus document and, for answer-level evaluation, that some query has a
/// reference answer; names every output file and checks no two runs share one. Writes
/// nothing.
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
                    config.endpoint.url,
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

    let corpus = read_corpus_input(opts)?;
    let (queries, pages) = match read_query_set(&opts.queries)? {
        QuerySet::Spans(q) => (q, None),
        QuerySet::Pages(p) => {
            if let Some(q) = p.iter().find(|q| !corpus.has(&q.doc)) {
                return Err(EvalError::Invalid(format!(
                    "{}: query {:?} is about {:?}, which is not a document of the corpus {} (its ids are e.g. {})",
                    opts.queries.display(),
                    q.id,
                    q.doc,
                    opts.corpus.display(),
                    corpus.sample()
                )));
            }
            (
                p.iter().map(PageQueryLine::to_query_line).collect(),
                Some(p),
            )
        }
    };
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
            pages,
            with_reference,
        },
        corpus,
        answerer,
    })
}
