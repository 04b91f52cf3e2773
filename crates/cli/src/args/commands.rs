//! The arguments of each command (`ingest`, `query`, `ask`, `serve`, `mcp`, `eval`,
//! `bench`...), and the option groups they share (retrieval, LLM endpoint, PDF limits).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::{budget, concurrency, count};
use super::FormatArgs;

/// `excerpt completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// `excerpt man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write excerpt.1 and one excerpt-COMMAND.1 per command into DIR instead of printing
    /// excerpt.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The hidden `pdf-worker` subcommand: the protocol of `excerpt::run_pdf_worker`.
#[derive(Debug, Args)]
pub struct PdfWorkerArgs {
    /// The PDF file; standard input when absent or `-`.
    pub path: Option<PathBuf>,
    /// Refuse PDFs whose page tree claims more pages.
    #[arg(long, default_value_t = excerpt::DEFAULT_MAX_PDF_PAGES)]
    pub max_pages: usize,
    /// The name of the file in warnings (default: the path, or `stdin`).
    #[arg(long)]
    pub name: Option<String>,
    /// Render a page instead (the inspector's page images): standard input is one line
    /// of JSON, the page request, then the PDF (`excerpt::run_pdf_page_worker`).
    #[arg(long)]
    pub page: bool,
}

/// Limits of the worker process each PDF is parsed in (`ingest` and `serve`).
#[derive(Debug, Args)]
pub struct PdfArgs {
    /// Address space of the process each PDF is parsed in, in MiB: a PDF whose parsing
    /// needs more is skipped with the reason.
    #[arg(long, env = "EXCERPT_PDF_MEMORY_MB", value_name = "MIB",
          default_value_t = excerpt::DEFAULT_PDF_MEMORY_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(64..=1 << 22))]
    pub pdf_memory_mb: u64,
    /// Seconds (CPU time, and wall-clock time) the parsing of one PDF may take: a PDF
    /// that takes longer is skipped with the reason.
    #[arg(long, env = "EXCERPT_PDF_TIMEOUT_SECS", value_name = "SECS",
          default_value_t = excerpt::DEFAULT_PDF_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub pdf_timeout_secs: u64,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "EXCERPT_ADDR", default_value = "127.0.0.1:7700")]
    pub addr: String,
    /// Largest request body in bytes (larger ones get 413).
    #[arg(long, env = "EXCERPT_BODY_LIMIT", default_value_t = excerpt_server::DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Chunker of a new index created by POST /v1/ingest (see `excerpt ingest --help`).
    #[arg(long, env = "EXCERPT_CHUNKER")]
    pub chunker: Option<excerpt::ChunkerConfig>,
    /// No chunk headers in a new index created by POST /v1/ingest.
    #[arg(long, env = "EXCERPT_NO_HEADERS")]
    pub no_headers: bool,
    /// Do not load the model before listening (the first query loads it).
    #[arg(long, env = "EXCERPT_NO_WARMUP")]
    pub no_warmup: bool,
    /// Bearer token: writes (ingest, delete) then need `Authorization: Bearer TOKEN`,
    /// and reads too unless --public-reads. Required to listen on a non-loopback
    /// address. Prefer the environment variable: arguments show in `ps`.
    #[arg(long, env = "EXCERPT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// With --token: let reads (query, documents, stats) through without it.
    #[arg(long, env = "EXCERPT_PUBLIC_READS", requires = "token")]
    pub public_reads: bool,
    /// A read-only token beside --token: it lets reads through (query, documents,
    /// stats, metrics); a write sent with it gets 403. Prefer the environment variable.
    #[arg(
        long,
        env = "EXCERPT_READ_TOKEN",
        hide_env_values = true,
        requires = "token"
    )]
    pub read_token: Option<String>,
    /// A host name clients may use in the Host header besides loopback names
    /// (repeatable); e.g. the name of a reverse proxy in front of the server.
    #[arg(
        long = "allow-host",
        value_name = "NAME",
        env = "EXCERPT_ALLOW_HOST",
        value_delimiter = ','
    )]
    pub allow_hosts: Vec<String>,
    /// Requests answered at once; more get 503 with Retry-After. With a token, a quarter
    /// of them is kept for requests carrying it.
    #[arg(long, env = "EXCERPT_MAX_CONCURRENT", default_value_t = excerpt_server::DEFAULT_MAX_CONCURRENT,
          value_parser = concurrency)]
    pub max_concurrent: usize,
    /// Seconds a request may take before it is answered 503 (timeout).
    #[arg(long, env = "EXCERPT_REQUEST_TIMEOUT", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub request_timeout: u64,
    /// Seconds a client has to send its request body once its headers are in; a slower
    /// body gets 408 and gives its slot back.
    #[arg(long, env = "EXCERPT_BODY_TIMEOUT", default_value_t = excerpt_server::DEFAULT_BODY_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub body_timeout: u64,
    /// Request log format on stderr: one text line per request, or JSON lines. The
    /// level comes from RUST_LOG (default info; --quiet: warnings only).
    #[arg(long, env = "EXCERPT_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The chat endpoint of POST /v1/ask (without --llm-url and --llm-model the route
    /// answers 501). With --token, asking needs the token even with --public-reads.
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub pdf: PdfArgs,
    /// A report `excerpt eval --html FILE` wrote, served at /v1/report and linked from
    /// the inspector. It is a read: with --token it needs a token unless
    /// --public-reads. Read once at startup: a missing or unreadable file stops the
    /// server before it listens.
    #[arg(long, env = "EXCERPT_REPORT", value_name = "FILE")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer the `ingest` tool, so the agent can add and replace documents (off by
    /// default: the agent only reads).
    #[arg(long, env = "EXCERPT_ALLOW_WRITES")]
    pub allow_writes: bool,
    /// Chunker of a new index created by the ingest tool (see `excerpt ingest --help`).
    #[arg(long, env = "EXCERPT_CHUNKER")]
    pub chunker: Option<excerpt::ChunkerConfig>,
    /// No chunk headers in a new index created by the ingest tool.
    #[arg(long, env = "EXCERPT_NO_HEADERS")]
    pub no_headers: bool,
    /// Do not load the model before answering (the first search loads it).
    #[arg(long, env = "EXCERPT_NO_WARMUP")]
    pub no_warmup: bool,
    /// PDFs given to the ingest tool are parsed in a worker process under these limits.
    #[command(flatten)]
    pub pdf: PdfArgs,
}

/// How `excerpt serve` writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// corpus.jsonl ({"id","title","text","metadata"} per line), or a folder of
    /// documents (PDF, Markdown, HTML, text; ids are the files' paths relative to it).
    #[arg(long)]
    pub corpus: PathBuf,
    /// queries.jsonl, one format per file: evidence spans,
    /// {"id","query","answer"?,"evidence":[{"doc_id","start","end"}],"scope"?}, or page
    /// evidence, {"id","query","doc","evidence":[{"page","text"}],"answer"?}, each query
    /// scoped to its "doc" ("answer" is used only by --answer-endpoint).
    #[arg(long)]
    pub queries: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Strategies to compare besides topk, comma-separated or repeated, each spelled as
    /// for `query --strategy` (e.g. `adjacent,rse:precision,window:threshold=0.6`); a
    /// `key=value` after a comma belongs to the strategy before it.
    #[arg(long)]
    pub strategies: Vec<String>,
    /// Token budgets (repeatable; default 500, 1000, 2000, 4000).
    #[arg(long = "budget", value_delimiter = ',')]
    pub budgets: Vec<usize>,
    /// First-stage retrieval.
    #[arg(long, default_value = "hybrid", value_parser = ["dense", "bm25", "hybrid"])]
    pub mode: String,
    /// Fusion in hybrid mode: rrf[:K], minmax[:ALPHA], dbsf[:ALPHA].
    #[arg(long, default_value = "rrf:60")]
    pub fusion: String,
    /// Candidates each search returns before fusion.
    #[arg(long, default_value_t = 100)]
    pub candidates: usize,
    /// Chunker when the index is new (see `excerpt ingest --help`).
    #[arg(long)]
    pub chunker: Option<excerpt::ChunkerConfig>,
    /// Ingest with sentence vectors (see `excerpt ingest --help`; only documents not yet
    /// in the index get them).
    #[arg(long)]
    pub sentence_vectors: bool,
    /// Sentence vectors by late chunking (see `excerpt ingest --help`).
    #[arg(long)]
    pub late_chunking: bool,
    /// Also write OUT/export.jsonl and OUT/export.md: for every question, strategy and
    /// budget, the context with its token count, coherence and recall (whole, and within
    /// budget × 4 characters as score_context.py --budget-chars counts it), and at the
    /// smallest budget each strategy's pieces marked by whether they touch the evidence,
    /// so you can read why a strategy lost on a question.
    #[arg(long)]
    pub export: bool,
    /// Also write the report as one self-contained HTML page (no script, no network):
    /// the figures per strategy and budget, the recall chart, the questions each strategy
    /// lost to another by more than 0.1 recall, and per question the gold evidence and
    /// every strategy's pieces with the evidence highlighted in them.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// No chunk headers in a new index.
    #[arg(long)]
    pub no_headers: bool,
    // On stdout: the report as OUT/report.md has it (text), or OUT/report.json (json).
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub answer: AnswerArgs,
}

/// Answer-level evaluation (`eval --answer-endpoint URL --answer-model NAME`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Answer-level evaluation (LLM, optional)")]
pub struct AnswerArgs {
    /// OpenAI-compatible chat endpoint that answers each query from each strategy's
    /// context, scored against the query's reference answer (costs LLM calls; see --help).
    ///
    /// E.g. https://api.openai.com, http://localhost:11434/v1 for Ollama, a vLLM or
    /// llama.cpp server. For every query with a reference "answer" in the queries file,
    /// at every strategy and budget, the endpoint is sent a short system prompt and one
    /// user message: the context as `query --format text` renders it, then the question.
    /// The reply is scored against the reference by token F1 and exact match (SQuAD
    /// normalisation: case, punctuation and articles ignored), written to
    /// OUT/answers-<strategy>-<budget>.jsonl and summarised in the report. Cost: one chat
    /// call per query, strategy and budget (identical contexts are asked once), each
    /// prompt carrying up to that budget's tokens of context. Queries without an answer
    /// are skipped; the run fails if none has one, or if a request still fails after
    /// retries (an unreachable endpoint is never scored as wrong answers).
    #[arg(long, value_name = "URL", requires = "answer_model")]
    pub answer_endpoint: Option<String>,
    /// Chat model name sent to --answer-endpoint (recorded in report.json).
    #[arg(long, value_name = "NAME", requires = "answer_endpoint")]
    pub answer_model: Option<String>,
    /// Environment variable holding the API key for --answer-endpoint (default:
    /// OPENAI_API_KEY for https://api.openai.com, else no key, fine for local servers).
    #[arg(long, value_name = "VAR")]
    pub answer_api_key_env: Option<String>,
    /// Chat requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub answer_concurrency: u32,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Only files matching this glob (relative to the directory; repeatable).
    #[arg(long, env = "EXCERPT_INCLUDE", value_delimiter = ',')]
    pub include: Vec<String>,
    /// Skip files matching this glob (repeatable).
    #[arg(long, env = "EXCERPT_EXCLUDE", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Also walk hidden files and directories.
    #[arg(long, env = "EXCERPT_HIDDEN")]
    pub hidden: bool,
    /// Do not honour .gitignore/.ignore files.
    #[arg(long, env = "EXCERPT_NO_IGNORE")]
    pub no_ignore: bool,
    /// Also load files with these extensions as plain text (e.g. rst,log).
    #[arg(long, env = "EXCERPT_TEXT_EXT", value_delimiter = ',')]
    pub text_ext: Vec<String>,
    /// Skip files larger than this many MiB (reported with the reason).
    #[arg(long, env = "EXCERPT_MAX_FILE_SIZE", value_name = "MIB", default_value_t = excerpt::DEFAULT_MAX_FILE_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub max_file_size: u64,
    /// Skip PDFs whose page tree claims more pages than this (reported with the reason).
    #[arg(long, env = "EXCERPT_MAX_PDF_PAGES", value_name = "PAGES", default_value_t = excerpt::DEFAULT_MAX_PDF_PAGES as u64,
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub max_pdf_pages: u64,
    /// Chunker of a new index: tokens[:N] (default tokens:256, model tokens),
    /// chars[:N], sentence, section[:N]. Fixed once the index exists.
    #[arg(long, env = "EXCERPT_CHUNKER")]
    pub chunker: Option<excerpt::ChunkerConfig>,
    /// Do not embed and search the "Document: title / Section: path" header with each
    /// chunk (new index only).
    #[arg(long, env = "EXCERPT_NO_HEADERS")]
    pub no_headers: bool,
    /// Commit after this many new chunks (an interrupted ingest keeps what was
    /// committed).
    #[arg(
        long,
        env = "EXCERPT_COMMIT_EVERY",
        default_value_t = 2048,
        hide_short_help = true
    )]
    pub commit_every: usize,
    /// Also embed and store a vector for every sentence of new or changed documents, so
    /// `--strategy window` reads them instead of embedding sentences at query time
    /// (ingest embeds several times more texts; the index grows by 388 bytes per sentence
    /// at dimension 384, 8 bits a component). An index created with it records it, and
    /// later ingests into it make them too.
    #[arg(long, env = "EXCERPT_SENTENCE_VECTORS")]
    pub sentence_vectors: bool,
    /// Store sentence vectors (implies --sentence-vectors) pooled from the token vectors
    /// of the forward pass that embeds each chunk ("late chunking"): each sentence is
    /// read in the context of its chunk and header, at no extra model work. The sentence
    /// route of `auto` then weighs a sentence's meaning for questions of 14 terms or
    /// more (long, many-part questions); the index grows by 388 bytes per sentence. Needs
    /// a local model. An index created with it records it, and later ingests into it
    /// (CLI, HTTP, MCP or Python) pool them too.
    #[arg(long)]
    pub late_chunking: bool,
    /// Make the index mirror the given paths: documents whose source file lies under one
    /// of them and no longer exists are removed in the same commit, and listed. A file
    /// that exists but cannot be read this time is kept.
    #[arg(long)]
    pub prune: bool,
    /// The language of the documents whose metadata names none (a JSONL line's
    /// `metadata.language` or Markdown front matter's `language` wins): an ISO 639-1 or
    /// 639-3 code or an English name (`de`, `deu`, `German`). It decides how their words
    /// are split and stemmed for BM25 and the sentence route. Default: detected per
    /// document (whatlang), and recorded in its metadata either way.
    #[arg(long, env = "EXCERPT_LANGUAGE", value_name = "LANG")]
    pub language: Option<String>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub contextualize: ContextualizeArgs,
    #[command(flatten)]
    pub pdf: PdfArgs,
}

/// LLM-written chunk contexts (`ingest --contextualize`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Chunk contexts (LLM)")]
pub struct ContextualizeArgs {
    /// Have an LLM write one or two sentences situating each new chunk in its document;
    /// they are embedded and searched with the chunk, never returned as its text.
    /// Answers are cached in the index directory, so re-ingesting asks nothing again.
    /// Needs --llm-url and --llm-model (the model is recorded in the index), and is
    /// fixed for the index: one made with contexts always needs them (same model), one
    /// made without cannot get them.
    #[arg(long, env = "EXCERPT_CONTEXTUALIZE", requires_all = ["llm_url", "llm_model"])]
    pub contextualize: bool,
    #[command(flatten)]
    pub endpoint: LlmEndpointArgs,
    /// Chat requests in flight at once (default 4).
    #[arg(long, env = "EXCERPT_CONTEXTUALIZE_CONCURRENCY", value_name = "N")]
    pub contextualize_concurrency: Option<usize>,
    /// Characters of the document shown with each chunk: the whole document when
    /// shorter, else a window around the chunk.
    #[arg(
        long,
        env = "EXCERPT_CONTEXTUALIZE_DOC_CHARS",
        value_name = "N",
        default_value_t = excerpt::contextualize::DEFAULT_DOC_CHARS,
        hide_short_help = true
    )]
    pub contextualize_doc_chars: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// Structured context for an LLM: grouped by document, with headers.
    Text,
    /// Markdown.
    Markdown,
    /// The context value as JSON (pieces with doc_id, start, end, text, score).
    Json,
}

impl From<Format> for excerpt::RenderFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Text => excerpt::RenderFormat::Text,
            Format::Markdown => excerpt::RenderFormat::Markdown,
            Format::Json => excerpt::RenderFormat::Json,
        }
    }
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The query; `-` reads it from standard input.
    pub text: String,
    #[command(flatten)]
    pub retrieval: RetrievalArgs,
    /// Output format [default: text; env: EXCERPT_FORMAT].
    #[arg(long, short, value_enum)]
    pub format: Option<Format>,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Closing instruction of the text format ("" for none).
    #[arg(long, env = "EXCERPT_INSTRUCTION")]
    pub instruction: Option<String>,
    /// Say where the query's time went (embedding, BM25 and dense search, fusion,
    /// feedback terms, assembly), in milliseconds: a `timings` object in the JSON
    /// output, one line on stderr otherwise.
    #[arg(long)]
    pub timings: bool,
    /// Explain the context: the first stage's best N hits (default 20), each with its
    /// chunk, its rank in BM25's list alone and in the model's alone (hybrid mode runs
    /// each search again), its relevance and how many of its characters the context
    /// holds. An `explain` array in the JSON output, a line per hit on stderr otherwise.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
    pub explain: Option<usize>,
}

/// How a context is retrieved and assembled: `query` and `ask` take the same options.
#[derive(Debug, Args)]
pub struct RetrievalArgs {
    /// Context strategy: auto (the default: a planner that sends questions about what
    /// was said, discussed or decided, and requests to summarise, to rse,
    /// unless the best documents have headings, and other questions to topk's best
    /// sentences, best first, except over conversation transcripts, where they go to
    /// rse too; auto:sections=true sends those over documents with headings to
    /// section; its choice is in the context's notes), rse (relevant segment
    /// extraction; also rse:precision, rse:find_all, rse:unit=sentence,
    /// rse:optimal=true), topk (topk:unit=sentence ranks sentences; they also match
    /// feedback terms, words the other documents' best-matching sentences use, listed
    /// in the notes; topk:unit=sentence,feedback=0 turns them off), adjacent, window,
    /// section. auto was at least as good as topk and rse at every budget on every
    /// development set (docs/EVAL.md).
    /// Parameters follow a colon: `rse:threshold=0.3,max_len_chunks=8`,
    /// `rse:precision,max_tokens=1000`, `window:threshold=0.6,max_expand=5`,
    /// `adjacent:window=2` (the fields of each strategy's parameters, e.g. `RseParams`; unknown ones are errors).
    #[arg(long, short, env = "EXCERPT_STRATEGY", default_value = "auto")]
    pub strategy: String,
    /// LLM-token budget for the excerpts' text (the text format adds a header line per
    /// document and per excerpt, and the closing instruction).
    #[arg(long, short, env = "EXCERPT_BUDGET", default_value_t = 2000, value_parser = budget)]
    pub budget: usize,
    /// Hits handed to the strategy (default: every fused candidate; the budget cuts).
    #[arg(long, short = 'k', env = "EXCERPT_TOP_K", value_parser = count)]
    pub top_k: Option<usize>,
    /// First-stage retrieval.
    #[arg(long, env = "EXCERPT_MODE", default_value = "hybrid", value_parser = ["dense", "bm25", "hybrid"])]
    pub mode: String,
    /// Fusion in hybrid mode: rrf[:K], minmax[:ALPHA], dbsf[:ALPHA] (ALPHA weights dense).
    #[arg(long, env = "EXCERPT_FUSION", default_value = "rrf:60")]
    pub fusion: String,
    /// Candidates each search returns before fusion.
    #[arg(long, env = "EXCERPT_CANDIDATES", default_value_t = 100, value_parser = count)]
    pub candidates: usize,
    /// Only these documents (repeatable).
    #[arg(long = "doc", value_name = "ID")]
    pub docs: Vec<String>,
    /// Only documents whose id starts with this prefix (repeatable).
    #[arg(long = "prefix", value_name = "PREFIX")]
    pub prefixes: Vec<String>,
    /// Metadata condition: key=value, key=a|b, key>=n, key<=n, key=n..m (repeatable, all
    /// must hold).
    #[arg(long = "where", value_name = "COND")]
    pub conditions: Vec<String>,
    /// Rerank the best N fused candidates with the configured reranker (--reranker or
    /// --rerank-url); off by default.
    #[arg(long = "rerank", value_name = "N", env = "EXCERPT_RERANK", value_parser = count)]
    pub rerank: Option<usize>,
}

/// `excerpt ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question; `-` reads it from standard input.
    pub text: String,
    #[command(flatten)]
    pub retrieval: RetrievalArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Output: the answer as it streams, then its sources (text), or one JSON value
    /// {question, answer, no_answer, citations, unsupported, pieces, usage, ...} (json)
    /// [default: text; env: EXCERPT_FORMAT].
    #[arg(long, short, value_enum)]
    pub format: Option<AskFormat>,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Wait for the whole answer instead of streaming it as it is written.
    #[arg(long, env = "EXCERPT_NO_STREAM")]
    pub no_stream: bool,
    /// Exit with status 6 when a citation is flagged as unsupported (the answer and
    /// its flags are printed all the same).
    #[arg(long)]
    pub strict: bool,
}

/// An OpenAI-compatible chat endpoint: its URL, model and API key (`--llm-url`,
/// `--llm-model`, `--llm-api-key-env`), shared by `ingest --contextualize` and the
/// answering LLM ([`LlmArgs`]). Flattened under the heading of the struct holding it.
#[derive(Debug, Args)]
pub struct LlmEndpointArgs {
    /// OpenAI-compatible chat endpoint (e.g. https://api.openai.com,
    /// http://localhost:11434/v1 for Ollama, a vLLM or llama.cpp server).
    #[arg(long, env = "EXCERPT_LLM_URL", value_name = "URL")]
    pub llm_url: Option<String>,
    /// Chat model name sent to --llm-url.
    #[arg(long, env = "EXCERPT_LLM_MODEL", value_name = "NAME")]
    pub llm_model: Option<String>,
    /// Environment variable holding the API key for --llm-url (default: OPENAI_API_KEY
    /// for https://api.openai.com, else no key is sent).
    #[arg(long, env = "EXCERPT_LLM_API_KEY_ENV", value_name = "VAR")]
    pub llm_api_key_env: Option<String>,
}

/// The chat endpoint `ask` sends the question and context to.
#[derive(Debug, Args)]
#[command(next_help_heading = "Answering LLM")]
pub struct LlmArgs {
    #[command(flatten)]
    pub endpoint: LlmEndpointArgs,
    /// Cap on the answer's tokens (default: the server's).
    #[arg(long, env = "EXCERPT_LLM_MAX_TOKENS", value_name = "N")]
    pub llm_max_tokens: Option<u32>,
    /// Seconds one chat request may take, generation included.
    #[arg(long, env = "EXCERPT_LLM_TIMEOUT", value_name = "SECS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub llm_timeout: u64,
    /// Retries on 429, 5xx and connection errors before the answer streams.
    #[arg(
        long,
        env = "EXCERPT_LLM_RETRIES",
        value_name = "N",
        default_value_t = 5
    )]
    pub llm_retries: u32,
}

/// Output of `excerpt ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AskFormat {
    /// The answer as it arrives, then the sources and any flagged citation.
    Text,
    /// One JSON value at the end.
    Json,
}

/// Options of `excerpt bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Chunks in the generated collection.
    #[arg(long, default_value_t = 100_000)]
    pub chunks: usize,
    /// Chunks per generated document.
    #[arg(long, default_value_t = 50)]
    pub chunks_per_doc: usize,
    /// Vector dimension.
    #[arg(long, default_value_t = 384)]
    pub dim: usize,
    /// Queries timed per search kind.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Where to build the collection (default: a temporary directory, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// LLM-token budget of the query phase (whole queries: retrieval, then assembly with
    /// every strategy); 0 skips that phase.
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    #[command(flatten)]
    pub output: FormatArgs,
    /// Benchmark a PostgreSQL index instead: generate the collection into this
    /// database (postgres://user@host/db, which must hold no Excerpt index) through the
    /// real write path, build its HNSW index, then time searches and queries.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// With --postgres: concurrent writers of the load.
    #[arg(long, default_value_t = 2, requires = "postgres")]
    pub writers: usize,
    /// With --postgres: `hnsw.ef_search` of dense searches.
    #[arg(long, default_value_t = 100, requires = "postgres")]
    pub ef_search: usize,
    /// With --postgres: `maintenance_work_mem` of the HNSW build, in MiB.
    #[arg(long, default_value_t = 2048, requires = "postgres")]
    pub ann_memory_mib: usize,
    /// With --postgres: the model id recorded in the index (default
    /// bench-random-<dim>). Name the model `excerpt serve` loads to load-test a server
    /// on the generated collection.
    #[arg(long, requires = "postgres")]
    pub model_id: Option<String>,
    /// Reuse the collection a previous run left in --dir (same --chunks, --dim and
    /// --seed) or, with --postgres, in the database (same size and model id): only open
    /// it and time searches and queries. With --dir, the open is then timed in a process
    /// that has not just written the index (its page cache may still be warm: drop it
    /// first for a cold open).
    #[arg(long)]
    pub reuse: bool,
    /// Measure the local embedding model instead (--model, default all-MiniLM-L6-v2):
    /// passages of 250 tokens embedded in batches, as an ingest embeds chunks, and this
    /// CPU's FMA peak of each instruction set it has, measured just before and after,
    /// so the share of the machine the encoder uses is read in one run.
    #[arg(long, conflicts_with_all = ["postgres", "reuse", "dir"])]
    pub encoder: bool,
    /// With --encoder: passages embedded (after one batch of warm-up).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..), requires = "encoder")]
    pub passages: u64,
    /// With --encoder: passages per forward pass.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096), requires = "encoder")]
    pub batch: u64,
    /// With --encoder: cut the passages from this file (the "text" fields of a JSONL
    /// file, else the whole file as text) instead of generated text.
    #[arg(long, value_name = "FILE", requires = "encoder")]
    pub corpus: Option<PathBuf>,
}
