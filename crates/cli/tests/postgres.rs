//! The `excerpt` binary on a PostgreSQL index (a real PostgreSQL 18 + pgvector from
//! `scripts/postgres.sh`, through `excerpt_testkit::postgres`): two `excerpt serve`
//! processes on one database, a third process ingesting, an ingest killed with SIGKILL.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use excerpt_testkit::fixtures::write_file;
use serde_json::{json, Value};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_excerpt"));
    c.env_remove("EXCERPT_INDEX").env("EXCERPT_QUIET", "true");
    c
}

fn ingest(url: &str, dir: &Path) -> std::process::Output {
    bin()
        .args(["--index", url, "ingest", dir.to_str().unwrap(), "--json"])
        .output()
        .unwrap()
}

fn query(base: &str) -> Value {
    ureq::post(format!("{base}/v1/query"))
        .send_json(json!({
            "query": "what do owls eat at night?",
            "filter": {"prefixes": ["a/"]},
            "format": "json"
        }))
        .expect("query answers")
        .body_mut()
        .read_json()
        .unwrap()
}

/// Per document, whether its chunk rows match its chunk list (no half-written document).
fn consistent(url: &str) -> (i64, i64) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let bad: i64 = c
        .query_one(
            "SELECT count(*) FROM excerpt_documents d
             WHERE jsonb_array_length(d.chunks) <> (SELECT count(*) FROM excerpt_chunks c WHERE c.doc = d.pk)",
            &[],
        )
        .unwrap()
        .get(0);
    let docs: i64 = c
        .query_one("SELECT count(*) FROM excerpt_documents", &[])
        .unwrap()
        .get(0);
    (bad, docs)
}

#[test]
fn two_servers_answer_alike_while_a_third_process_ingests_and_a_killed_ingest_recovers() {
    let Some(url) = excerpt_testkit::postgres::database("cli") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    write_file(
        &docs.join("a"),
        "owls.md",
        "# Owls\n\nOwls hunt at night.\n\n## Diet\n\nOwls eat mice, voles and insects.\n",
    );
    write_file(
        &docs.join("a"),
        "bats.md",
        "# Bats\n\nBats eat moths at night and sleep by day.\n",
    );
    let out = ingest(&url, &docs);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (mut one, base_one) = common::spawn_server(&url);
    let (mut two, base_two) = common::spawn_server(&url);
    let before = query(&base_one);
    assert!(!before["pieces"].as_array().unwrap().is_empty(), "{before}");

    // A third process ingests other documents while both servers answer.
    let more = tmp.path().join("more");
    for i in 0..40 {
        write_file(
            &more.join("b"),
            &format!("n{i}.md"),
            format!("# Note {i}\n\nOwls and mice appear in note {i}, with voles.\n"),
        );
    }
    let mut writer = bin()
        .args(["--index", &url, "ingest", more.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rounds = 0;
    loop {
        let (x, y) = (query(&base_one), query(&base_two));
        assert_eq!(x["pieces"], y["pieces"]);
        assert_eq!(x["pieces"], before["pieces"]);
        rounds += 1;
        if writer.try_wait().unwrap().is_some() {
            break;
        }
    }
    assert!(writer.wait().unwrap().success());
    assert!(rounds >= 1);
    // A server on PostgreSQL stops cleanly on SIGTERM (it once panicked closing its
    // connections on a runtime thread).
    let term = Command::new("kill")
        .args(["-TERM", &one.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = one.wait().unwrap();
    assert!(status.success(), "SIGTERM: {status}");
    let _ = two.kill();
    let _ = two.wait();

    // An ingest killed mid-way leaves whole documents only; the next one completes.
    for i in 0..60 {
        write_file(
            &more.join("c"),
            &format!("k{i}.md"),
            format!("# Kill {i}\n\nA paragraph about badgers number {i}.\n\nAnd another about foxes {i}.\n"),
        );
    }
    let mut victim = bin()
        .args(["--index", &url, "ingest", more.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its first documents are committed, while it is still running.
    let killed_docs = |url: &str| -> i64 {
        let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
        c.query_one(
            "SELECT count(*) FROM excerpt_documents WHERE id LIKE 'c/k%'",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let started = std::time::Instant::now();
    while killed_docs(&url) == 0 {
        assert!(
            victim.try_wait().unwrap().is_none(),
            "the ingest ended before committing anything"
        );
        assert!(
            started.elapsed().as_secs() < 120,
            "the ingest committed nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the ingest finished before it could be killed"
    );
    let _ = victim.kill();
    let _ = victim.wait();
    let written = killed_docs(&url);
    assert!((1..60).contains(&written), "{written} of 60 written");
    let (bad, _) = consistent(&url);
    assert_eq!(bad, 0);
    let out = ingest(&url, &more);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (bad, docs) = consistent(&url);
    assert_eq!((bad, docs), (0, 2 + 40 + 60));
}

#[test]
fn database_failures_are_one_line_and_exit_non_zero() {
    let Some(base) = excerpt_testkit::postgres::server() else {
        return;
    };
    let wrong = base.replacen(":excerpt@", ":wrong@", 1);
    let out = bin()
        .args(["--index", &wrong, "query", "owls"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused the credentials") && !err.contains("wrong@"),
        "{err}"
    );
    let out = bin()
        .args([
            "--index",
            "postgres://excerpt@127.0.0.1:1/excerpt",
            "query",
            "owls",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach PostgreSQL"), "{err}");
}

#[test]
fn bench_on_postgres_loads_builds_and_measures() {
    let Some(url) = excerpt_testkit::postgres::database("bench") else {
        return;
    };
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--postgres",
            &url,
            "--chunks",
            "600",
            "--chunks-per-doc",
            "20",
            "--dim",
            "32",
            "--queries",
            "10",
            "--budget",
            "500",
            "--json",
        ];
        args.extend_from_slice(extra);
        bin().args(&args).output().unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["chunks"], 600);
    assert_eq!(report["documents"], 30);
    assert_eq!(report["reused"], false);
    assert!(report["load_chunks_per_second"].as_f64().unwrap() > 0.0);
    assert!(report["incremental_chunks"].as_u64().unwrap() > 0);
    // HNSW on a small collection finds (nearly) the exact neighbours.
    assert!(
        report["dense_recall_at_10"].as_f64().unwrap() >= 0.9,
        "{report}"
    );
    assert!(report["lexical"]["p50_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(report["query"]["strategies"].as_array().unwrap().len(), 6);
    // The incremental documents were removed again: the collection is reusable.
    let (bad, docs) = consistent(&url);
    assert_eq!((bad, docs), (0, 30));
    let again = run(&["--reuse"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let report: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["reused"], true);
    // Without --reuse, a database holding an index is refused, in one line.
    let refused = run(&[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("already holds an index"), "{err}");
}

/// Issue 27, row 8: a NUL character (which PostgreSQL cannot store) in a document or a
/// query was a 500 `internal` over HTTP, and stopped a CLI ingest of a JSONL file at
/// that document without naming it. Now HTTP answers 400 naming the field, and the
/// ingest fails that document alone, named, and ingests the rest.
#[test]
fn nul_characters_are_refused_by_name_and_the_rest_is_ingested() {
    let Some(url) = excerpt_testkit::postgres::database("nul") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lines = [
        json!({"id": "one", "title": "One", "text": "Owls hunt at night."}),
        json!({"id": "bad", "title": "Bad", "text": "Owls\u{0} eat mice."}),
        json!({"id": "two", "title": "Two", "text": "Bats eat moths at night."}),
    ]
    .map(|v| v.to_string());
    write_file(tmp.path(), "docs/corpus.jsonl", lines.join("\n").as_bytes());
    let out = ingest(&url, &tmp.path().join("docs"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(report["added"], 2, "{report}");
    assert_eq!(report["documents"], 2, "{report}");
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{report}");
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"bad\"") && reason.contains("text") && reason.contains("NUL"),
        "{reason}"
    );

    let (mut server, base) = common::spawn_server(&url);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |path: &str, body: Value| -> (u16, Value) {
        let mut r = agent
            .post(format!("{base}{path}"))
            .send_json(body)
            .expect("the server answers");
        let status = r.status().as_u16();
        (status, r.body_mut().read_json().unwrap())
    };
    let doc = |field: &str, value: Value| {
        let mut d = json!({"id": "new", "title": "New", "text": "Moles dig tunnels."});
        d[field] = value;
        json!({ "documents": [d] })
    };
    for (body, field) in [
        (doc("text", json!("Moles\u{0} dig.")), "text"),
        (doc("title", json!("Mo\u{0}les")), "title"),
        (doc("metadata", json!({"team": "a\u{0}b"})), "metadata"),
        (doc("id", json!("ne\u{0}w")), "id"),
    ] {
        let (status, v) = post("/v1/ingest", body);
        assert_eq!(status, 400, "{field}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{field}: {message}");
    }
    for (body, field) in [
        (json!({"query": "owls\u{0} at night"}), "query"),
        (
            json!({"query": "owls", "filter": {"prefixes": ["o\u{0}"]}}),
            "prefix",
        ),
        (
            json!({"query": "owls", "filter": {"where": ["team=a\u{0}"]}}),
            "metadata",
        ),
    ] {
        let (status, v) = post("/v1/query", body);
        assert_eq!(status, 400, "{field}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{field}: {message}");
    }
    let (status, v) = post("/v1/query", json!({"query": "owls at night"}));
    assert_eq!(status, 200, "{v}");
    let _ = server.kill();
    let _ = server.wait();
}

/// Issue 27, row 12: two concurrent ingests of the same 40 files into one PostgreSQL
/// index both reported `added: 40`. The counts now come from the writes themselves:
/// between them the two ingests add each document once.
#[test]
fn concurrent_ingests_of_the_same_files_count_each_document_once() {
    let Some(url) = excerpt_testkit::postgres::database("twice") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    for i in 0..40 {
        write_file(
            &docs,
            &format!("note{i:02}.md"),
            format!("# Note {i}\n\nThe lighthouse keeper logged ship number {i} at dawn.\n")
                .as_bytes(),
        );
    }
    // Both processes start together and load their model before they write.
    let spawn = || {
        bin()
            .args(["--index", &url, "ingest", docs.to_str().unwrap(), "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn(), spawn());
    let mut added = 0;
    for child in [one, two] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        let n = |k: &str| r[k].as_u64().unwrap();
        assert_eq!(n("added") + n("updated") + n("unchanged"), 40, "{r}");
        assert_eq!(n("updated"), 0, "{r}");
        added += n("added");
    }
    assert_eq!(added, 40, "each document is added once");
}
