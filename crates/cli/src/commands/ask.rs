//! `excerpt ask`: a query's context, an LLM's answer and its checked citations.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use crate::args::{output_format, usage, AskArgs, AskFormat, Global};
use crate::outcome::{Exit, EXIT_UNSUPPORTED, EXIT_USAGE};
use crate::terminal::{printable, terminal_safe};

use super::common::{engine, llm_config, query_request, query_text};

pub(super) fn ask(g: &Global, a: AskArgs) -> Result<ExitCode> {
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
