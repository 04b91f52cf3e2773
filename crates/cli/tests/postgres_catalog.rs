//! What reads the index as a whole, on a PostgreSQL index (a real PostgreSQL 18 +
//! pgvector from `scripts/postgres.sh`, a database per test) against the same documents
//! in an index directory: `docs`, `stats`, the server's documents and stats routes, the
//! MCP tools `list_documents` and `get_document`; `verify` and `repair` refused in one
//! line. Skipped with a message when PostgreSQL cannot start, unless
//! `EXCERPT_REQUIRE_POSTGRES=1`.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use excerpt_testkit::fixtures::write_file;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_excerpt"));
    c.env_remove("EXCERPT_INDEX").env("EXCERPT_QUIET", "true");
    c
}

fn run(index: &str, args: &[&str]) -> Output {
    bin().arg("--index").arg(index).args(args).output().unwrap()
}

fn stdout_of(index: &str, args: &[&str]) -> String {
    let out = run(index, args);
    assert!(
        out.status.success(),
        "{args:?} on {index}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_of(index: &str, args: &[&str]) -> Value {
    serde_json::from_str(&stdout_of(index, args)).unwrap()
}

/// Three documents (one in a subfolder, one with non-ASCII text and sections) ingested
/// into the index directory `dir/idx` and into the database `url`; returns the
/// directory index's path.
fn ingest_both(dir: &Path, url: &str) -> String {
    let docs = dir.join("docs");
    write_file(
        &docs,
        "owls.md",
        "# Owls\n\nOwls hunt at night.\n\n## Diet\n\nOwls eat mice, voles and insects.\n",
    );
    write_file(
        &docs.join("sub"),
        "café.md",
        "# Café crème\n\nLe café est très chaud. Ça brûle.\n\n## Prix\n\nDeux euros, naïvement.\n",
    );
    write_file(
        &docs,
        "bats.txt",
        "Bats eat moths at night and sleep by day.\n",
    );
    let index = dir.join("idx").to_str().unwrap().to_string();
    for target in [index.as_str(), url] {
        stdout_of(target, &["ingest", docs.to_str().unwrap(), "--json"]);
    }
    index
}

fn get(url: &str) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.get(url).call().unwrap();
    (r.status().as_u16(), r.body_mut().read_json().unwrap())
}

fn delete(url: &str) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.delete(url).call().unwrap();
    (r.status().as_u16(), r.body_mut().read_json().unwrap())
}

/// The figures two stores of the same documents share.
fn shared_stats(v: &Value) -> Value {
    json!({
        "documents": v["documents"],
        "chunks": v["chunks"],
        "text_bytes": v["text_bytes"],
        "model": v["model"],
        "dimension": v["dimension"],
        "chunker": v["chunker"],
        "headers": v["headers"],
        "sentence_vectors": v["sentence_vectors"],
        "sentence_vector_documents": v["sentence_vector_documents"],
    })
}

#[test]
fn docs_stats_verify_and_repair_on_postgres() {
    let Some(url) = excerpt_testkit::postgres::database("clidocs") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_both(tmp.path(), &url);

    // `docs`: the same list, JSON and text, as the directory index.
    let on_dir = json_of(&index, &["docs", "--json"]);
    let on_pg = json_of(&url, &["docs", "--json"]);
    assert_eq!(on_dir.as_array().unwrap().len(), 3, "{on_dir}");
    assert_eq!(on_pg, on_dir);
    assert_eq!(stdout_of(&url, &["docs"]), stdout_of(&index, &["docs"]));

    // `stats --json`: the same figures; no generation, segments or damage; the URL
    // without its password.
    let dir_stats = json_of(&index, &["stats", "--json"]);
    let pg_stats = json_of(&url, &["stats", "--json"]);
    assert_eq!(shared_stats(&pg_stats), shared_stats(&dir_stats));
    assert_eq!(pg_stats["documents"], 3);
    assert_eq!(pg_stats["generation"], 0);
    assert_eq!(pg_stats["segments"], 0);
    assert_eq!(pg_stats["damaged"], false);
    assert!(pg_stats["disk_bytes"].as_u64().unwrap() > 0);
    let shown = pg_stats["index"].as_str().unwrap();
    assert!(shown.starts_with("postgres://excerpt:***@"), "{shown}");
    let text = stdout_of(&url, &["stats"]);
    assert!(text.contains("documents   3\n"), "{text}");
    assert!(text.contains("in database "), "{text}");
    assert!(!text.contains(":excerpt@"), "{text}");

    // `verify` and `repair`: refused in one line naming pg_amcheck, exit code 1.
    for cmd in ["verify", "repair"] {
        let out = run(&url, &[cmd]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("pg_amcheck") && !err.contains(":excerpt@"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }

    // After `rm`, both listings shrink alike.
    stdout_of(&url, &["rm", "bats.txt"]);
    let after: Vec<Value> = json_of(&url, &["docs", "--json"])
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(after.len(), 2);
    assert!(after.iter().all(|d| d["id"] != "bats.txt"));
    assert_eq!(json_of(&url, &["stats", "--json"])["documents"], 2);

    // An empty database: `docs` lists nothing, `stats` says there is no index (exit 4).
    let Some(empty) = excerpt_testkit::postgres::database("clidocs_empty") else {
        return;
    };
    assert_eq!(json_of(&empty, &["docs", "--json"]), json!([]));
    let out = run(&empty, &["stats"]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no index at"), "{err}");
}

#[test]
fn server_documents_routes_on_postgres() {
    let Some(url) = excerpt_testkit::postgres::database("srvdocs") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_both(tmp.path(), &url);
    let (mut dir_server, dir_base) = common::spawn_server(&index);
    let (mut pg_server, pg_base) = common::spawn_server(&url);

    let (status, list) = get(&format!("{pg_base}/v1/documents"));
    assert_eq!(status, 200, "{list}");
    assert_eq!(list, get(&format!("{dir_base}/v1/documents")).1);
    assert_eq!(list.as_array().unwrap().len(), 3);

    // One document by id (an id with `/` and non-ASCII characters), with and without
    // its text.
    for path in [
        "/v1/documents/sub/caf%C3%A9.md",
        "/v1/documents/sub/café.md?text=false",
    ] {
        let (status, doc) = get(&format!("{pg_base}{path}"));
        assert_eq!(status, 200, "{path}: {doc}");
        assert_eq!(doc, get(&format!("{dir_base}{path}")).1, "{path}");
        assert_eq!(doc["id"], "sub/café.md");
        assert!(doc["sections"].as_array().unwrap().len() >= 2, "{doc}");
    }
    assert!(get(&format!("{pg_base}/v1/documents/owls.md")).1["text"]
        .as_str()
        .unwrap()
        .contains("Owls eat mice"));
    let (status, body) = get(&format!("{pg_base}/v1/documents/nope.md"));
    assert_eq!(status, 404, "{body}");

    let (status, stats) = get(&format!("{pg_base}/v1/stats"));
    assert_eq!(status, 200, "{stats}");
    assert_eq!(
        shared_stats(&stats),
        shared_stats(&get(&format!("{dir_base}/v1/stats")).1)
    );
    assert_eq!(stats["generation"], 0);

    // DELETE: the document goes, the count follows; a second DELETE is a 404.
    let (status, removed) = delete(&format!("{pg_base}/v1/documents/bats.txt"));
    assert_eq!(status, 200, "{removed}");
    assert_eq!(
        removed,
        json!({"removed": ["bats.txt"], "generation": 0, "documents": 2})
    );
    let (status, _) = delete(&format!("{pg_base}/v1/documents/bats.txt"));
    assert_eq!(status, 404);
    assert_eq!(
        get(&format!("{pg_base}/v1/documents"))
            .1
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let _ = dir_server.kill();
    let _ = pg_server.kill();
    let _ = dir_server.wait();
    let _ = pg_server.wait();
}

/// The structured answers of `list_documents` and `get_document` from `excerpt mcp` on
/// `index`.
async fn mcp_answers(index: &str) -> Vec<Value> {
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_excerpt")).configure(|c| {
        c.env_remove("EXCERPT_INDEX")
            .env("EXCERPT_QUIET", "true")
            .args(["--index", index, "mcp"]);
    });
    let client =
        ().serve(TokioChildProcess::new(cmd).expect("spawn excerpt mcp"))
            .await
            .expect("MCP handshake");
    let mut out = Vec::new();
    for (tool, args) in [
        ("list_documents", json!({})),
        ("list_documents", json!({"prefix": "sub/"})),
        ("list_documents", json!({"offset": 1, "limit": 1})),
        ("get_document", json!({"id": "sub/café.md"})),
        (
            "get_document",
            json!({"id": "owls.md", "start": 2, "end": 20}),
        ),
    ] {
        let Value::Object(args) = args else {
            unreachable!()
        };
        let r = client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("calling {tool}: {e}"));
        assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
        out.push(r.structured_content.expect("structured content"));
    }
    let _ = client.cancel().await;
    out
}

#[test]
fn mcp_lists_and_reads_documents_on_postgres() {
    // The database is made with the blocking client, outside the MCP client's runtime.
    let Some(url) = excerpt_testkit::postgres::database("mcpdocs") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest_both(tmp.path(), &url);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let on_pg = rt.block_on(mcp_answers(&url));
    assert_eq!(on_pg, rt.block_on(mcp_answers(&index)));
    assert_eq!(on_pg[0]["total"], 3, "{}", on_pg[0]);
    assert_eq!(on_pg[1]["documents"][0]["id"], "sub/café.md");
    assert_eq!(on_pg[2]["next_offset"], 2, "{}", on_pg[2]);
    assert_eq!(on_pg[4]["text"].as_str().unwrap().chars().count(), 18);
}
