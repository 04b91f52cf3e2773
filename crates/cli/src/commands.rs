//! Commands: typed options from raw arguments, engine calls, rendering.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use excerpt::{
    parse_fusion, render, ChatConfig, ContextualizeOptions, EmbedderSpec, Engine, EngineOptions,
    FilterSpec, IngestOptions, QueryRequest, QuerySpec, RerankConfig, RerankerSpec,
};
use excerpt_embed::RemoteConfig;
use excerpt_ingest::{LoadOptions, WalkOptions};

use crate::args::{
    output_format, usage, AnswerArgs, AskArgs, AskFormat, Cli, Command, CompletionsArgs,
    ContextualizeArgs, EvalArgs, FormatArgs, Global, IngestArgs, LlmArgs, LogFormat, ManArgs,
    McpArgs, PdfArgs, PdfWorkerArgs, QueryArgs, RetrievalArgs, ServeArgs,
};
use crate::outcome::{
    Exit, EXIT_DAMAGED, EXIT_INTERRUPTED, EXIT_NOTHING_INGESTED, EXIT_NOT_FOUND, EXIT_UNSUPPORTED,
    EXIT_USAGE,
};
use crate::progress::Progress;
use crate::terminal::{printable, terminal_safe};

fn engine(g: &Global, chunker: Option<excerpt::ChunkerConfig>, headers: Option<bool>) -> Engine {
    let embedder = match &g.embed_url {
        Some(url) => {
            let mut cfg = RemoteConfig::new(url.clone(), g.embed_model.clone());
            cfg.api_key_env = key_env(url, g.embed_api_key_env.as_deref());
            cfg.allow_plain_http_key = g.allow_plain_http_key;
            cfg.timeout = Duration::from_secs(120);
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
            cfg.api_key_env = key_env(url, g.rerank_api_key_env.as_deref());
            cfg.allow_plain_http_key = g.allow_plain_http_key;
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

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Ingest(a) => ingest(&cli.global, a),
        Command::Query(a) => query(&cli.global, a),
        Command::Ask(a) => ask(&cli.global, a),
        Command::Docs(a) => docs(&cli.global, a),
        Command::Rm { ids, prefix } => rm(&cli.global, ids, prefix),
        Command::Stats(a) => stats(&cli.global, a),
        Command::Verify(a) => verify(&cli.global, a),
        Command::Repair(a) => repair(&cli.global, a),
        Command::Eval(a) => eval(&cli.global, a),
        Command::Bench(a) => crate::bench::run(a, cli.global.quiet).map(|()| ExitCode::SUCCESS),
        Command::Serve(a) => serve(&cli.global, a),
        Command::Mcp(a) => mcp(&cli.global, a),
        Command::Model(a) => crate::model::run(a, cli.global.quiet),
        Command::Setup(a) => crate::fetch::setup(a, cli.global.quiet),
        Command::Pdfium(a) => crate::fetch::pdfium(a, cli.global.quiet),
        Command::Completions(a) => completions(a),
        Command::Man(a) => man(a),
        Command::PdfWorker(a) => pdf_worker(a),
    }
}

/// The progress reporter of `ingest` and `eval`, as --progress, --progress-interval and
/// --quiet ask; `commit_every` is the batch size after which chunks are embedded.
fn progress(g: &Global, commit_every: usize) -> Progress {
    Progress::new(
        g.progress,
        g.quiet,
        Duration::from_secs_f64(g.progress_interval),
        commit_every,
    )
}

/// `excerpt completions SHELL`: the completion script on stdout.
fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "excerpt", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `excerpt man`: excerpt.1 on stdout, or with --dir one page per command written there.
fn man(a: ManArgs) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let Some(dir) = a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        std::io::stdout().lock().write_all(&out)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut pages = vec![("excerpt".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("excerpt-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().display_name(name)));
    }
    let mut stdout = std::io::stdout().lock();
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut out = Vec::new();
        clap_mangen::Man::new(page).render(&mut out)?;
        std::fs::write(&path, out)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        writeln!(stdout, "{}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The text of a query or question: the argument, or standard input when it is `-`
/// (trailing newlines dropped; an empty input is a usage error).
fn query_text(text: String) -> Result<String> {
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

fn ingest(g: &Global, a: IngestArgs) -> Result<ExitCode> {
    let engine = engine(g, a.chunker, a.no_headers.then_some(false));
    let opts = IngestOptions {
        walk: WalkOptions {
            include: a.include,
            exclude: a.exclude,
            respect_ignore: !a.no_ignore,
            hidden: a.hidden,
            ..WalkOptions::default()
        },
        load: LoadOptions {
            text_extensions: a.text_ext,
            max_file_bytes: a.max_file_size << 20,
            max_pdf_pages: usize::try_from(a.max_pdf_pages).unwrap_or(usize::MAX),
            pdf_worker: Some(pdf_worker_of(&a.pdf)?),
        },
        commit_every_chunks: a.commit_every.max(1),
        contextualize: contextualize_options(g, &a.contextualize),
        sentence_vectors: a.sentence_vectors,
        prune: a.prune,
        cancel: Some(interrupt_flag()),
        ..IngestOptions::default()
    };
    let json = a.output.is_json()?;
    let bar = progress(g, opts.commit_every_chunks);
    let result = engine.ingest(&a.paths, &opts, &bar);
    bar.finish();
    let report = result?;
    if json {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::to_string_pretty(&report)?
        )?;
    }
    if report.interrupted {
        eprintln!(
            "interrupted: {} added and {} updated documents committed, {} left out (generation {}); run the same ingest again to finish",
            report.added,
            report.updated,
            report.left_out.len(),
            report.generation
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if !json && !g.quiet {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "ingested {} files in {:.1}s: {} added, {} updated, {} unchanged, {} skipped, {} failed",
            report.files,
            report.seconds,
            report.added,
            report.updated,
            report.unchanged,
            report.skipped.len(),
            report.failed.len()
        )?;
        if report.chunks_embedded > 0 {
            writeln!(
                err,
                "embedded {} chunks in {:.1}s ({:.1} chunks/s), reused {}",
                report.chunks_embedded,
                report.embed_seconds,
                report.chunks_embedded as f64 / report.embed_seconds.max(1e-9),
                report.chunks_reused
            )?;
        }
        if report.sentences_embedded > 0 {
            writeln!(
                err,
                "embedded {} sentences in {:.1}s ({:.1} sentences/s)",
                report.sentences_embedded,
                report.sentence_embed_seconds,
                report.sentences_embedded as f64 / report.sentence_embed_seconds.max(1e-9),
            )?;
        }
        if report.chunks_contextualized + report.context_cache_hits > 0 {
            writeln!(
                err,
                "contextualized {} chunks in {:.1}s ({} prompt + {} completion tokens), {} from cache",
                report.chunks_contextualized,
                report.contextualize_seconds,
                report.llm_prompt_tokens,
                report.llm_completion_tokens,
                report.context_cache_hits
            )?;
        }
        for p in report.skipped.iter().chain(&report.failed) {
            writeln!(err, "  {}", printable(&p.reason))?;
        }
        if !report.pruned.is_empty() {
            writeln!(
                err,
                "pruned {} document(s) whose files are gone:",
                report.pruned.len()
            )?;
            for id in &report.pruned {
                writeln!(err, "  {}", printable(id))?;
            }
        }
        writeln!(
            err,
            "index {}: {} documents (generation {})",
            printable(&shown_index(&g.index)),
            report.documents,
            report.generation
        )?;
    }
    if !json {
        // Warnings show even with --quiet: the file was ingested, but not as written.
        for w in &report.warnings {
            eprintln!("warning: {}", printable(&w.reason));
        }
    }
    if report.nothing_ingested() && report.pruned.is_empty() {
        if !json {
            eprintln!("error: nothing could be ingested from the given paths");
        }
        return Ok(ExitCode::from(EXIT_NOTHING_INGESTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A flag that the first Ctrl-C (SIGINT) sets, so an ingest commits what it has embedded
/// and stops; a second Ctrl-C exits at once with status 130. Without a handler (one
/// could not be installed), Ctrl-C ends the process as before.
fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
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

/// An OpenAI-compatible chat endpoint as the command line names it (`ingest
/// --llm-url`, `eval --answer-endpoint`): URL, model, and the environment variable
/// holding its key (unset: no key sent); [`ChatConfig`] defaults otherwise.
fn chat_config(g: &Global, url: &str, model: &str, api_key_env: Option<&str>) -> ChatConfig {
    let mut chat = ChatConfig::new(url, model);
    chat.api_key_env = key_env(url, api_key_env);
    chat.allow_plain_http_key = g.allow_plain_http_key;
    chat
}

/// The variable a key for `url` comes from: the one the user named, else
/// `OPENAI_API_KEY` for OpenAI's own API only ([`excerpt_embed::default_key_env`]).
fn key_env(url: &str, named: Option<&str>) -> Option<String> {
    named
        .map(str::to_string)
        .or_else(|| excerpt_embed::default_key_env(url).map(str::to_string))
}

/// The answer endpoint asked for by `eval --answer-endpoint --answer-model` (clap makes
/// sure both or neither are given).
fn answer_config(g: &Global, a: &AnswerArgs) -> Option<ChatConfig> {
    let (url, model) = (a.answer_endpoint.as_deref()?, a.answer_model.as_deref()?);
    let mut chat = chat_config(g, url, model, a.answer_api_key_env.as_deref());
    chat.max_concurrency = a.answer_concurrency as usize;
    Some(chat)
}

/// The contextualizer asked for by `ingest --contextualize` (clap makes sure URL and
/// model are given with it).
fn contextualize_options(g: &Global, a: &ContextualizeArgs) -> Option<ContextualizeOptions> {
    if !a.contextualize {
        return None;
    }
    let chat = chat_config(
        g,
        a.llm_url.as_deref().unwrap_or_default(),
        a.llm_model.as_deref().unwrap_or_default(),
        a.llm_api_key_env.as_deref(),
    );
    let mut opts = ContextualizeOptions::new(chat);
    opts.concurrency = a.contextualize_concurrency.unwrap_or(0);
    opts.doc_chars = a.contextualize_doc_chars.max(1);
    Some(opts)
}

/// The request the retrieval options spell: the same spelling, parsed the same way, as
/// the server's POST /v1/query. Every error of the spelling (a bad --where, --fusion or
/// --strategy) is a usage error.
fn query_request(text: String, a: RetrievalArgs) -> Result<QueryRequest> {
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
    };
    Ok(spec
        .to_request()
        .map_err(|e| Exit(EXIT_USAGE, crate::outcome::message(&e.into())))?)
}

fn query(g: &Global, a: QueryArgs) -> Result<ExitCode> {
    use crate::args::Format;
    let format = output_format(a.json, a.format, Format::Json, Format::Text, &[]).map_err(usage)?;
    let text = query_text(a.text)?;
    let engine = engine(g, None, None);
    let req = query_request(text, a.retrieval)?;
    let ctx = engine.query(&req)?;
    // Shown whatever the format and --quiet: the answer may be missing documents.
    for w in &ctx.warnings {
        eprintln!("warning: {}", printable(w));
    }
    let json = matches!(format, Format::Json);
    let out = render(&req.text, &ctx, format.into(), a.instruction);
    // JSON escapes control characters itself; text and Markdown carry document text
    // and titles as they are, so they are made safe for the terminal here.
    let out = if json {
        out.into()
    } else {
        terminal_safe(&out)
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr that the index is damaged, what cannot be read, and what to run.
fn warn_damage(snap: &excerpt::Snapshot) {
    let damage = snap.damage();
    if !damage.is_empty() {
        eprintln!(
            "warning: the index is damaged, {}; run `excerpt verify` for details, \
             `excerpt repair` to fix it",
            printable(&damage.summary(20))
        );
    }
}

/// The answering endpoint `--llm-url` and `--llm-model` name (`None` unless both are
/// given).
fn llm_config(g: &Global, a: &LlmArgs) -> Option<ChatConfig> {
    let (url, model) = (a.llm_url.as_deref()?, a.llm_model.as_deref()?);
    let mut chat = chat_config(g, url, model, a.llm_api_key_env.as_deref());
    chat.max_tokens = a.llm_max_tokens;
    chat.timeout = Duration::from_secs(a.llm_timeout);
    chat.max_retries = a.llm_retries;
    Some(chat)
}

fn ask(g: &Global, a: AskArgs) -> Result<ExitCode> {
    let Some(chat) = llm_config(g, &a.llm) else {
        return Err(Exit(
            EXIT_USAGE,
            "ask needs an OpenAI-compatible chat endpoint: pass --llm-url URL and --llm-model \
             NAME (or set EXCERPT_LLM_URL and EXCERPT_LLM_MODEL)"
                .into(),
        )
        .into());
    };
    let format = output_format(
        a.json,
        a.format,
        AskFormat::Json,
        AskFormat::Text,
        &["EXCERPT_ASK_FORMAT"],
    )
    .map_err(usage)?;
    let question = query_text(a.text)?;
    let mut opts = excerpt::AskOptions::new(chat);
    opts.stream = !a.no_stream;
    let engine = engine(g, None, None);
    let req = query_request(question, a.retrieval)?;
    let text = format == AskFormat::Text;
    let mut stdout = std::io::stdout().lock();
    let mut write_error: Option<std::io::Error> = None;
    let answer = engine.ask(&req, &opts, &mut |delta| {
        if text && write_error.is_none() {
            let r = stdout
                .write_all(terminal_safe(delta).as_bytes())
                .and_then(|()| stdout.flush());
            write_error = r.err();
        }
        // A closed stdout (a pipe whose reader quit) stops the model at once.
        if write_error.is_some() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let answer = answer?;
    if text {
        writeln!(stdout)?;
        print_sources(&mut stdout, &answer)?;
    } else {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&answer)?)?;
    }
    drop(stdout);
    if !g.quiet {
        let u = &answer.usage;
        let tokens = match (u.prompt_tokens, u.completion_tokens) {
            (Some(p), Some(c)) => format!("{p} prompt + {c} completion tokens"),
            _ if answer.pieces.is_empty() => "no LLM call (empty context)".into(),
            _ => "token usage not reported".into(),
        };
        let first = u
            .first_token_seconds
            .map(|f| format!(", first text after {f:.2}s"))
            .unwrap_or_default();
        eprintln!(
            "{}: {tokens}; retrieval {:.2}s, answer {:.2}s{first}",
            answer.model, u.retrieval_seconds, u.answer_seconds
        );
        if answer.finish_reason.as_deref() == Some("length") {
            eprintln!("warning: the answer was cut at the token limit");
        }
    }
    if a.strict && !answer.unsupported.is_empty() {
        return Ok(ExitCode::from(EXIT_UNSUPPORTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The end of `ask`'s text output: the cited sources, then the flagged citations.
fn print_sources(out: &mut impl Write, answer: &excerpt::Answer) -> std::io::Result<()> {
    let line = |out: &mut dyn Write, n: usize, p: (&str, &str, &str, usize, usize), pages| {
        let (doc, title, section, start, end) = p;
        let section = if section.is_empty() {
            String::new()
        } else {
            format!(" › {}", printable(section))
        };
        let pages = match pages {
            (Some(a), Some(b)) if a != b => format!(", p. {a}–{b}"),
            (Some(a), _) => format!(", p. {a}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "  [{n}] {} — {}{section} (characters {start}–{end}{pages})",
            printable(doc),
            printable(title)
        )
    };
    if !answer.citations.is_empty() {
        writeln!(out, "\nSources:")?;
        for c in &answer.citations {
            line(
                out,
                c.n,
                (&c.doc_id, &c.title, &c.section, c.start, c.end),
                (c.page_start, c.page_end),
            )?;
        }
    } else if !answer.pieces.is_empty() {
        writeln!(out, "\nContext (no piece cited):")?;
        for (i, p) in answer.pieces.iter().enumerate() {
            line(
                out,
                i + 1,
                (&p.doc_id, &p.title, &p.section, p.start, p.end),
                (p.page_start, p.page_end),
            )?;
        }
    } else {
        writeln!(
            out,
            "\nNo context: nothing in the index matched the question."
        )?;
    }
    if !answer.unsupported.is_empty() {
        writeln!(out, "\nUnsupported citations:")?;
        for u in &answer.unsupported {
            writeln!(out, "  {}", printable(&u.to_string()))?;
        }
    }
    Ok(())
}

fn docs(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    if engine.postgres_url().is_none() {
        warn_damage(&*engine.snapshot()?);
    }
    let list = engine.documents()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
    } else {
        for d in &list {
            // Control characters in ids or titles (from an index written before ids
            // were checked) are escaped, never sent raw to the terminal.
            writeln!(
                stdout,
                "{}\t{} chunks\t{}",
                printable(&d.id),
                d.chunks,
                printable(&d.title)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rm(g: &Global, ids: Vec<String>, prefixes: Vec<String>) -> Result<ExitCode> {
    if prefixes.iter().any(|p| p.is_empty()) {
        return Err(Exit(
            EXIT_USAGE,
            "--prefix needs a non-empty prefix (to empty an index, delete its directory)".into(),
        )
        .into());
    }
    let engine = engine(g, None, None);
    let mut wanted = ids.clone();
    if !prefixes.is_empty() {
        wanted.extend(
            engine
                .documents()?
                .into_iter()
                .map(|d| d.id)
                .filter(|id| prefixes.iter().any(|p| id.starts_with(p.as_str()))),
        );
    }
    let mut seen = std::collections::HashSet::new();
    wanted.retain(|id| seen.insert(id.clone()));
    let removed: std::collections::HashSet<String> = if wanted.is_empty() {
        Default::default()
    } else {
        engine.remove(&wanted)?.into_iter().collect()
    };
    let mut err = std::io::stderr().lock();
    for id in &wanted {
        if removed.contains(id) {
            if !g.quiet {
                writeln!(err, "removed {}", printable(id))?;
            }
        } else {
            // Shown even with --quiet: the id was asked for and is not there.
            writeln!(err, "not found: {}", printable(id))?;
        }
    }
    for p in &prefixes {
        if !wanted.iter().any(|id| id.starts_with(p.as_str())) {
            writeln!(
                err,
                "not found: no document id starts with {}",
                printable(p)
            )?;
        }
    }
    drop(err);
    if removed.is_empty() {
        return Err(Exit(EXIT_NOT_FOUND, "no document was removed".into()).into());
    }
    if !g.quiet {
        eprintln!("removed {} document(s)", removed.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let v = engine.stats()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(stdout, "index       {}", printable(&shown_index(&g.index)))?;
    if engine.postgres_url().is_some() {
        // No generation, segments or damage: the database checks its own storage.
        write_stats_body(&mut stdout, &v)?;
        writeln!(
            stdout,
            "in database {:.1} MiB (tables with their indexes)",
            v.disk_bytes as f64 / 1048576.0
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let snap = engine.snapshot()?;
    let s = snap.stats();
    writeln!(stdout, "generation  {}", s.generation)?;
    write_stats_body(&mut stdout, &v)?;
    writeln!(
        stdout,
        "on disk     {:.1} MiB in {} segment(s)",
        s.disk_bytes as f64 / 1048576.0,
        s.segments
    )?;
    if s.damage.is_empty() {
        writeln!(stdout, "damaged     no")?;
    } else {
        writeln!(
            stdout,
            "damaged     yes, {}; run `excerpt repair`",
            printable(&s.damage.summary(20))
        )?;
        for p in s.damage.problems() {
            writeln!(stdout, "            {}", printable(&p))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines of `excerpt stats` both stores have: contents, model, chunker, headers and
/// stored sentence vectors.
fn write_stats_body(out: &mut impl Write, s: &excerpt::IndexStats) -> std::io::Result<()> {
    writeln!(out, "documents   {}", s.documents)?;
    writeln!(out, "chunks      {}", s.chunks)?;
    writeln!(out, "text        {} bytes", s.text_bytes)?;
    writeln!(out, "model       {} ({} dimensions)", s.model, s.dimension)?;
    writeln!(out, "chunker     {}", s.chunker)?;
    writeln!(out, "headers     {}", if s.headers { "on" } else { "off" })?;
    if s.sentence_vector_documents > 0 {
        writeln!(
            out,
            "sentences   {} vectors stored, for {} of {} documents",
            s.sentence_vectors, s.sentence_vector_documents, s.documents
        )?;
    }
    Ok(())
}

fn verify(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let report = engine.verify()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let generation = report
            .generation
            .map_or_else(|| "unknown".to_string(), |g| g.to_string());
        writeln!(
            stdout,
            "index {}: generation {generation}, {} readable documents, {} files checked",
            printable(&shown_index(&g.index)),
            report.documents,
            report.files.len()
        )?;
        if report.is_sound() {
            writeln!(stdout, "no problems found")?;
        } else {
            writeln!(stdout, "{} problem(s):", report.problems.len())?;
            for p in &report.problems {
                writeln!(stdout, "  {}", printable(p))?;
            }
            let lost = report.lost_documents.len() + report.lost_unnamed;
            if lost > 0 {
                writeln!(stdout, "{lost} document(s) cannot be read:")?;
                for id in &report.lost_documents {
                    writeln!(stdout, "  {}", printable(id))?;
                }
                if report.lost_unnamed > 0 {
                    writeln!(stdout, "  ({} whose ids are unknown)", report.lost_unnamed)?;
                }
            }
            writeln!(stdout, "run `excerpt repair` to fix the index")?;
        }
    }
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DAMAGED)
    })
}

fn repair(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let report = engine.repair()?;
    if json {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::to_string_pretty(&report)?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if let Some(m) = &report.manifest {
        writeln!(out, "manifest: {}", printable(m))?;
    }
    for d in &report.dropped {
        // The problem names the segment and the file.
        writeln!(out, "dropped {}", printable(&d.problem))?;
    }
    for action in &report.actions {
        writeln!(out, "{}", printable(action))?;
    }
    let lost = report.lost_documents.len() + report.lost_unnamed;
    if lost == 0 {
        writeln!(out, "no document was lost")?;
    } else {
        writeln!(
            out,
            "{lost} document(s) lost (ingest them again to have them back):"
        )?;
        for id in &report.lost_documents {
            writeln!(out, "  {}", printable(id))?;
        }
        if report.lost_unnamed > 0 {
            writeln!(out, "  ({} whose ids are unknown)", report.lost_unnamed)?;
        }
    }
    writeln!(
        out,
        "index {}: {} documents (generation {})",
        shown_index(&g.index),
        report.documents,
        report.generation
    )?;
    Ok(ExitCode::SUCCESS)
}

fn eval(g: &Global, a: EvalArgs) -> Result<ExitCode> {
    let engine = engine(g, a.chunker, a.no_headers.then_some(false));
    let mut opts = excerpt_eval::EvalOptions::new(a.corpus, a.queries, a.out.clone());
    opts.strategies = crate::args::split_strategy_specs(&a.strategies);
    if !a.budgets.is_empty() {
        opts.budgets = a.budgets;
    }
    opts.mode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    opts.fusion = parse_fusion(&a.fusion)?;
    opts.candidates = a.candidates;
    opts.quiet = g.quiet;
    opts.answer = answer_config(g, &a.answer);
    opts.sentence_vectors = a.sentence_vectors;
    opts.export = a.export;
    let json = a.output.is_json()?;
    let bar = progress(g, excerpt::IngestOptions::default().commit_every_chunks);
    let result = excerpt_eval::run_eval(&engine, &opts, &bar);
    bar.finish();
    let report = result?;
    if json {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::to_string_pretty(&report)?
        )?;
    } else if !g.quiet {
        let md = std::fs::read_to_string(a.out.join("report.md")).unwrap_or_default();
        writeln!(std::io::stdout().lock(), "{md}")?;
        let answers = if report.run.answer.is_some() {
            "answers-*.jsonl, "
        } else {
            ""
        };
        eprintln!(
            "wrote {} (results-*.jsonl, {answers}report.json, report.md, recall-vs-budget.svg)",
            a.out.display()
        );
    }
    if !report.failures.is_empty() && !g.quiet {
        eprintln!(
            "{} query run(s) failed; see report.json",
            report.failures.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(g: &Global, a: ServeArgs) -> Result<ExitCode> {
    let engine = std::sync::Arc::new(engine(g, a.chunker, a.no_headers.then_some(false)));
    if !a.no_warmup {
        let t = std::time::Instant::now();
        excerpt_server::warm_up(&engine)?;
        if !g.quiet {
            eprintln!("model loaded in {:.1}s", t.elapsed().as_secs_f64());
        }
    }
    init_logging(g.quiet, a.log_format);
    let token = a.token.filter(|t| !t.trim().is_empty());
    let ingest = IngestOptions {
        load: LoadOptions {
            pdf_worker: Some(pdf_worker_of(&a.pdf)?),
            ..LoadOptions::default()
        },
        ..IngestOptions::default()
    };
    let options = excerpt_server::ServerOptions {
        ingest,
        body_limit: a.body_limit,
        log_requests: true,
        token,
        read_token: a.read_token.filter(|t| !t.trim().is_empty()),
        public_reads: a.public_reads,
        allowed_hosts: a.allow_hosts,
        max_concurrent: a.max_concurrent,
        request_timeout: Duration::from_secs(a.request_timeout),
        body_timeout: Duration::from_secs(a.body_timeout),
        ask: llm_config(g, &a.llm),
        ..excerpt_server::ServerOptions::default()
    };
    let index = shown_index(&g.index);
    let quiet = g.quiet;
    excerpt_server::run_blocking(&a.addr, engine, options, |addr| {
        // The one line on stdout: scripts and tests read the bound address from it.
        println!("listening on http://{addr}");
        if !quiet {
            eprintln!("serving index {index}; Ctrl-C to stop");
        }
    })
    .map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            " (set EXCERPT_TOKEN, or pass --token)"
        } else {
            ""
        };
        anyhow::anyhow!("cannot serve on {}: {e}{hint}", a.addr)
    })?;
    if !g.quiet {
        eprintln!("stopped");
    }
    Ok(ExitCode::SUCCESS)
}

/// This very program, run with its hidden `pdf-worker` subcommand under the limits of
/// `a`: where `ingest` and `serve` parse each PDF.
fn pdf_worker_of(a: &PdfArgs) -> Result<excerpt_ingest::PdfWorker> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program to parse PDFs with: {e}"))?;
    Ok(
        excerpt_ingest::PdfWorker::new(exe, ["pdf-worker"]).with_limits(
            excerpt_ingest::PdfLimits::new(a.pdf_memory_mb, a.pdf_timeout_secs),
        ),
    )
}

/// `excerpt pdf-worker`: one PDF (a file, or standard input) extracted in this process,
/// the reply on stdout, progress on stderr.
fn pdf_worker(a: PdfWorkerArgs) -> Result<ExitCode> {
    let (bytes, name) = match a.path.as_deref().filter(|p| *p != Path::new("-")) {
        Some(p) => (
            std::fs::read(p).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
            (bytes, "stdin".to_string())
        }
    };
    let name = a.name.unwrap_or(name);
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    excerpt_ingest::run_pdf_worker(&name, &bytes, a.max_pages, &mut out, &mut err)?;
    Ok(ExitCode::SUCCESS)
}

fn mcp(g: &Global, a: McpArgs) -> Result<ExitCode> {
    let engine = std::sync::Arc::new(engine(g, a.chunker, a.no_headers.then_some(false)));
    if !a.no_warmup {
        let t = std::time::Instant::now();
        excerpt_server::warm_up(&engine)?;
        if !g.quiet {
            eprintln!("model loaded in {:.1}s", t.elapsed().as_secs_f64());
        }
    }
    if !g.quiet {
        let writes = if a.allow_writes {
            "; the ingest tool is on"
        } else {
            ""
        };
        eprintln!(
            "serving index {} over MCP on stdio{writes}",
            shown_index(&g.index)
        );
    }
    let options = excerpt_mcp::McpOptions {
        allow_writes: a.allow_writes,
        ingest: excerpt::IngestOptions::default(),
    };
    excerpt_mcp::serve_stdio_blocking(engine, options)
        .map_err(|e| anyhow::anyhow!("MCP server: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The server's log on stderr through `tracing`: RUST_LOG picks the level (default
/// `info`, `warn` with --quiet), `--log-format` text or JSON lines.
fn init_logging(quiet: bool, format: LogFormat) {
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

/// The index as messages name it: a directory, or a PostgreSQL URL without its password.
fn shown_index(index: &std::path::Path) -> String {
    excerpt::redact_url(&index.display().to_string())
}
