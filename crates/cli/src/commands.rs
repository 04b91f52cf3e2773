//! Commands: typed options from raw arguments, engine calls, rendering.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use excerpt::{
    EmbedderSpec, Engine, EngineError, EngineOptions, Filter, FusionMethod, IngestOptions,
    MetaCondition, QueryRequest, RerankConfig, RerankerSpec,
};
use excerpt_context::{render_json, render_markdown, render_text, RenderOptions, StrategyConfig};
use excerpt_embed::RemoteConfig;
use excerpt_ingest::{LoadOptions, WalkOptions};

use crate::args::{Cli, Command, EvalArgs, Format, FormatArgs, Global, IngestArgs, QueryArgs};
use crate::progress::Bar;

/// Exit code for "nothing could be ingested".
const EXIT_NOTHING_INGESTED: u8 = 3;
/// Exit code for "not found" (no index, unknown document).
const EXIT_NOT_FOUND: u8 = 4;

/// Marker error: exit with a given code after the message.
#[derive(Debug)]
struct Exit(u8, String);
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}
impl std::error::Error for Exit {}

pub fn exit_code(e: &anyhow::Error) -> u8 {
    if let Some(Exit(code, _)) = e.downcast_ref::<Exit>() {
        return *code;
    }
    match e.downcast_ref::<EngineError>() {
        Some(EngineError::Index(excerpt::IndexError::NotFound { .. })) => EXIT_NOT_FOUND,
        _ => 1,
    }
}

fn engine(g: &Global, chunker: Option<excerpt::ChunkerConfig>, headers: Option<bool>) -> Engine {
    let embedder = match &g.embed_url {
        Some(url) => {
            let mut cfg = RemoteConfig::new(url.clone(), g.embed_model.clone());
            cfg.api_key_env = Some(g.embed_api_key_env.clone());
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
            cfg.api_key_env = Some(g.embed_api_key_env.clone());
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
    })
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Ingest(a) => ingest(&cli.global, a),
        Command::Query(a) => query(&cli.global, a),
        Command::Docs(a) => docs(&cli.global, a),
        Command::Rm { ids } => rm(&cli.global, ids),
        Command::Stats(a) => stats(&cli.global, a),
        Command::Eval(a) => eval(&cli.global, a),
        Command::Bench(a) => crate::bench::run(a, cli.global.quiet).map(|()| ExitCode::SUCCESS),
    }
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
        },
        commit_every_chunks: a.commit_every.max(1),
        ..IngestOptions::default()
    };
    let bar = Bar::new(g.quiet);
    let result = engine.ingest(&a.paths, &opts, &bar);
    bar.finish();
    let report = result?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if !g.quiet {
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
        for p in report.skipped.iter().chain(&report.failed) {
            writeln!(err, "  {}", p.reason)?;
        }
        writeln!(
            err,
            "index {}: {} documents (generation {})",
            g.index.display(),
            report.documents,
            report.generation
        )?;
    }
    if report.nothing_ingested() {
        if !a.json {
            eprintln!("error: nothing could be ingested from the given paths");
        }
        return Ok(ExitCode::from(EXIT_NOTHING_INGESTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `rrf[:K]`, `minmax[:ALPHA]`, `dbsf[:ALPHA]`.
pub fn parse_fusion(s: &str) -> Result<FusionMethod> {
    let (name, arg) = s.split_once(':').unwrap_or((s, ""));
    let num = |default: f32| -> Result<f32> {
        if arg.is_empty() {
            return Ok(default);
        }
        arg.parse::<f32>()
            .with_context(|| format!("fusion parameter {arg:?} is not a number"))
    };
    let m = match name {
        "rrf" => FusionMethod::Rrf { k: num(60.0)? },
        "minmax" | "min_max" => FusionMethod::MinMax { alpha: num(0.5)? },
        "dbsf" => FusionMethod::Dbsf { alpha: num(0.5)? },
        _ => bail!("unknown fusion {s:?}: expected rrf[:K], minmax[:ALPHA] or dbsf[:ALPHA]"),
    };
    m.validate()?;
    Ok(m)
}

fn query(g: &Global, a: QueryArgs) -> Result<ExitCode> {
    let engine = engine(g, None, None);
    let strategy: StrategyConfig = a.strategy.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut metadata = Vec::new();
    for c in &a.conditions {
        metadata.push(MetaCondition::parse(c).map_err(|e| anyhow::anyhow!(e))?);
    }
    let req = QueryRequest {
        text: a.text,
        mode: a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?,
        candidates: a.candidates,
        top_k: a.top_k,
        fusion: parse_fusion(&a.fusion)?,
        filter: Filter {
            doc_ids: a.docs,
            path_prefixes: a.prefixes,
            metadata,
        },
        strategy,
        budget: a.budget,
        rerank_top: a.rerank,
    };
    let ctx = engine.query(&req)?;
    let out = match a.format {
        Format::Json => {
            let mut v = serde_json::to_value(&ctx)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("query".into(), serde_json::Value::String(req.text.clone()));
            }
            serde_json::to_string_pretty(&v)?
        }
        Format::Markdown => render_markdown(&ctx),
        Format::Text => {
            let mut opts = RenderOptions::default();
            if let Some(i) = a.instruction {
                opts.closing_instruction = (!i.is_empty()).then_some(i);
            }
            render_text(&ctx, &opts)
        }
    };
    let _ = render_json;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(ExitCode::SUCCESS)
}

fn docs(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let engine = engine(g, None, None);
    let snap = engine.snapshot()?;
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let list: Vec<serde_json::Value> = snap
            .documents()
            .iter()
            .map(|d| {
                serde_json::json!({
                    "id": d.id, "title": d.title, "source": d.source, "chars": d.text.chars().count(),
                    "chunks": d.chunks.len(), "sections": d.sections.len(), "hash": d.hash, "metadata": d.metadata,
                })
            })
            .collect();
        writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
    } else {
        for d in snap.documents() {
            writeln!(stdout, "{}\t{} chunks\t{}", d.id, d.chunks.len(), d.title)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rm(g: &Global, ids: Vec<String>) -> Result<ExitCode> {
    let engine = engine(g, None, None);
    let removed = engine.remove(&ids)?;
    let missing: Vec<&String> = ids.iter().filter(|id| !removed.contains(id)).collect();
    if !g.quiet {
        eprintln!("removed {} document(s)", removed.len());
    }
    if !missing.is_empty() {
        return Err(Exit(
            EXIT_NOT_FOUND,
            format!(
                "no document with id {}",
                missing
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let engine = engine(g, None, None);
    let snap = engine.snapshot()?;
    let s = snap.stats();
    let cfg = snap.config();
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let v = serde_json::json!({
            "index": g.index, "generation": s.generation, "documents": s.documents, "chunks": s.chunks,
            "text_bytes": s.text_bytes, "segments": s.segments, "disk_bytes": s.disk_bytes,
            "model": cfg.model_id, "dimension": cfg.dimension, "chunker": cfg.chunker.to_string(),
            "headers": cfg.headers,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        writeln!(stdout, "index       {}", g.index.display())?;
        writeln!(stdout, "generation  {}", s.generation)?;
        writeln!(stdout, "documents   {}", s.documents)?;
        writeln!(stdout, "chunks      {}", s.chunks)?;
        writeln!(stdout, "text        {} bytes", s.text_bytes)?;
        writeln!(
            stdout,
            "model       {} ({} dimensions)",
            cfg.model_id, cfg.dimension
        )?;
        writeln!(stdout, "chunker     {}", cfg.chunker)?;
        writeln!(
            stdout,
            "headers     {}",
            if cfg.headers { "on" } else { "off" }
        )?;
        writeln!(
            stdout,
            "on disk     {:.1} MiB in {} segment(s)",
            s.disk_bytes as f64 / 1048576.0,
            s.segments
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn eval(g: &Global, a: EvalArgs) -> Result<ExitCode> {
    let engine = engine(g, a.chunker, a.no_headers.then_some(false));
    let mut opts = excerpt_eval::EvalOptions::new(a.corpus, a.queries, a.out.clone());
    opts.strategies = a.strategies;
    if !a.budgets.is_empty() {
        opts.budgets = a.budgets;
    }
    opts.mode = a.mode.parse().map_err(|e: String| anyhow::anyhow!(e))?;
    opts.fusion = parse_fusion(&a.fusion)?;
    opts.candidates = a.candidates;
    opts.quiet = g.quiet;
    let bar = Bar::new(g.quiet);
    let result = excerpt_eval::run_eval(&engine, &opts, &bar);
    bar.finish();
    let report = result?;
    if !g.quiet {
        let md = std::fs::read_to_string(a.out.join("report.md")).unwrap_or_default();
        println!("{md}");
        eprintln!(
            "wrote {} (results-*.jsonl, report.json, report.md, recall-vs-budget.svg)",
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
