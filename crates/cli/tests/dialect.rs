//! One dialect across the `excerpt` commands, end to end with the real binary and model
//! on a real on-disk index: `--format` and its alias `--json` on every command that
//! prints, `EXCERPT_FORMAT` and the renamed variables, `query -` reading standard input,
//! the help layout, shell completions, the man page, and progress off a terminal.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The binary with no `EXCERPT_*` variable of the test environment leaking in.
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_excerpt"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("EXCERPT_")
            && k != "EXCERPT_HOME"
            && k != "EXCERPT_PDFIUM"
        {
            c.env_remove(k);
        }
    }
    c
}

fn run_env(index: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    bin()
        .envs(env.iter().copied())
        .arg("--index")
        .arg(index)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn run(index: &Path, args: &[&str]) -> Output {
    run_env(index, &[], args)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    let text = ok(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

const DOCS: &[(&str, &[u8])] = &[
    (
        "kettle.md",
        b"# Kettle\n\nThe brass kettle whistles at exactly ninety-eight degrees.\n",
    ),
    (
        "heron.md",
        b"# Herons\n\nThe grey heron nests in tall alder trees by the river.\n",
    ),
];

/// `docs`, `stats` and `verify` print the same bytes for `--json`, `--format json`,
/// `-f json` and `EXCERPT_FORMAT=json`, and the same text for `--format text`, no flag,
/// and an `EXCERPT_FORMAT` only `query` prints (markdown).
#[test]
fn report_commands_take_format_json_and_the_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let index = common::ingest_docs(tmp.path(), DOCS);
    for cmd in ["docs", "stats", "verify"] {
        let old = ok(&run(&index, &[cmd, "--json"]));
        serde_json::from_str::<Value>(&old).unwrap_or_else(|e| panic!("{cmd}: {e}: {old}"));
        for (env, args) in [
            (vec![], vec![cmd, "--format", "json"]),
            (vec![], vec![cmd, "--format=json"]),
            (vec![], vec![cmd, "-f", "json"]),
            (vec![("EXCERPT_FORMAT", "json")], vec![cmd]),
            // The flag wins over the variable.
            (vec![("EXCERPT_FORMAT", "text")], vec![cmd, "--json"]),
        ] {
            let out = run_env(&index, &env, &args);
            assert_eq!(ok(&out), old, "{env:?} {args:?}");
        }
        let text = ok(&run(&index, &[cmd]));
        assert!(
            serde_json::from_str::<Value>(&text).is_err(),
            "{cmd}: {text}"
        );
        assert_eq!(ok(&run(&index, &[cmd, "--format", "text"])), text, "{cmd}");
        let out = run_env(&index, &[("EXCERPT_FORMAT", "markdown")], &[cmd]);
        assert_eq!(ok(&out), text, "{cmd}: markdown is query's, passed over");
        assert_eq!(stderr(&out), "", "{cmd}");
        // Markdown on the command line is a usage error for these commands.
        let out = run(&index, &[cmd, "--format", "markdown"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        // So is a variable naming no format at all.
        let out = run_env(&index, &[("EXCERPT_FORMAT", "xml")], &[cmd]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        assert!(stderr(&out).contains("EXCERPT_FORMAT"), "{}", stderr(&out));
    }
    // repair on a sound index: the same report either way.
    let a = json(&run(&index, &["repair", "--json"]));
    let b = json(&run(&index, &["repair", "--format", "json"]));
    assert_eq!(a["lost_documents"], b["lost_documents"]);
    assert_eq!(a["documents"], 2);
    assert_eq!(b["documents"], 2);
}

/// `ingest --format json` prints the report `ingest --json` prints; `query --json` the
/// context `query --format json` prints.
#[test]
fn ingest_and_query_take_both_spellings() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in DOCS {
        excerpt_testkit::fixtures::write_file(tmp.path(), &format!("docs/{name}"), text);
    }
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    let first = json(&run(
        &index,
        &["ingest", docs.to_str().unwrap(), "--format", "json"],
    ));
    assert_eq!(first["added"], 2, "{first:#}");
    let again = json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    assert_eq!(again["unchanged"], 2, "{again:#}");
    let text = run(
        &index,
        &["ingest", docs.to_str().unwrap(), "--format", "text"],
    );
    assert_eq!(ok(&text), "", "text goes to stderr");
    assert!(stderr(&text).contains("2 unchanged"), "{}", stderr(&text));

    let q = "what temperature does the kettle whistle at?";
    let a = json(&run(&index, &["query", q, "--format", "json"]));
    let b = json(&run(&index, &["query", q, "--json"]));
    let c = json(&run_env(
        &index,
        &[("EXCERPT_FORMAT", "json")],
        &["query", q],
    ));
    assert_eq!(a["pieces"][0]["doc_id"], "kettle.md", "{a:#}");
    assert_eq!(a["pieces"], b["pieces"]);
    assert_eq!(a["pieces"], c["pieces"]);
    // --json wins over a --format given before it.
    let d = json(&run(
        &index,
        &["query", q, "--format", "markdown", "--json"],
    ));
    assert_eq!(a["pieces"], d["pieces"]);
    // Markdown still reaches query through the variable.
    let md = ok(&run_env(
        &index,
        &[("EXCERPT_FORMAT", "markdown")],
        &["query", q],
    ));
    assert!(md.starts_with("# Context"), "{md}");
}

/// `excerpt query -` searches for the text on standard input, not for "-".
#[test]
fn query_dash_reads_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let index = common::ingest_docs(tmp.path(), DOCS);
    let question = "where does the grey heron nest?";
    let piped = |input: &str, args: &[&str]| {
        let mut child = bin()
            .arg("--index")
            .arg(&index)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let from_stdin = json(&piped(
        &format!("{question}\n"),
        &["query", "-", "--format", "json"],
    ));
    assert_eq!(from_stdin["query"], question, "{from_stdin:#}");
    assert_eq!(from_stdin["pieces"][0]["doc_id"], "heron.md");
    let from_arg = json(&run(&index, &["query", question, "--format", "json"]));
    assert_eq!(from_stdin["pieces"], from_arg["pieces"]);
    // Empty standard input is a usage error, not a search for nothing.
    let out = piped("\n", &["query", "-"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("standard input"), "{}", stderr(&out));
}

/// `EXCERPT_MAX_FILE_MIB` (now `EXCERPT_MAX_FILE_SIZE`) is still read, with a one-line
/// note; the new name is read without one and wins over the old.
#[test]
fn a_renamed_variable_is_still_read_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    excerpt_testkit::fixtures::write_file(&docs, "small.md", b"# Small\n\nA small note.\n");
    let mut big = b"# Big\n\n".to_vec();
    big.extend(b"All work and no play makes a dull document. ".repeat(30_000));
    excerpt_testkit::fixtures::write_file(&docs, "big.md", &big);
    assert!(big.len() > 1 << 20);
    let ingest = |env: &[(&str, &str)], index: &str| {
        let out = run_env(
            &tmp.path().join(index),
            env,
            &["ingest", docs.to_str().unwrap(), "--json"],
        );
        let err = stderr(&out);
        (json(&out), err)
    };
    let over_limit = |report: &Value| {
        report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .chain(report["failed"].as_array().unwrap())
            .filter(|p| {
                p["reason"]
                    .as_str()
                    .unwrap()
                    .contains("over the limit of 1 MiB")
            })
            .count()
    };
    let (report, err) = ingest(&[("EXCERPT_MAX_FILE_MIB", "1")], "old");
    assert_eq!(report["added"], 1, "{report:#}");
    assert_eq!(over_limit(&report), 1, "{report:#}");
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("EXCERPT_MAX_FILE_MIB") && notes[0].contains("EXCERPT_MAX_FILE_SIZE"),
        "{err}"
    );
    let (report, err) = ingest(&[("EXCERPT_MAX_FILE_SIZE", "1")], "new");
    assert_eq!(over_limit(&report), 1, "{report:#}");
    assert!(!err.contains("note:"), "{err}");
    let (report, err) = ingest(
        &[
            ("EXCERPT_MAX_FILE_SIZE", "8"),
            ("EXCERPT_MAX_FILE_MIB", "1"),
        ],
        "both",
    );
    assert_eq!(report["added"], 2, "the new name wins: {report:#}");
    assert!(!err.contains("note:"), "{err}");
    // A flag on the command line: the old variable is not what was used, no note.
    let out = run_env(
        &tmp.path().join("flag"),
        &[("EXCERPT_MAX_FILE_MIB", "1")],
        &[
            "ingest",
            docs.to_str().unwrap(),
            "--json",
            "--max-file-size",
            "8",
        ],
    );
    assert_eq!(json(&out)["added"], 2);
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
}

/// Each command's help lists its own options first and the global ones under their own
/// heading; the help names PDF.
#[test]
fn help_puts_the_global_options_under_their_own_heading_and_names_pdf() {
    let help = |args: &[&str]| ok(&bin().args(args).output().unwrap());
    let ingest = help(&["ingest", "--help"]);
    let own = ingest.find("\nOptions:\n").expect("an Options heading");
    let global = ingest
        .find("\nGlobal options:\n")
        .expect("a Global options heading");
    assert!(own < global, "{ingest}");
    let at = |flag: &str| {
        ingest
            .find(&format!("--{flag}"))
            .unwrap_or_else(|| panic!("no --{flag}: {ingest}"))
    };
    assert!(at("prune") < global && at("format") < global, "{ingest}");
    assert!(
        at("index ") > global && at("embed-url") > global,
        "{ingest}"
    );
    assert!(ingest.contains(".pdf"), "{ingest}");
    let top = help(&["--help"]);
    assert!(top.contains("PDF"), "{top}");
    assert!(top.contains("completions") && top.contains("man"), "{top}");
    let query = help(&["query", "--help"]);
    assert!(
        query.find("--budget").unwrap() < query.find("Global options:").unwrap(),
        "{query}"
    );
    assert!(query.contains("--json"), "{query}");
}

/// `excerpt completions bash|zsh|fish` print scripts naming the commands and options;
/// `excerpt man` prints a roff page, `--dir` writes one per command.
#[test]
fn completions_and_man_pages() {
    let out = |args: &[&str]| ok(&bin().args(args).output().unwrap());
    let bash = out(&["completions", "bash"]);
    assert!(bash.len() > 1000, "{bash}");
    assert!(
        bash.contains("complete") && bash.contains("excerpt"),
        "{bash}"
    );
    for word in ["ingest", "query", "--format", "--progress", "completions"] {
        assert!(bash.contains(word), "bash: no {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let s = out(&["completions", shell]);
        assert!(
            s.contains("ingest") && s.contains("--format"),
            "{shell}: {s}"
        );
    }
    let bad = bin().args(["completions", "cmd.exe"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));

    let man = out(&["man"]);
    assert!(man.starts_with(".ie") || man.starts_with(".TH"), "{man}");
    assert!(man.contains(".TH excerpt 1"), "{man}");
    for word in ["ingest", "query", "completions", "EXCERPT_INDEX"] {
        assert!(man.contains(word), "man: no {word}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let listed = out(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(
        listed.lines().count(),
        std::fs::read_dir(&dir).unwrap().count()
    );
    let ingest = std::fs::read_to_string(dir.join("excerpt-ingest.1")).unwrap();
    assert!(ingest.contains(".TH excerpt-ingest 1"), "{ingest}");
    assert!(
        ingest.contains("prune") && ingest.contains("index"),
        "{ingest}"
    );
    assert!(dir.join("excerpt.1").exists() && dir.join("excerpt-query.1").exists());
    assert!(!dir.join("excerpt-pdf-worker.1").exists());
}

/// Off a terminal an ingest writes a progress line every --progress-interval seconds
/// on stderr (text by default, JSON with --progress json, whose last record says done
/// with every chunk embedded), and nothing with --quiet.
#[test]
fn progress_lines_off_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    for i in 0..12 {
        let text: String = (0..40)
            .map(|j| format!("Sentence {j} of note {i} is about kettles and herons. "))
            .collect();
        let text = format!("# Note {i}\n\n{text}\n");
        excerpt_testkit::fixtures::write_file(&docs, &format!("n{i:02}.md"), text);
    }
    let ingest = |index: &str, args: &[&str]| {
        let out = bin()
            .arg("--index")
            .arg(tmp.path().join(index))
            .args(["--progress-interval", "0.05"])
            .args(args)
            .arg("ingest")
            .arg(&docs)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    // Text lines (the default off a terminal: stderr is a pipe here).
    let err = ingest("text", &[]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert!(!lines.is_empty(), "{err}");
    assert!(lines.iter().all(|l| l.contains(", files ")), "{err}");
    for l in &lines {
        if let Some((before, _)) = l.split_once(" chunks/s)") {
            let rate = before.rsplit('(').next().unwrap();
            assert!(rate.parse::<u64>().is_ok(), "a whole-number rate: {l}");
        }
    }
    assert!(
        err.contains("ingested 12 files"),
        "the summary still follows: {err}"
    );

    // JSON records.
    let err = ingest("json", &["--progress", "json"]);
    let records: Vec<Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(records.len() >= 2, "{err}");
    let last = records.last().unwrap();
    assert_eq!(last["done"], true, "{last}");
    assert_eq!(last["files"], 12, "{last}");
    assert_eq!(last["files_done"], 12, "{last}");
    let queued = last["chunks_queued"].as_u64().unwrap();
    assert!(queued >= 12, "{last}");
    assert_eq!(last["chunks_done"].as_u64(), Some(queued), "{last}");
    assert!(last["generation"].as_u64().unwrap() >= 1, "{last}");
    for r in &records[..records.len() - 1] {
        assert_eq!(r["done"], false, "{r}");
        assert!(r["phase"] == "reading" || r["phase"] == "embedding", "{r}");
        if let Some(rate) = r.get("chunks_per_sec") {
            assert!(rate.is_u64(), "{r}");
        }
    }

    // --quiet: no progress, no summary.
    let err = ingest("quiet", &["--quiet"]);
    assert!(!err.contains("progress"), "{err}");
    // --progress off.
    let err = ingest("off", &["--progress", "off"]);
    assert!(!err.contains("progress:"), "{err}");
}
