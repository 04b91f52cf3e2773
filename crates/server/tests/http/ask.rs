//! `POST /v1/ask` against a fake OpenAI-compatible chat server on 127.0.0.1: one JSON
//! answer, a stream of server-sent events, and the route without an endpoint.

use excerpt::ChatConfig;
use excerpt_server::ServerOptions;
use excerpt_testkit::axum::response::{IntoResponse, Response};
use excerpt_testkit::axum::routing::post as route_post;
use excerpt_testkit::axum::{Json, Router};
use excerpt_testkit::openai;
use excerpt_testkit::FakeServer;
use serde_json::{json, Value};

use super::{assert_error, ingest_body, post, start_with, TestServer};

/// A chat model that cites the first piece, quoting the runbook.
async fn complete(Json(body): Json<Value>) -> Response {
    let deltas = [
        "Drain the primary ",
        "first, \"then restart each replica\" [1].",
    ];
    if body["stream"] == true {
        openai::event_stream(openai::chat_stream_events(&body["model"], &deltas, None))
    } else {
        Json(openai::chat_completion(
            &body["model"],
            &deltas.concat(),
            None,
        ))
        .into_response()
    }
}

fn server_with_llm(index: &std::path::Path, chat: &FakeServer) -> TestServer {
    let server = start_with(
        index,
        ServerOptions {
            log_requests: false,
            ask: Some(ChatConfig::new(chat.url(), "fake-model")),
            ..ServerOptions::default()
        },
    );
    let (status, _) = post(&server, "/v1/ingest", &ingest_body());
    assert_eq!(status, 200);
    server
}

#[test]
fn ask_answers_json_and_server_sent_events() {
    let tmp = tempfile::tempdir().unwrap();
    let chat = FakeServer::start(Router::new().route(openai::CHAT_PATH, route_post(complete)));
    let server = server_with_llm(tmp.path(), &chat);
    let question = json!({"query": "how do I restart the database cluster?", "budget": 300,
                          "filter": {"prefixes": ["infra/"]}});

    // JSON: the answer, its citation checked against the pieces.
    let (status, v) = post(&server, "/v1/ask", &question);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["model"], "fake-model");
    assert_eq!(v["unsupported"], json!([]));
    assert_eq!(v["citations"][0]["n"], 1);
    assert_eq!(v["citations"][0]["doc_id"], v["pieces"][0]["doc_id"]);
    let first = v["pieces"][0]["text"].as_str().unwrap();
    assert!(first.contains("then restart each replica"), "{first}");
    assert_eq!(
        v["citations"][0]["quotes"][0]["text"],
        "then restart each replica"
    );
    // Stage times of the context only when asked for.
    assert!(v.get("timings").is_none(), "{v}");
    let mut timed = question.clone();
    timed["timings"] = json!(true);
    let (status, t) = post(&server, "/v1/ask", &timed);
    assert_eq!(status, 200, "{t}");
    assert!(t["timings"]["embed_ms"].as_f64().unwrap() > 0.0, "{t}");

    // Streamed: delta events as the model writes, then the whole answer.
    let mut streamed = question.clone();
    streamed["stream"] = json!(true);
    let mut r = ureq::post(format!("{}/v1/ask", server.base))
        .send_json(&streamed)
        .expect("the server answers");
    assert_eq!(r.status().as_u16(), 200);
    let kind = r.headers().get("content-type").unwrap().to_str().unwrap();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let body = r.body_mut().read_to_string().unwrap();
    let events: Vec<(String, Value)> = body
        .split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((name.to_string(), serde_json::from_str(data).unwrap()))
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["delta", "delta", "answer"], "{body}");
    assert_eq!(events[0].1["text"], "Drain the primary ");
    let answer = &events[2].1;
    assert_eq!(
        answer["answer"],
        "Drain the primary first, \"then restart each replica\" [1]."
    );
    assert_eq!(answer["unsupported"], json!([]));

    // A bad body is a 400 before any stream.
    assert_error(
        post(&server, "/v1/ask", &json!({"query": "x", "stream": "yes"})),
        400,
        "stream",
    );
}

#[test]
fn ask_without_an_endpoint_is_not_implemented() {
    let tmp = tempfile::tempdir().unwrap();
    let server = super::start(tmp.path());
    assert_error(
        post(&server, "/v1/ask", &json!({"query": "anything"})),
        501,
        "chat endpoint",
    );
}

/// Opens the gate when dropped.
struct Release(std::sync::Arc<tokio::sync::Semaphore>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.add_permits(16);
    }
}

#[test]
fn a_streamed_answer_holds_its_slot_until_the_answer_is_written() {
    // The chat model answers only when the test lets it.
    let (reached_tx, reached_rx) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let (reached_tx, g) = (
        std::sync::Arc::new(std::sync::Mutex::new(reached_tx)),
        gate.clone(),
    );
    let chat = FakeServer::start(Router::new().route(
        "/v1/chat/completions",
        route_post(move |body: Json<Value>| {
            let _ = reached_tx.lock().unwrap().send(());
            let g = g.clone();
            async move {
                let _ = g.acquire().await.unwrap();
                complete(body).await
            }
        }),
    ));
    let tmp = tempfile::tempdir().unwrap();
    let server = start_with(
        tmp.path(),
        ServerOptions {
            log_requests: false,
            max_concurrent: 1,
            ask: Some(ChatConfig::new(chat.url(), "fake-model")),
            ..ServerOptions::default()
        },
    );
    let (status, _) = post(&server, "/v1/ingest", &ingest_body());
    assert_eq!(status, 200);
    // Should an assertion fail, the model is let go first, so nothing waits on it.
    let _release = Release(gate.clone());

    let url = format!("{}/v1/ask", server.base);
    let reader = std::thread::spawn(move || {
        let mut r = ureq::post(url)
            .send_json(json!({"query": "how do I restart the database cluster?", "stream": true}))
            .expect("the server answers");
        r.body_mut().read_to_string().unwrap()
    });
    reached_rx.recv().expect("the question reaches the model");
    // The head of the stream is sent, the answer is being written: the one slot is taken.
    assert_error(super::get(&server, "/v1/stats"), 503, "already answering 1");
    gate.add_permits(1);
    let body = reader.join().unwrap();
    assert!(body.contains("event: answer"), "{body}");
    // The answer is written: the slot is free again.
    let (status, v) = super::get(&server, "/v1/stats");
    assert_eq!(status, 200, "{v}");
}

/// A chat server whose model streams forever, a delta every 50 ms, counted by `watch`.
fn endless_chat(watch: &openai::StreamWatch) -> FakeServer {
    let watch = watch.clone();
    FakeServer::start(Router::new().route(
        openai::CHAT_PATH,
        route_post(move |Json(body): Json<Value>| {
            let watch = watch.clone();
            async move {
                openai::endless_chat_stream(
                    &body["model"],
                    "and so on ",
                    std::time::Duration::from_millis(50),
                    &watch,
                )
            }
        }),
    ))
}

/// Waits up to `secs` seconds for `done`; whether it came.
fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

fn endless_server(index: &std::path::Path, chat: &FakeServer, timeout: u64) -> TestServer {
    let mut llm = ChatConfig::new(chat.url(), "fake-model");
    // The model's own timeout is far away: what ends the stream is the server.
    llm.endpoint.timeout = std::time::Duration::from_secs(600);
    let server = start_with(
        index,
        ServerOptions {
            log_requests: false,
            max_concurrent: 1,
            request_timeout: std::time::Duration::from_secs(timeout),
            ask: Some(llm),
            ..ServerOptions::default()
        },
    );
    let (status, _) = post(&server, "/v1/ingest", &ingest_body());
    assert_eq!(status, 200);
    server
}

/// Issue 27, row 6: a streamed answer ignored `--request-timeout` and read the model
/// for as long as it wrote. Now it ends at the timeout with an `error` event, closes
/// the model's stream and frees its slot.
#[test]
fn a_streamed_answer_ends_at_the_request_timeout() {
    let watch = openai::StreamWatch::default();
    let chat = endless_chat(&watch);
    let tmp = tempfile::tempdir().unwrap();
    let server = endless_server(tmp.path(), &chat, 2);
    // A client that waits at most 60 s for the whole stream (which on its own never ends).
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into();
    let mut r = agent
        .post(format!("{}/v1/ask", server.base))
        .send_json(json!({"query": "how do I restart the database cluster?", "stream": true}))
        .expect("the server answers");
    assert_eq!(r.status().as_u16(), 200);
    let body = r
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .expect("the stream ends within the request timeout");
    assert!(body.contains("event: delta"), "the model was read: {body}");
    let last = body.trim_end().rsplit("\n\n").next().unwrap_or("");
    assert!(last.starts_with("event: error"), "{last}");
    assert!(last.contains("\"timeout\""), "{last}");
    assert!(
        eventually(10, || watch.closed() == 1),
        "the model's stream is closed (started {}, closed {})",
        watch.started(),
        watch.closed()
    );
    assert!(
        eventually(10, || super::get(&server, "/v1/stats").0 == 200),
        "the slot is free again"
    );
}

/// Issue 27, row 6: when the client of a streamed answer went away, the server kept
/// reading the model (spending its tokens) and kept its slot until `--llm-timeout`.
/// Now the model's connection is closed within moments and the slot is free.
#[test]
fn a_client_that_goes_away_stops_the_model() {
    use std::io::{Read, Write};
    let watch = openai::StreamWatch::default();
    let chat = endless_chat(&watch);
    let tmp = tempfile::tempdir().unwrap();
    let server = endless_server(tmp.path(), &chat, 3600);
    let addr = server.base.trim_start_matches("http://").to_string();
    let body =
        json!({"query": "how do I restart the database cluster?", "stream": true}).to_string();
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        c,
        "POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Read until the first delta arrives: the model is streaming to the server.
    c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: delta") {
        let n = c.read(&mut buf).expect("the stream begins");
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert_eq!(watch.started(), 1);
    assert_eq!(watch.closed(), 0, "the model is still writing");
    drop(c);
    assert!(
        eventually(10, || watch.closed() == 1),
        "the server closes the model's stream when its client goes away"
    );
    assert!(
        eventually(10, || super::get(&server, "/v1/stats").0 == 200),
        "the slot is free again"
    );
}
