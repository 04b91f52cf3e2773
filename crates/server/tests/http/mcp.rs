//! MCP over streamable HTTP at `/mcp`: rmcp's own client against a real server on
//! 127.0.0.1, with and without the server's token.

use excerpt_testkit::mcp::{call, error_text, ok, tool_names, Client};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use super::{agent, ingest_body, post, start, start_with, ServerOptions, TestServer};

async fn connect(s: &TestServer, token: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.base));
    if let Some(t) = token {
        config = config.auth_header(t);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("MCP handshake over HTTP")
}

/// Runs `f` on a runtime of its own (the test server has its own on another thread).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn an_mcp_client_over_http_searches_and_ingests() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("index"));
    let (st, v) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{v}");
    block_on(async {
        let client = connect(&s, None).await;
        // No token on a loopback server: anyone who may POST /v1/ingest may ingest.
        assert_eq!(
            tool_names(&client).await,
            ["get_document", "ingest", "list_documents", "search"]
        );
        let found = call(
            &client,
            "search",
            json!({"query": "how do I restart the database cluster?", "budget": 300}),
        )
        .await;
        let found = ok(&found);
        assert_eq!(found["pieces"][0]["doc_id"], "infra/runbook", "{found}");

        let added = call(
            &client,
            "ingest",
            json!({"id": "notes/kettle.md", "text": "# Kettle\n\nThe brass kettle whistles at ninety-eight degrees.\n", "format": "markdown"}),
        )
        .await;
        assert_eq!(ok(&added)["status"], "added");
        let doc = call(&client, "get_document", json!({"id": "notes/kettle.md"})).await;
        assert_eq!(ok(&doc)["title"], "Kettle");
        client.cancel().await.unwrap();
    });
    // The document ingested over MCP is in the index the HTTP API reads.
    let (st, v) = super::get(&s, "/v1/documents/notes/kettle.md?text=false");
    assert_eq!(st, 200, "{v}");
}

#[test]
fn with_a_token_only_requests_that_carry_it_may_ingest() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let options = |public_reads| ServerOptions {
        log_requests: false,
        token: Some("s3cret".into()),
        public_reads,
        ..ServerOptions::default()
    };
    let s = start_with(&index, options(true));
    block_on(async {
        // Public reads: the client without the token reads, but is offered no ingest,
        // and calling it anyway is refused with what to do.
        let reader = connect(&s, None).await;
        assert_eq!(
            tool_names(&reader).await,
            ["get_document", "list_documents", "search"]
        );
        let refused = call(&reader, "ingest", json!({"id": "a.txt", "text": "Alpha."})).await;
        assert!(error_text(&refused).contains("Authorization: Bearer"));
        reader.cancel().await.unwrap();

        let writer = connect(&s, Some("s3cret")).await;
        assert!(tool_names(&writer).await.contains(&"ingest".to_string()));
        let added = call(
            &writer,
            "ingest",
            json!({"id": "a.txt", "text": "Alpha beta."}),
        )
        .await;
        assert_eq!(ok(&added)["status"], "added");
        writer.cancel().await.unwrap();
    });
    drop(s);

    // Without public reads, no MCP request passes without the token.
    let s = start_with(&index, options(false));
    let r = agent()
        .post(format!("{}/mcp", s.base))
        .header("Accept", "application/json, text/event-stream")
        .send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .unwrap();
    assert_eq!(r.status(), 401);
    block_on(async {
        let client = connect(&s, Some("s3cret")).await;
        assert!(tool_names(&client).await.contains(&"search".to_string()));
        client.cancel().await.unwrap();
    });
}

#[test]
fn the_read_token_reads_over_mcp_without_ingest() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start_with(
        &tmp.path().join("index"),
        ServerOptions {
            log_requests: false,
            token: Some("w-s3cret".into()),
            read_token: Some("r-s3cret".into()),
            ..ServerOptions::default()
        },
    );
    block_on(async {
        let writer = connect(&s, Some("w-s3cret")).await;
        assert!(tool_names(&writer).await.contains(&"ingest".to_string()));
        let added = call(
            &writer,
            "ingest",
            json!({"id": "a.txt", "text": "Alpha beta gamma."}),
        )
        .await;
        assert_eq!(ok(&added)["status"], "added");
        writer.cancel().await.unwrap();

        let reader = connect(&s, Some("r-s3cret")).await;
        assert_eq!(
            tool_names(&reader).await,
            ["get_document", "list_documents", "search"]
        );
        let refused = call(&reader, "ingest", json!({"id": "b.txt", "text": "Delta."})).await;
        assert!(error_text(&refused).contains("Authorization: Bearer"));
        let found = call(&reader, "get_document", json!({"id": "a.txt"})).await;
        assert!(ok(&found).to_string().contains("Alpha"), "{found:?}");
        reader.cancel().await.unwrap();
    });
}

/// Posts `body` to `/mcp` as JSON; the status and the JSON answer.
fn post_mcp(s: &TestServer, body: &str) -> (u16, Value) {
    let mut r = agent()
        .post(format!("{}/mcp", s.base))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .send(body)
        .expect("the server answers");
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

/// Issue 27, row 11: `/mcp` answered malformed JSON with 415 (as if the content type
/// were wrong). Now a JSON-RPC error with a null id: -32700 for what is not JSON,
/// -32600 for JSON that is no JSON-RPC message; a good message still works after.
#[test]
fn malformed_mcp_messages_get_json_rpc_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("idx"));
    for (body, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"", -32700),
        ("not json at all", -32700),
        ("{\"hello\": \"world\"}", -32600),
    ] {
        let (status, v) = post_mcp(&s, body);
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
    }
    block_on(async {
        let client = connect(&s, None).await;
        assert!(tool_names(&client).await.contains(&"search".to_string()));
        client.cancel().await.unwrap();
    });
}
