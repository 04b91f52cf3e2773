//! What several commands share: the engine from the global options, chat endpoints,
//! the progress reporter, the Ctrl-C flag, query text and requests, and how an index
//! is named in messages.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use excerpt::{
    ChatConfig, EmbedderSpec, Engine, EngineOptions, FilterSpec, QueryRequest, QuerySpec,
    RerankConfig, RerankerSpec,
};
use excerpt_embed::RemoteConfig;

use crate::args::{usage, Global, LlmArgs, LogFormat, PdfArgs, RetrievalArgs};
use crate::outcome::{Exit, EXIT_INTERRUPTED, EXIT_USAGE};
use crate::progress::Progress;

pub(super) fn engine(
    g: &Global,
    chunker: Option<excerpt::ChunkerConfig>,
    headers: Option<bool>,
) -> Engine {
    let embedder = match &g.embed_url {
        Some(url) => {
            let mut cfg = RemoteConfig::new(url.clone(), g.embed_model.clone());
            cfg.endpoint.api_key_env = key_env(url, g.embed_api_key_env.as_deref());
            cfg.endpoint.allow_plain_http_key = g.allow_plain_http_key;
            cfg.endpoint.timeout = Duration::from_secs(120);
            EmbedderSpec::Remote(cfg)
        }
        None => EmbedderSpec::Local {
            model: g.model.clone(),
        },
    };
    let reranker = match (&g.reranker, &g.rerank_url) {
        (Some(dir), _) => Some(RerankerSpec::Local(dir.clone())),
        (None, Some(url)) => {
            let mut cfg = RerankConfig::new(url.clone(), g.rerank_model.clone());
            cfg.endpoint.api_key_env = key_env(url, g.rerank_api_key_env.as_deref());
            cfg.endpoint.allow_plain_http_key = g.allow_plain_http_key;
            Some(RerankerSpec::Http(cfg))
        }
        (None, None) => None,
    };
    Engine::new(EngineOptions {
        index_dir: g.index.clone(),
        embedder,
        chunker,
        headers,
        llm_encoding: g.llm_encoding.clone(),
        reranker,
        hnsw_ef_search: g.hnsw_ef_search.map(|v| v as usize),
    })
}

/// The answering endpoint `--llm-url` and `--llm-model` name (`None` unless both are
/// given).
pub(super) fn llm_config(g: &Global, a: &LlmArgs) -> Option<ChatConfig> {
    let e = &a.endpoint;
    let (url, model) = (e.llm_url.as_deref()?, e.llm_model.as_deref()?);
    let mut chat = chat_config(g, url, model, e.llm_api_key_env.as_deref());
    chat.max_tokens = a.llm_max_tokens;
    chat.endpoint.timeout = Duration::from_secs(a.llm_timeout);
    chat.endpoint.max_retries = a.llm_retries;
    Some(chat)
}

/// The progress reporter of `ingest` and `eval`, as --progress, --progress-interval and
/// --quiet ask; `commit_every` is the batch size after which chunks are embedded.
pub(super) fn progress(g: &Global, commit_every: usize) -> Progress {
    Progress::new(
        g.progress,
        g.quiet,
        Duration::from_secs_f64(g.progress_interval),
        commit_every,
    )
}

/// The variable a key for `url` comes from: the one the user named, else
/// `OPENAI_API_KEY` for OpenAI's own API only ([`excerpt_embed::default_key_env`]).
pub(super) fn key_env(url: &str, named: Option<&str>) -> Option<String> {
    named
        .map(str::to_string)
        .or_else(|| excerpt_embed::default_key_env(url).map(str::to_string))
}

/// An OpenAI-compatible chat endpoint as the command line names it (`ingest
/// --llm-url`, `eval --answer-endpoint`): URL, model, and the environment variable
/// holding its key (unset: no key sent); [`ChatConfig`] defaults otherwise.
pub(super) fn chat_config(
    g: &Global,
    url: &str,
    model: &str,
    api_key_env: Option<&str>,
) -> ChatConfig {
    let mut chat = ChatConfig::new(url, model);
    chat.endpoint.api_key_env = key_env(url, api_key_env);
    chat.endpoint.allow_plain_http_key = g.allow_plain_http_key;
    chat
}

/// A flag that the first Ctrl-C (SIGINT) sets, so an ingest commits what it has embedded
/// and stops; a second Ctrl-C exits at once with status 130. Without a handler (one
/// could not be installed), Ctrl-C ends the process as before.
pub(super) fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::Ordering;
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = flag.clone();
    let installed = ctrlc::set_handler(move || {
        if seen.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        eprintln!("\ninterrupted: committing what is embedded (Ctrl-C again to stop at once)");
    });
    if let Err(e) = installed {
        eprintln!("warning: Ctrl-C will not commit the batch in flight: {e}");
    }
    flag
}

/// The index as messages name it: a directory, or a PostgreSQL URL without its password.
pub(super) fn shown_index(index: &std::path::Path) -> String {
    excerpt::redact_url(&index.display().to_string())
}

/// This very program, run with its hidden `pdf-worker` subcommand under the limits of
/// `a`: where `ingest` and `serve` parse each PDF.
pub(super) fn pdf_worker_of(a: &PdfArgs) -> Result<excerpt::PdfWorker> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program to parse PDFs with: {e}"))?;
    Ok(excerpt::PdfWorker::new(exe, ["pdf-worker"])
        .with_limits(excerpt::PdfLimits::new(a.pdf_memory_mb, a.pdf_timeout_secs)))
}

/// The server's log on stderr through `tracing`: RUST_LOG picks the level (default
/// `info`, `warn` with --quiet), `--log-format` text or JSON lines.
pub(super) fn init_logging(quiet: bool, format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "warn" } else { "info" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    // Fails only when a subscriber is already set (tests calling twice): keep that one.
    let _ = match format {
        LogFormat::Text => builder.compact().try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The text of a query or question: the argument, or standard input when it is `-`
/// (trailing newlines dropped; an empty input is a usage error).
pub(super) fn query_text(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut input)
        .map_err(|e| anyhow::anyhow!("cannot read the query from standard input: {e}"))?;
    let trimmed = input.trim_end_matches(['\n', '\r']);
    if trimmed.trim().is_empty() {
        return Err(usage(
            "the query is `-` but standard input is empty".to_string(),
        ));
    }
    Ok(trimmed.to_string())
}

/// The request the retrieval options spell: the same spelling, parsed the same way, as
/// the server's POST /v1/query. Every error of the spelling (a bad --where, --fusion or
/// --strategy) is a usage error.
pub(super) fn query_request(text: String, a: RetrievalArgs) -> Result<QueryRequest> {
    let spec = QuerySpec {
        query: text,
        mode: Some(a.mode),
        strategy: Some(a.strategy),
        budget: Some(a.budget),
        top_k: a.top_k,
        candidates: Some(a.candidates),
        fusion: Some(a.fusion),
        filter: FilterSpec {
            doc_ids: a.docs,
            prefixes: a.prefixes,
            conditions: a.conditions,
        },
        rerank: a.rerank,
        timings: false,
    };
    Ok(spec
        .to_request()
        .map_err(|e| Exit(EXIT_USAGE, crate::outcome::message(&e.into())))?)
}

/// `value` as pretty-printed JSON on standard output (the `--format json` of the report
/// commands).
pub(super) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::to_string_pretty(value)?
    )?;
    Ok(())
}
