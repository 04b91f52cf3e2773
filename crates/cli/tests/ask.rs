//! `excerpt ask` end to end: the real binary and model on a real on-disk index, against
//! a fake OpenAI-compatible chat server on 127.0.0.1 that speaks the chat-completions
//! protocol, streaming (server-sent events) or not, and answers like a model that cites
//! the numbered pieces of its prompt.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use excerpt_testkit::axum::extract::State;
use excerpt_testkit::axum::response::{IntoResponse, Response};
use excerpt_testkit::axum::routing::post;
use excerpt_testkit::axum::{Json, Router};
use excerpt_testkit::openai::{self, Usage};
use excerpt_testkit::{Fail, FakeServer, Script};
use serde_json::Value;

/// The request bodies the fake received, and its scripted failures.
#[derive(Clone, Default)]
struct Fake {
    seen: Arc<Mutex<Vec<Value>>>,
    script: Arc<Script>,
}

/// The number the prompt gives the first piece of document `doc` (`[n] doc — ...`).
fn piece_number(user: &str, doc: &str) -> Option<usize> {
    user.lines().find_map(|l| {
        let rest = l.strip_prefix('[')?;
        let (n, after) = rest.split_once("] ")?;
        after
            .starts_with(&format!("{doc} — "))
            .then(|| n.parse().ok())?
    })
}

/// What the fake model answers: it cites the kettle piece for kettle questions (with a
/// misquote and a piece that does not exist when asked to "misquote"), and says the
/// context does not answer when it holds nothing about the question.
fn reply(user: &str) -> Vec<String> {
    let question = user.rsplit_once("\nQuestion: ").map_or("", |(_, q)| q);
    let kettle = piece_number(user, "kettle.md");
    match kettle {
        Some(n) if question.contains("misquote") => vec![
            "It whistles at ".into(),
            format!("\"ninety degrees\" [{n}]. "),
            "Herons fly south [42].".into(),
        ],
        Some(n) if question.contains("kettle") => vec![
            "The kettle whistles ".into(),
            "at \u{201c}exactly ninety-eight ".into(),
            format!("degrees\u{201d} [{n}]."),
        ],
        _ => vec!["The context does not answer this question.".into()],
    }
}

async fn complete(State(fake): State<Fake>, Json(body): Json<Value>) -> Response {
    fake.seen.lock().unwrap().push(body.clone());
    if let Some(fail) = fake.script.next_failure() {
        return fail;
    }
    let user = openai::message(&body, "user").unwrap_or_default();
    let deltas = reply(&user);
    let usage = Some(Usage {
        prompt: 321,
        completion: 12,
    });
    if body["stream"] == true {
        let deltas: Vec<&str> = deltas.iter().map(String::as_str).collect();
        openai::event_stream(openai::chat_stream_events(&body["model"], &deltas, usage))
    } else {
        Json(openai::chat_completion(
            &body["model"],
            &deltas.concat(),
            usage,
        ))
        .into_response()
    }
}

fn fake_chat() -> (FakeServer, Fake) {
    let fake = Fake::default();
    let app = Router::new()
        .route(openai::CHAT_PATH, post(complete))
        .with_state(fake.clone());
    (FakeServer::start(app), fake)
}

fn build_index(dir: &Path) -> PathBuf {
    common::ingest_docs(
        dir,
        &[
            (
                "kettle.md",
                b"# Kettle\n\nThe brass kettle whistles at exactly ninety-eight degrees.\n",
            ),
            (
                "heron.md",
                b"# Herons\n\nThe grey heron nests in tall alder trees by the river.\n",
            ),
        ],
    )
}

fn ask(index: &Path, server: &FakeServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .env_remove("EXCERPT_INDEX")
        .env("EXCERPT_QUIET", "false")
        .arg("--index")
        .arg(index)
        .arg("ask")
        .args(["--llm-url", &server.url(), "--llm-model", "fake-model"])
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn ask_streams_a_cited_answer_and_lists_its_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let (server, fake) = fake_chat();

    let out = ask(
        &index,
        &server,
        &["what temperature does the kettle whistle at?"],
    );
    let text = stdout(&out);
    assert!(
        text.starts_with("The kettle whistles at \u{201c}exactly ninety-eight degrees\u{201d} ["),
        "{text}"
    );
    assert!(text.contains("\nSources:\n  ["), "{text}");
    assert!(
        text.contains("kettle.md — Kettle › Kettle (characters "),
        "{text}"
    );
    assert!(!text.contains("Unsupported"), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("321 prompt + 12 completion tokens"),
        "{stderr}"
    );
    assert!(stderr.contains("first text after"), "{stderr}");

    // The request: streamed, with usage asked for, the numbered pieces and the
    // instructions to cite and to say when the context has no answer.
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let body = &seen[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["model"], "fake-model");
    let system = openai::message(body, "system").unwrap();
    assert!(
        system.contains("[1]") && system.contains("does not answer"),
        "{system}"
    );
    let user = openai::message(body, "user").unwrap();
    assert!(user.contains("ninety-eight degrees"), "{user}");

    // JSON, without streaming: the same answer, citations with the quote located in
    // the document, nothing unsupported, the pieces and the usage.
    let out = ask(
        &index,
        &server,
        &[
            "what temperature does the kettle whistle at?",
            "--no-stream",
            "--format",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(fake.seen.lock().unwrap()[1]["stream"], false);
    assert_eq!(v["no_answer"], false);
    assert_eq!(v["unsupported"], serde_json::json!([]));
    let c = &v["citations"][0];
    assert_eq!(c["doc_id"], "kettle.md");
    let n = c["n"].as_u64().unwrap() as usize;
    assert_eq!(v["pieces"][n - 1]["doc_id"], "kettle.md");
    assert_eq!(c["text"], v["pieces"][n - 1]["text"]);
    let quote = &c["quotes"][0];
    assert_eq!(quote["text"], "exactly ninety-eight degrees");
    let doc = std::fs::read_to_string(tmp.path().join("docs/kettle.md")).unwrap();
    let (s, e) = (
        quote["start"].as_u64().unwrap() as usize,
        quote["end"].as_u64().unwrap() as usize,
    );
    let located: String = doc.chars().skip(s).take(e - s).collect();
    assert_eq!(located, "exactly ninety-eight degrees");
    assert_eq!(v["usage"]["prompt_tokens"], 321);
    assert_eq!(v["usage"]["completion_tokens"], 12);
}

#[test]
fn unsupported_citations_are_flagged_and_strict_fails_on_them() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let (server, _fake) = fake_chat();

    // A quote that is not in its piece, and a piece number that names no piece.
    let question = "misquote what the kettle does";
    let out = ask(&index, &server, &[question, "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let unsupported = v["unsupported"].as_array().unwrap();
    assert_eq!(unsupported.len(), 2, "{v}");
    assert_eq!(unsupported[0]["reason"], "quote_not_in_piece");
    assert_eq!(unsupported[0]["quote"], "ninety degrees");
    assert_eq!(unsupported[1]["reason"], "no_such_piece");
    assert_eq!(unsupported[1]["n"], serde_json::json!([42]));

    let out = ask(&index, &server, &[question]);
    let text = stdout(&out);
    assert!(text.contains("\nUnsupported citations:\n"), "{text}");
    assert!(
        text.contains("the quote \"ninety degrees\" is not in the cited text"),
        "{text}"
    );
    assert!(
        text.contains("[42]: no such piece in the context"),
        "{text}"
    );

    let strict = ask(&index, &server, &[question, "--strict"]);
    assert_eq!(strict.status.code(), Some(6));
}

#[test]
fn no_answer_empty_context_rate_limits_and_missing_endpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let (server, fake) = fake_chat();

    // The context holds no answer: the model says so, and the output says it.
    let out = ask(
        &index,
        &server,
        &["how many penguins live in the zoo?", "-f", "json"],
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["no_answer"], true);
    assert_eq!(v["answer"], "The context does not answer this question.");
    assert_eq!(v["citations"], serde_json::json!([]));
    assert!(!v["pieces"].as_array().unwrap().is_empty());
    let asked = fake.seen.lock().unwrap().len();

    // An empty context (the filter matches nothing): no model is asked.
    let out = ask(
        &index,
        &server,
        &["kettle?", "--prefix", "nothing/", "-f", "json"],
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["no_answer"], true);
    assert_eq!(v["pieces"], serde_json::json!([]));
    assert_eq!(fake.seen.lock().unwrap().len(), asked);
    let out = ask(&index, &server, &["kettle?", "--prefix", "nothing/"]);
    assert!(stdout(&out).contains("No context"));

    // 429 with Retry-After, then success: retried, answered once.
    fake.script.push([Fail::RateLimited {
        retry_after_secs: 0,
    }]);
    let out = ask(
        &index,
        &server,
        &["what temperature does the kettle whistle at?"],
    );
    assert!(stdout(&out).contains("ninety-eight degrees"));
    assert_eq!(fake.seen.lock().unwrap().len(), asked + 2);

    // A failing endpoint is an error naming it, after the retries asked for.
    fake.script.set_always(Fail::Status(500));
    let out = ask(&index, &server, &["kettle?", "--llm-retries", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fake-model") && stderr.contains("500"),
        "{stderr}"
    );

    // No endpoint configured: a usage error saying what to pass.
    let out = Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .env_remove("EXCERPT_LLM_URL")
        .env_remove("EXCERPT_LLM_MODEL")
        .arg("--index")
        .arg(&index)
        .args(["ask", "kettle?"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--llm-url") && stderr.contains("--llm-model"),
        "{stderr}"
    );
}

/// `ask -` reads the question from standard input; `--json` is `--format json`; the old
/// EXCERPT_ASK_FORMAT is still read, with a one-line note, and EXCERPT_FORMAT is too.
#[test]
fn ask_reads_standard_input_and_speaks_the_common_dialect() {
    use std::io::Write;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let (server, fake) = fake_chat();
    let question = "what temperature does the kettle whistle at?";

    let mut child = Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .env_remove("EXCERPT_INDEX")
        .env_remove("EXCERPT_FORMAT")
        .env_remove("EXCERPT_ASK_FORMAT")
        .arg("--index")
        .arg(&index)
        .args(["ask", "-", "--json"])
        .args(["--llm-url", &server.url(), "--llm-model", "fake-model"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{question}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["question"], question, "{v:#}");
    assert!(!v["citations"].as_array().unwrap().is_empty(), "{v:#}");
    let user = openai::message(fake.seen.lock().unwrap().last().unwrap(), "user").unwrap();
    assert!(user.contains(&format!("Question: {question}")), "{user}");

    let with_env = |vars: &[(&str, &str)], args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_excerpt"))
            .env_remove("EXCERPT_INDEX")
            .env_remove("EXCERPT_FORMAT")
            .env_remove("EXCERPT_ASK_FORMAT")
            .envs(vars.iter().copied())
            .arg("--index")
            .arg(&index)
            .args(["ask", question, "--llm-url", &server.url()])
            .args(["--llm-model", "fake-model"])
            .args(args)
            .output()
            .unwrap()
    };
    let notes = |out: &Output| {
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("note:"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // The old name: JSON, and one note naming both names.
    let out = with_env(&[("EXCERPT_ASK_FORMAT", "json")], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["question"], question);
    let n = notes(&out);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].contains("EXCERPT_ASK_FORMAT") && n[0].contains("EXCERPT_FORMAT"));
    // The new name: JSON, no note.
    let out = with_env(&[("EXCERPT_FORMAT", "json")], &[]);
    assert!(serde_json::from_str::<Value>(&stdout(&out)).is_ok());
    assert!(notes(&out).is_empty());
    // The command line wins, and then the old variable was not used: no note.
    let out = with_env(&[("EXCERPT_ASK_FORMAT", "json")], &["--format", "text"]);
    assert!(stdout(&out).contains("\nSources:\n"));
    assert!(notes(&out).is_empty());
    // EXCERPT_FORMAT=markdown is query's: ask passes over it to the old variable.
    let out = with_env(
        &[
            ("EXCERPT_FORMAT", "markdown"),
            ("EXCERPT_ASK_FORMAT", "json"),
        ],
        &[],
    );
    assert!(serde_json::from_str::<Value>(&stdout(&out)).is_ok());
    // `ask --format markdown` is a usage error: ask prints text or JSON.
    let out = with_env(&[], &["--format", "markdown"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A document whose title (its first heading) and second heading are a megabyte each,
/// beside the kettle and the heron.
fn build_huge_index(dir: &Path) -> PathBuf {
    let huge = format!(
        "# {}\n\n## {}\n\nThe copper kettle whistles loudly when the water boils.\n",
        "Kettle ".repeat((1 << 20) / 7),
        "Boiling ".repeat((1 << 20) / 8),
    );
    common::ingest_docs(
        dir,
        &[
            ("huge.md", huge.as_bytes()),
            (
                "kettle.md",
                b"# Kettle\n\nThe brass kettle whistles at exactly ninety-eight degrees.\n",
            ),
        ],
    )
}

/// Every printed byte counts against the budget (issue 63, row 8): a megabyte title and
/// heading are cut in every rendering and their tokens are counted in the budget, so
/// `query --budget 50` prints under a kilobyte in every format.
#[test]
fn a_megabyte_title_and_heading_stay_within_the_budget_of_query() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_huge_index(tmp.path());
    let query = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_excerpt"))
            .env_remove("EXCERPT_INDEX")
            .env_remove("EXCERPT_FORMAT")
            .arg("--index")
            .arg(&index)
            .args(["query", "when does the kettle whistle?"])
            .args(args)
            .output()
            .expect("the binary runs");
        stdout(&out)
    };
    for strategy in ["auto", "topk", "adjacent", "rse", "section", "window"] {
        for format in ["json", "text", "markdown"] {
            let printed = query(&["--budget", "50", "-s", strategy, "-f", format]);
            eprintln!("{strategy} {format} at budget 50: {} bytes", printed.len());
            assert!(printed.len() < 1024, "{strategy} {format}: {printed}");
        }
    }
    let v: Value = serde_json::from_str(&query(&["--budget", "50", "-f", "json"])).unwrap();
    assert!(v["tokens"].as_u64().unwrap() <= 50, "{v:#}");
    // With room for it the huge document's piece is shown, its title and section cut,
    // and the header tokens are in `tokens`.
    let v: Value =
        serde_json::from_str(&query(&["--budget", "1000", "-s", "topk", "-f", "json"])).unwrap();
    let pieces = v["pieces"].as_array().unwrap();
    let huge = pieces.iter().find(|p| p["doc_id"] == "huge.md");
    let huge = huge.unwrap_or_else(|| panic!("{v:#}"));
    let title = huge["title"].as_str().unwrap();
    assert!(
        title.starts_with("Kettle Kettle") && title.ends_with('…'),
        "{title}"
    );
    assert!(title.chars().count() <= 400);
    let section = huge["section"].as_str().unwrap();
    assert!(
        section.ends_with('…') && section.chars().count() <= 300,
        "{section}"
    );
    let text: u64 = pieces.iter().map(|p| p["tokens"].as_u64().unwrap()).sum();
    let tokens = v["tokens"].as_u64().unwrap();
    assert!(tokens > text + 100 && tokens <= 1000, "{tokens} {text}");
    // The normal title is shown as it is.
    let kettle = pieces.iter().find(|p| p["doc_id"] == "kettle.md");
    let kettle = kettle.unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(kettle["title"], "Kettle");
}

/// `ask --budget N` sends a prompt within the budget plus its fixed instructions, however
/// long the titles and headings of the documents are: the fake model records the size of
/// every request.
#[test]
fn a_megabyte_title_and_heading_stay_within_the_budget_of_ask() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_huge_index(tmp.path());
    let (server, fake) = fake_chat();
    // At 50 tokens only the kettle's piece fits (the huge document's header alone does
    // not); at 1000 the huge document's piece is there too, its title and section cut.
    for (strategy, budget) in [("auto", "50"), ("topk", "1000")] {
        let question = "when does the kettle whistle?";
        let out = ask(
            &index,
            &server,
            &[question, "-s", strategy, "--budget", budget],
        );
        stdout(&out);
        let seen = fake.seen.lock().unwrap();
        let body = seen.last().expect("the model was asked");
        let system = openai::message(body, "system").unwrap();
        let user = openai::message(body, "user").unwrap();
        let sent = serde_json::to_vec(body).unwrap().len();
        eprintln!(
            "ask --budget {budget}: a request of {sent} bytes, a prompt of {} bytes",
            user.len()
        );
        // The fixed instructions, the question, and per piece its number, id and
        // offsets; the rest is the budget's (a token is a few bytes of text).
        let budget: usize = budget.parse().unwrap();
        assert!(
            user.len() < 400 + 8 * budget,
            "{budget}: {} bytes",
            user.len()
        );
        assert!(
            sent < system.len() + user.len() + 512,
            "{budget}: {sent} bytes"
        );
    }
    let seen = fake.seen.lock().unwrap();
    let user = openai::message(seen.last().unwrap(), "user").unwrap();
    assert!(
        user.contains("huge.md — Kettle Kettle") && user.contains('…'),
        "{user}"
    );
}
