//! `excerpt mcp` end to end: the real binary on a real on-disk index, driven by the
//! official Rust MCP client (rmcp) over the child process's stdin and stdout.

mod common;

use std::path::Path;

use excerpt_testkit::mcp::{call, error_text, ok, Client};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// Builds an index of two Markdown files with the real binary.
fn build_index(dir: &Path) -> std::path::PathBuf {
    common::ingest_docs(
        dir,
        &[
        ("install.md", b"# Install\n\nRun the setup script to fetch the embedding model.\n\n## Offline\n\nEverything works without network access once the model is cached.\n"),
        ("kettle.md", b"# Kettle\n\nThe brass kettle whistles at exactly ninety-eight degrees.\n"),
        ],
    )
}

/// Starts `excerpt --index INDEX mcp EXTRA...` and connects the rmcp client to it.
async fn connect(index: &Path, extra: &[&str]) -> Client {
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_excerpt")).configure(|c| {
        c.env_remove("EXCERPT_INDEX")
            .env("EXCERPT_QUIET", "true")
            .arg("--index")
            .arg(index)
            .arg("mcp")
            .args(extra);
    });
    let transport = TokioChildProcess::new(cmd).expect("spawn excerpt mcp");
    ().serve(transport).await.expect("MCP handshake")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_searches_reads_and_lists_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let client = connect(&index, &[]).await;

    // Read-only by default: three tools, each with a description and an input schema
    // naming its arguments.
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["get_document", "list_documents", "search"]);
    let search_tool = tools.iter().find(|t| t.name == "search").unwrap();
    assert!(search_tool
        .description
        .as_deref()
        .is_some_and(|d| d.contains("doc_id")));
    let schema = serde_json::to_value(&*search_tool.input_schema).unwrap();
    for arg in ["query", "budget", "strategy", "prefixes", "where"] {
        assert!(schema["properties"].get(arg).is_some(), "{arg}: {schema}");
    }
    assert_eq!(schema["required"], json!(["query"]));
    assert!(search_tool.output_schema.is_some());

    // search: pieces with exact offsets into the documents, and the rendered context.
    let found = call(
        &client,
        "search",
        json!({"query": "what temperature does the kettle whistle at?", "budget": 300}),
    )
    .await;
    let found = ok(&found);
    let pieces = found["pieces"].as_array().expect("pieces");
    assert!(!pieces.is_empty(), "{found}");
    let first = &pieces[0];
    assert_eq!(first["n"], 1);
    assert_eq!(first["doc_id"], "kettle.md");
    assert!(first["text"]
        .as_str()
        .unwrap()
        .contains("ninety-eight degrees"));
    assert!(found["context"]
        .as_str()
        .unwrap()
        .contains("ninety-eight degrees"));

    // get_document: the piece's range is exactly the piece's text.
    let (start, end) = (
        first["start"].as_u64().unwrap(),
        first["end"].as_u64().unwrap(),
    );
    let doc = call(
        &client,
        "get_document",
        json!({"id": "kettle.md", "start": start, "end": end}),
    )
    .await;
    let doc = ok(&doc);
    assert_eq!(doc["text"], first["text"]);
    assert_eq!(doc["title"], "Kettle");
    let whole = call(&client, "get_document", json!({"id": "install.md"})).await;
    let whole = ok(&whole);
    assert!(whole["text"].as_str().unwrap().starts_with("# Install"));
    assert_eq!(
        whole["chars"].as_u64(),
        Some(whole["text"].as_str().unwrap().chars().count() as u64)
    );
    let paths: Vec<&str> = whole["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["Install", "Install > Offline"]);

    // Errors are tool errors the model can read, and the server keeps serving.
    let missing = call(&client, "get_document", json!({"id": "nope.md"})).await;
    assert!(error_text(&missing).contains("nope.md"));
    let bad_range = call(
        &client,
        "get_document",
        json!({"id": "kettle.md", "start": 5, "end": 100000}),
    )
    .await;
    assert!(error_text(&bad_range).contains("characters"));
    let bad_strategy = call(&client, "search", json!({"query": "x", "strategy": "nope"})).await;
    assert!(error_text(&bad_strategy).contains("nope"));

    // list_documents: prefix and paging.
    let page = call(&client, "list_documents", json!({"limit": 1})).await;
    let page = ok(&page);
    assert_eq!(page["total"], 2);
    assert_eq!(page["documents"][0]["id"], "install.md");
    assert_eq!(page["next_offset"], 1);
    let next = call(&client, "list_documents", json!({"offset": 1, "limit": 1})).await;
    let next = ok(&next);
    assert_eq!(next["documents"][0]["id"], "kettle.md");
    assert!(next.get("next_offset").is_none(), "{next}");
    let none = call(&client, "list_documents", json!({"prefix": "zzz"})).await;
    assert_eq!(ok(&none)["total"], 0);

    // No ingest without --allow-writes: not listed, and a call is refused.
    let refused = client
        .call_tool(
            CallToolRequestParams::new("ingest").with_arguments(
                json!({"id": "x.md", "text": "hello"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    match refused {
        Err(_) => {}
        Ok(r) => assert!(error_text(&r).contains("ingest"), "{r:?}"),
    }
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_writes_an_mcp_client_ingests_and_finds_the_document() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build_index(tmp.path());
    let client = connect(&index, &["--allow-writes"]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "ingest"));

    let added = call(
        &client,
        "ingest",
        json!({
            "id": "notes/heron.md",
            "format": "markdown",
            "text": "# Herons\n\nThe grey heron nests in tall alder trees by the river.\n"
        }),
    )
    .await;
    let added = ok(&added);
    assert_eq!(added["status"], "added");
    assert_eq!(added["documents"], 3);

    let found = call(
        &client,
        "search",
        json!({"query": "where does the heron nest?", "prefixes": ["notes/"]}),
    )
    .await;
    let found = ok(&found);
    assert_eq!(found["pieces"][0]["doc_id"], "notes/heron.md");
    assert_eq!(found["pieces"][0]["section"], "Herons");

    let bad = call(&client, "ingest", json!({"id": "", "text": "x"})).await;
    assert!(!error_text(&bad).is_empty());
    client.cancel().await.expect("close");
}

/// Issue 27, row 11: on stdio a line over 16 MiB got no answer and no log (the client
/// waited forever), and a line that is not JSON got no answer. Now each gets a JSON-RPC
/// error with a null id, a line on stderr, and the server goes on reading.
#[test]
fn oversized_and_garbage_lines_get_json_rpc_errors_and_the_server_goes_on() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_excerpt"))
        .env_remove("EXCERPT_INDEX")
        .env("EXCERPT_QUIET", "true")
        .arg("--index")
        .arg(tmp.path().join("idx"))
        .args(["mcp", "--no-warmup"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn excerpt mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // A closed stdout (the server died) fails the read below rather than hanging.
    let mut answer = || {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).expect("read an answer");
        assert!(n > 0, "the server closed stdout");
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };

    stdin.write_all(b"this is not JSON\n").unwrap();
    stdin.flush().unwrap();
    let v = answer();
    assert_eq!(v["id"], Value::Null, "{v}");
    assert_eq!(v["error"]["code"], -32700, "{v}");

    // 17 MiB on one line, written in pieces.
    let piece = vec![b'x'; 1024 * 1024];
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"pad\":\"")
        .unwrap();
    for _ in 0..17 {
        stdin.write_all(&piece).unwrap();
    }
    stdin.write_all(b"\"}}\n").unwrap();
    stdin.flush().unwrap();
    let v = answer();
    assert_eq!(v["id"], Value::Null, "{v}");
    let code = v["error"]["code"].as_i64().unwrap();
    assert!(code == -32600 || code == -32700, "{v}");

    // The server still reads: a handshake works.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "edge-test", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    stdin.flush().unwrap();
    let v = answer();
    assert_eq!(v["id"], 1, "{v}");
    assert!(v["result"]["serverInfo"].is_object(), "{v}");

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let log = errors.join().unwrap();
    assert!(
        log.contains("longer than"),
        "the oversized line is logged: {log}"
    );
    assert!(
        log.contains("not JSON"),
        "the garbage line is logged: {log}"
    );
}
