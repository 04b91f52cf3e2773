//! The chat-completions client against a real HTTP server on 127.0.0.1 speaking the
//! OpenAI protocol, with scripted failures and a count of concurrent requests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use excerpt_embed::{ChatClient, ChatConfig, EmbedError, RemoteEndpoint};
use serde_json::{json, Value};

use excerpt_testkit::openai::{self, Usage};
use excerpt_testkit::{Fail, FakeServer, Script};

#[derive(Default)]
struct ChatState {
    script: Script,
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// How long each successful answer takes.
    delay_ms: u64,
    /// Answer with `usage`.
    usage: bool,
    bodies: Mutex<Vec<Value>>,
}

/// The answer: the user message upper-cased, prefixed by the system message if any.
fn answer(body: &Value) -> String {
    let user = openai::message(body, "user")
        .unwrap_or_default()
        .to_uppercase();
    match openai::message(body, "system") {
        Some(system) => format!("[{system}] {user}"),
        None => user,
    }
}

async fn completions(State(state): State<Arc<ChatState>>, Json(body): Json<Value>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    state.bodies.lock().unwrap().push(body.clone());
    let response = match state.script.next_failure() {
        Some(failure) => failure,
        None => {
            tokio::time::sleep(Duration::from_millis(state.delay_ms)).await;
            let text = answer(&body);
            // Usage in bytes: the prompt's message contents, the answer.
            let usage = state.usage.then(|| Usage {
                prompt: openai::messages(&body)
                    .iter()
                    .map(|m| m["content"].as_str().unwrap_or("").len() as u64)
                    .sum(),
                completion: text.len() as u64,
            });
            Json(openai::chat_completion(&body["model"], &text, usage)).into_response()
        }
    };
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

fn start(state: ChatState) -> (FakeServer, Arc<ChatState>) {
    let state = Arc::new(state);
    let app = Router::new()
        .route(openai::CHAT_PATH, post(completions))
        .with_state(state.clone());
    (FakeServer::start(app), state)
}

fn config(server: &FakeServer) -> ChatConfig {
    let mut config = ChatConfig::new(server.url(), "test-chat-model");
    config.endpoint.max_retries = 3;
    config.endpoint.initial_backoff = Duration::from_millis(10);
    config.endpoint.timeout = Duration::from_secs(10);
    config
}

#[test]
fn normal_completion_with_usage() {
    let (server, state) = start(ChatState {
        usage: true,
        ..Default::default()
    });
    let mut config = config(&server);
    config.endpoint.url = format!("{}/v1/", server.url());
    config.max_tokens = Some(64);
    let client = ChatClient::new(config).expect("client");
    assert_eq!(
        client.endpoint(),
        format!("{}/v1/chat/completions", server.url())
    );
    let r = client
        .complete(Some("sys"), "hello there")
        .expect("completes");
    assert_eq!(r.text, "[sys] HELLO THERE");
    assert_eq!(r.prompt_tokens, Some(14));
    assert_eq!(r.completion_tokens, Some(17));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    let body = state.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["model"], "test-chat-model");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}])
    );
}

#[test]
fn completion_without_system_or_usage() {
    let (server, state) = start(ChatState::default());
    let client = ChatClient::new(config(&server)).expect("client");
    let r = client.complete(None, "hi").expect("completes");
    assert_eq!(r.text, "HI");
    assert_eq!((r.prompt_tokens, r.completion_tokens), (None, None));
    let body = state.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    assert!(body.get("max_tokens").is_none());
}

#[test]
fn rate_limit_and_server_errors_are_retried() {
    let (server, state) = start(ChatState::default());
    state.script.push([
        Fail::RateLimited {
            retry_after_secs: 0,
        },
        Fail::Status(500),
        Fail::Status(503),
    ]);
    let client = ChatClient::new(config(&server)).expect("client");
    let r = client.complete(None, "x").expect("fourth try succeeds");
    assert_eq!(r.text, "X");
    assert_eq!(state.requests.load(Ordering::SeqCst), 4);
}

#[test]
fn persistent_failure_and_client_errors() {
    let (server, state) = start(ChatState::default());
    state.script.set_always(Fail::Status(502));
    let client = ChatClient::new(config(&server)).expect("client");
    match client.complete(None, "x") {
        Err(
            ref err @ EmbedError::Remote {
                endpoint,
                status,
                ref message,
                ..
            },
        ) => {
            // The message names the chat endpoint, not the embedding one.
            assert_eq!(endpoint, RemoteEndpoint::Chat);
            assert!(err.to_string().starts_with("chat endpoint "), "{err}");
            assert_eq!(status, Some(502));
            assert!(message.contains("after 3 retries"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(state.requests.load(Ordering::SeqCst), 4);

    let (server, state) = start(ChatState::default());
    state.script.set_always(Fail::Status(400));
    let client = ChatClient::new(config(&server)).expect("client");
    let err = client.complete(None, "x").expect_err("bad request");
    assert!(
        matches!(
            err,
            EmbedError::Remote {
                status: Some(400),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(state.requests.load(Ordering::SeqCst), 1);
}

#[test]
fn response_without_choices_is_an_error() {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|| async { Json(json!({"choices": []})) }),
    );
    let server = FakeServer::start(app);
    let client = ChatClient::new(config(&server)).expect("client");
    let err = client.complete(None, "x").expect_err("no choices");
    assert!(err.to_string().contains("no choices"), "{err}");
}

#[test]
fn complete_many_keeps_order_and_bounds_concurrency() {
    let (server, state) = start(ChatState {
        delay_ms: 40,
        usage: true,
        ..Default::default()
    });
    let client = ChatClient::new(config(&server)).expect("client");
    let prompts: Vec<(Option<String>, String)> = (0..20)
        .map(|i| {
            let system = (i % 3 == 0).then(|| format!("s{i}"));
            (system, format!("prompt number {i}"))
        })
        .collect();
    let results = client.complete_many(&prompts, 3);
    assert_eq!(results.len(), prompts.len());
    for (i, (r, (system, user))) in results.iter().zip(&prompts).enumerate() {
        let r = r.as_ref().expect("each succeeds");
        let want = match system {
            Some(s) => format!("[{s}] {}", user.to_uppercase()),
            None => user.to_uppercase(),
        };
        assert_eq!(r.text, want, "result {i} out of order");
    }
    let max = state.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 3, "{max} requests in flight, bound is 3");
    assert!(max >= 2, "requests were not concurrent (max {max})");
    assert_eq!(state.requests.load(Ordering::SeqCst), 20);
}

#[test]
fn complete_many_reports_failures_in_place() {
    let (server, state) = start(ChatState::default());
    // Every request fails with 400 while the script lasts: two failures, taken by
    // whichever requests come first; the rest succeed.
    state.script.push([Fail::Status(400), Fail::Status(400)]);
    let client = ChatClient::new(config(&server)).expect("client");
    let prompts: Vec<(Option<String>, String)> = (0..6).map(|i| (None, format!("p{i}"))).collect();
    let results = client.complete_many(&prompts, 2);
    assert_eq!(results.len(), 6);
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 2);
    for (r, (_, user)) in results.iter().zip(&prompts) {
        if let Ok(r) = r {
            assert_eq!(r.text, user.to_uppercase());
        }
    }
    // Concurrency 0 uses the config's bound; empty input gives empty output.
    assert!(client.complete_many(&[], 0).is_empty());
    assert_eq!(client.complete_many(&prompts[..1], 0).len(), 1);
}

#[test]
fn invalid_config_is_rejected() {
    assert!(ChatClient::new(ChatConfig::new("ftp://x", "m")).is_err());
    assert!(ChatClient::new(ChatConfig::new("http://127.0.0.1:1", "")).is_err());
    assert!(ChatClient::new(ChatConfig {
        temperature: f32::NAN,
        ..ChatConfig::new("http://127.0.0.1:1", "m")
    })
    .is_err());
}
