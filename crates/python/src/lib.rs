//! `excerpt._excerpt`: the native half of the Python package. It wraps the library's
//! [`excerpt::Engine`] (the same code the CLI, the HTTP server and the MCP server run) in
//! three Python classes, `Engine`, `Context` and `Piece`; the pure-Python half
//! (`crates/python/python/excerpt/`) re-exports them and adds the LangChain and
//! LlamaIndex retrievers.
//!
//! Conventions:
//! - Every call that reads files, embeds or searches runs with the GIL released, so other
//!   Python threads go on meanwhile.
//! - Errors are raised as the exception classes of `excerpt.errors`, chosen by the
//!   engine's [`ErrorKind`], with the engine's own message.
//! - Reports and listings cross as plain Python values (dicts and lists), through their
//!   serde JSON form: the same keys as `excerpt ... --json` prints.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use excerpt::{
    EmbedderSpec, Engine as Inner, EngineError, EngineOptions, ErrorKind, IngestOptions,
    LoadOptions, NoProgress, ParsedDocument, PdfWorker, PostedDocument, QuerySpec, RemoteConfig,
    RenderFormat,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// The engine's error as the `excerpt.errors` exception of its kind.
fn py_err(py: Python<'_>, e: EngineError) -> PyErr {
    let name = match e.kind() {
        ErrorKind::BadInput => "BadInputError",
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::Conflict => "ConflictError",
        ErrorKind::Unavailable => "UnavailableError",
        ErrorKind::Internal => "InternalError",
    };
    raise(py, name, e.to_string())
}

/// An `excerpt.errors.<name>(message)`; a `RuntimeError` if that module cannot be read.
fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    match py
        .import("excerpt.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|class| class.call1((message.clone(),)))
    {
        Ok(exc) => PyErr::from_value(exc),
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
    }
}

/// A serde value as the Python value `json.loads` makes of it.
fn to_py<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let text =
        serde_json::to_string(value).map_err(|e| raise(py, "InternalError", e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// A Python value (dict, list, str, number, bool, None) as JSON.
fn from_py(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| raise(py, "BadInputError", e.to_string()))
}

/// Strings from a `str` or an iterable of `str` (a lone `str` is one item, not letters).
fn strings(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    if value.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(s) = value.extract::<String>() {
        return Ok(vec![s]);
    }
    value
        .try_iter()
        .map_err(|_| PyTypeError::new_err("expected a str or an iterable of str"))?
        .map(|item| item?.str().map(|s| s.to_string()))
        .collect()
}

/// One passage of a context: a contiguous span of one document, with its exact place.
///
/// `text == document_text[start:end]` (offsets count Unicode code points, as Python's
/// `str` indexes do).
#[pyclass(module = "excerpt", frozen, get_all, skip_from_py_object)]
#[derive(Clone, serde::Serialize)]
struct Piece {
    /// Document id.
    doc_id: String,
    /// Document title.
    title: String,
    /// Heading path of the section the piece starts in ("" if none).
    section: String,
    /// Start offset in the document text (characters).
    start: usize,
    /// End offset (exclusive).
    end: usize,
    /// The text, exactly the document's characters `start..end`.
    text: String,
    /// Strategy-specific score, higher is better.
    score: f32,
    /// Relevance in [0, 1].
    relevance: f32,
    /// LLM tokens of `text`.
    tokens: usize,
    /// First page (1-based) for paged documents (PDF), else None.
    page_start: Option<u32>,
    /// Last page (1-based) for paged documents, else None.
    page_end: Option<u32>,
    /// First chunk ordinal covered.
    first_chunk: u32,
    /// Last chunk ordinal covered (inclusive).
    last_chunk: u32,
}

#[pymethods]
impl Piece {
    fn __repr__(&self) -> String {
        format!(
            "Piece(doc_id={:?}, start={}, end={}, tokens={}, score={:.4})",
            self.doc_id, self.start, self.end, self.tokens, self.score
        )
    }

    /// The piece as a dict: its attributes, valued as in the JSON output.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, self)
    }
}

impl From<&excerpt::Piece> for Piece {
    fn from(p: &excerpt::Piece) -> Piece {
        Piece {
            doc_id: p.doc_id.clone(),
            title: p.title.clone(),
            section: p.section.clone(),
            start: p.start,
            end: p.end,
            text: p.text.clone(),
            score: p.score,
            relevance: p.relevance,
            tokens: p.tokens,
            page_start: p.page_start,
            page_end: p.page_end,
            first_chunk: p.first_chunk,
            last_chunk: p.last_chunk,
        }
    }
}

/// The context assembled for one query: pieces in the order an LLM should read them,
/// and the same context rendered for a prompt (`text`), for people (`markdown`) or as
/// JSON (`json`).
#[pyclass(module = "excerpt", frozen)]
struct Context {
    query: String,
    inner: excerpt::Context,
    /// The best hits explained (`query(explain=N)`).
    explained: Option<Vec<excerpt::ExplainedHit>>,
}

#[pymethods]
impl Context {
    /// The query the context answers.
    #[getter]
    fn query(&self) -> &str {
        &self.query
    }

    /// The strategy that assembled it (e.g. "auto").
    #[getter]
    fn strategy(&self) -> &str {
        &self.inner.strategy
    }

    /// The token budget asked for.
    #[getter]
    fn budget(&self) -> usize {
        self.inner.budget
    }

    /// LLM tokens of all pieces.
    #[getter]
    fn tokens(&self) -> usize {
        self.inner.tokens
    }

    /// The pieces, in the order they are handed to an LLM.
    #[getter]
    fn pieces(&self) -> Vec<Piece> {
        self.inner.pieces.iter().map(Piece::from).collect()
    }

    /// What the strategy decided, for people and logs.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.inner.notes.clone()
    }

    /// What the context may be missing (documents of a damaged index).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    /// Where the query's time went, in milliseconds (`embed_ms`, `lexical_ms`,
    /// `dense_ms`, `fusion_ms`, `rerank_ms`, `feedback_ms`, `assembly_ms`, `total_ms`),
    /// when the query asked for it (`timings=True`); else `None`.
    #[getter]
    fn timings<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .timings
            .as_ref()
            .map(|t| to_py(py, t))
            .transpose()
    }

    /// Why the context holds what it does, when the query asked (`explain=N`): the first
    /// stage's best N hits as dicts (`rank`, `doc_id`, `chunk`, `start`, `end`,
    /// `relevance`, `score_relevance`, `bm25_rank`, `dense_rank`, `in_context`,
    /// `preview`; `excerpt query --explain`); else `None`.
    #[getter]
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.explained.as_ref().map(|e| to_py(py, e)).transpose()
    }

    /// The context as prompt text (`excerpt query --format text`).
    #[getter]
    fn text(&self) -> String {
        excerpt::render(&self.query, &self.inner, RenderFormat::Text, None)
    }

    /// The context as Markdown (`excerpt query --format markdown`).
    #[getter]
    fn markdown(&self) -> String {
        excerpt::render(&self.query, &self.inner, RenderFormat::Markdown, None)
    }

    /// The context as JSON (`excerpt query --format json`).
    #[getter]
    fn json(&self) -> String {
        excerpt::render(&self.query, &self.inner, RenderFormat::Json, None)
    }

    /// Prompt text with another closing instruction ("" drops it).
    fn render_text(&self, instruction: String) -> String {
        excerpt::render(
            &self.query,
            &self.inner,
            RenderFormat::Text,
            Some(instruction),
        )
    }

    /// The JSON output as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &excerpt::context_value(&self.query, &self.inner))
    }

    fn __len__(&self) -> usize {
        self.inner.pieces.len()
    }

    fn __str__(&self) -> String {
        self.text()
    }

    fn __repr__(&self) -> String {
        format!(
            "Context(strategy={:?}, pieces={}, tokens={}, budget={})",
            self.inner.strategy,
            self.inner.pieces.len(),
            self.inner.tokens,
            self.inner.budget
        )
    }
}

/// An Excerpt index (a directory, or a PostgreSQL URL) with its embedding model.
///
/// Nothing is read when the engine is made; the model loads on the first ingest or
/// query. One engine may be shared by threads.
#[pyclass(module = "excerpt", frozen)]
struct Engine {
    inner: Arc<Inner>,
}

#[pymethods]
impl Engine {
    /// `index`: a directory (made on first ingest) or `postgres://user@host/db`.
    /// `model`: a local sentence-transformers directory or a model name under
    /// `$EXCERPT_HOME/models` (default: all-MiniLM-L6-v2). `embed_url` + `embed_model`:
    /// an OpenAI-compatible `/v1/embeddings` endpoint instead (key from
    /// `$OPENAI_API_KEY` or the variable named by `embed_api_key_env`).
    /// `llm_encoding`: the tokenizer budgets are counted in (`o200k_base`, the default,
    /// `cl100k_base`, or `chars`: 4 characters a token).
    #[new]
    #[pyo3(signature = (index, *, model=None, embed_url=None, embed_model=None, embed_api_key_env=None, llm_encoding="o200k_base"))]
    fn new(
        py: Python<'_>,
        index: PathBuf,
        model: Option<String>,
        embed_url: Option<String>,
        embed_model: Option<String>,
        embed_api_key_env: Option<String>,
        llm_encoding: &str,
    ) -> PyResult<Engine> {
        let mut options = EngineOptions::new(index);
        options.llm_encoding = llm_encoding.to_string();
        options.embedder = match (embed_url, embed_model) {
            (None, None) => EmbedderSpec::Local { model },
            (Some(url), Some(name)) => {
                if model.is_some() {
                    return Err(raise(
                        py,
                        "BadInputError",
                        "give either model (a local model) or embed_url and embed_model (an endpoint), not both".into(),
                    ));
                }
                let mut cfg = RemoteConfig::new(url, name);
                cfg.endpoint.api_key_env =
                    Some(embed_api_key_env.unwrap_or_else(|| "OPENAI_API_KEY".into()));
                EmbedderSpec::Remote(cfg)
            }
            _ => {
                return Err(raise(
                    py,
                    "BadInputError",
                    "embed_url and embed_model go together".into(),
                ))
            }
        };
        Ok(Engine {
            inner: Arc::new(Inner::new(options)),
        })
    }

    /// The index directory or URL.
    #[getter]
    fn index(&self) -> String {
        self.inner.index_dir().display().to_string()
    }

    /// Ingests files and folders (Markdown, HTML, text, JSONL, PDF; `.gitignore`
    /// honoured). Unchanged files are skipped by content hash. `prune`: also remove the
    /// documents whose files under these paths are gone. Returns the report as a dict
    /// (`added`, `updated`, `unchanged`, `skipped`, `failed`, `documents`, ...).
    /// Ctrl-C (KeyboardInterrupt) stops after committing what was embedded.
    ///
    /// PDFs are parsed in this process unless `pdf_worker` names an `excerpt` binary:
    /// then each PDF is parsed by `excerpt pdf-worker` in a child process under memory
    /// and time limits (2 GiB, 60 s), so a hostile PDF is skipped instead of taking this
    /// process's memory.
    ///
    /// `late_chunking=True` also stores a vector for every sentence, pooled from the
    /// forward pass that embeds its chunk (no extra model work; the index grows by about
    /// 388 bytes a sentence): the default strategy then weighs a sentence's meaning for
    /// long, many-part questions. Local models only.
    #[pyo3(signature = (paths, *, prune=false, pdf_worker=None, late_chunking=false))]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        paths: &Bound<'py, PyAny>,
        prune: bool,
        pdf_worker: Option<PathBuf>,
        late_chunking: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let paths: Vec<PathBuf> = if let Ok(one) = paths.extract::<PathBuf>() {
            vec![one]
        } else {
            paths
                .try_iter()
                .map_err(|_| PyTypeError::new_err("paths: a path or an iterable of paths"))?
                .map(|p| p?.extract::<PathBuf>())
                .collect::<PyResult<_>>()?
        };
        let mut opts = IngestOptions {
            prune,
            sentence_vectors: late_chunking,
            late_chunking,
            ..IngestOptions::default()
        };
        opts.load.pdf_worker = pdf_worker.map(|program| PdfWorker::new(program, ["pdf-worker"]));
        let engine = self.inner.clone();
        let report = interruptible(py, opts, move |opts| {
            engine.ingest(&paths, opts, &NoProgress)
        })?;
        to_py(py, &report)
    }

    /// Ingests documents given in memory: each a dict with `id` and `text`, and
    /// optionally `title`, `metadata` (a dict, matched by `where` filters) and `format`
    /// (`text`, default, `markdown`, `html`, or `pdf` and `docx` with the file
    /// base64-encoded in `text`). Returns the report as a dict. `late_chunking` as for
    /// [`ingest`](Engine::ingest).
    #[pyo3(signature = (documents, *, late_chunking=false))]
    fn ingest_documents<'py>(
        &self,
        py: Python<'py>,
        documents: &Bound<'py, PyAny>,
        late_chunking: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut docs = Vec::new();
        for item in documents
            .try_iter()
            .map_err(|_| PyTypeError::new_err("documents: an iterable of dicts"))?
        {
            docs.push(parse_document(py, &item?)?);
        }
        let engine = self.inner.clone();
        let opts = IngestOptions {
            sentence_vectors: late_chunking,
            late_chunking,
            ..IngestOptions::default()
        };
        let report = interruptible(py, opts, move |opts| {
            engine.ingest_documents(docs, opts, &NoProgress)
        })?;
        to_py(py, &report)
    }

    /// The context for `text` under a token `budget`.
    ///
    /// `strategy`: `auto` (default), `rse`, `topk`, `adjacent`, `window`, `section`, with
    /// optional `:key=value,...`. `mode`: `hybrid` (default), `dense`, `bm25`. `fusion`:
    /// `rrf:60` (default), `minmax:0.5`, `dbsf:0.5`. Filters: `doc_ids`, `prefixes`,
    /// `where` (`"key=value"`, `"key>=n"`, `"key=a|b"`; all must hold). `top_k`: hits
    /// handed to the strategy; `candidates`: per search before fusion; `rerank`: rerank
    /// this many with the configured reranker. `timings`: the context says where the
    /// query's time went (`Context.timings`). `explain`: the context explains its best
    /// this many hits (`Context.explain`; each search is run again alone).
    #[pyo3(signature = (text, *, budget=None, strategy=None, mode=None, fusion=None, doc_ids=None, prefixes=None, r#where=None, top_k=None, candidates=None, rerank=None, timings=false, explain=None))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        text: String,
        budget: Option<usize>,
        strategy: Option<String>,
        mode: Option<String>,
        fusion: Option<String>,
        doc_ids: Option<&Bound<'_, PyAny>>,
        prefixes: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        top_k: Option<usize>,
        candidates: Option<usize>,
        rerank: Option<usize>,
        timings: bool,
        explain: Option<usize>,
    ) -> PyResult<Context> {
        let mut spec = QuerySpec::new(text.clone());
        spec.timings = timings;
        spec.budget = budget;
        spec.strategy = strategy;
        spec.mode = mode;
        spec.fusion = fusion;
        spec.top_k = top_k;
        spec.candidates = candidates;
        spec.rerank = rerank;
        spec.filter.doc_ids = strings(doc_ids)?;
        spec.filter.prefixes = strings(prefixes)?;
        spec.filter.conditions = strings(r#where)?;
        let engine = self.inner.clone();
        let (ctx, explained) = py
            .detach(move || {
                let req = spec.to_request()?;
                let ctx = engine.query(&req)?;
                let explained = match explain {
                    Some(n) => Some(engine.explain(&req, &ctx, n)?),
                    None => None,
                };
                Ok::<_, excerpt::EngineError>((ctx, explained))
            })
            .map_err(|e| py_err(py, e))?;
        Ok(Context {
            query: text,
            inner: ctx,
            explained,
        })
    }

    /// Every document of the index, as dicts (`id`, `title`, `source`, `chars`,
    /// `chunks`, `metadata`, ...), in id order.
    fn documents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.inner.clone();
        let docs = py
            .detach(move || engine.documents())
            .map_err(|e| py_err(py, e))?;
        to_py(py, &docs)
    }

    /// The text of document `doc_id` (pieces' `start`/`end` index into it), or None.
    fn document_text(&self, py: Python<'_>, doc_id: String) -> PyResult<Option<String>> {
        let engine = self.inner.clone();
        let doc = py
            .detach(move || engine.document(&doc_id))
            .map_err(|e| py_err(py, e))?;
        Ok(doc.map(|d| d.text.to_string()))
    }

    /// Removes documents by id; returns the ids that were removed.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let ids = strings(Some(ids))?;
        let engine = self.inner.clone();
        py.detach(move || engine.remove(&ids))
            .map_err(|e| py_err(py, e))
    }

    /// Counts and settings of the index, as a dict (`excerpt stats --json`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.inner.clone();
        let stats = py
            .detach(move || engine.stats())
            .map_err(|e| py_err(py, e))?;
        to_py(py, &stats)
    }

    fn __repr__(&self) -> String {
        format!("Engine({:?})", self.index())
    }
}

/// One in-memory document from a dict (`id`, `text`, and optionally `title`, `metadata`,
/// `format`), loaded as the server loads a posted one ([`PostedDocument::load`]).
fn parse_document(py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<ParsedDocument> {
    let value = from_py(py, item)?;
    let bad = |m: String| raise(py, "BadInputError", m);
    if !value.is_object() {
        return Err(bad(
            "each document is a dict with \"id\" and \"text\"".into()
        ));
    }
    let posted: PostedDocument = serde_json::from_value(value).map_err(|e| {
        bad(format!(
            "a document dict: {e} (keys: id and text, optionally title, metadata, format)"
        ))
    })?;
    let (doc, _warnings) = posted
        .load(&LoadOptions::default())
        .map_err(|e| py_err(py, e))?;
    Ok(doc)
}

/// Runs an ingest on a worker thread with the GIL released, checking for Python signals
/// every 100 ms: on KeyboardInterrupt the ingest is asked to stop (what was embedded is
/// committed) and the interrupt is raised once it has.
fn interruptible<F>(
    py: Python<'_>,
    mut opts: IngestOptions,
    work: F,
) -> PyResult<excerpt::IngestReport>
where
    F: FnOnce(&IngestOptions) -> Result<excerpt::IngestReport, EngineError> + Send + 'static,
{
    let cancel = Arc::new(AtomicBool::new(false));
    opts.cancel = Some(cancel.clone());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work(&opts));
    });
    let mut interrupt: Option<PyErr> = None;
    let mut rx = Some(rx);
    loop {
        let waiting = rx.take().expect("the receiver is put back after each wait");
        let (waiting, got) = py.detach(move || {
            let got = waiting.recv_timeout(Duration::from_millis(100));
            (waiting, got)
        });
        rx = Some(waiting);
        match got {
            Ok(result) => {
                if let Some(e) = interrupt {
                    return Err(e);
                }
                return result.map_err(|e| py_err(py, e));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if interrupt.is_none() {
                    if let Err(e) = py.check_signals() {
                        cancel.store(true, Ordering::SeqCst);
                        interrupt = Some(e);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(raise(
                    py,
                    "InternalError",
                    "the ingest thread ended without a result (it panicked)".into(),
                ))
            }
        }
    }
}

/// The module `excerpt._excerpt`.
#[pymodule]
fn _excerpt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<Context>()?;
    m.add_class::<Piece>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_BUDGET", excerpt::MAX_BUDGET)?;
    Ok(())
}
