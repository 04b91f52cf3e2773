//! The `/rerank` client against a real HTTP server on 127.0.0.1 answering in the
//! Cohere/Jina shape or TEI's bare array, with scripted failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use excerpt_embed::{
    EmbedError, HttpReranker, RemoteEndpoint, RerankApi, RerankConfig, Reranker, ScoreMapping,
};
use serde_json::{json, Value};

use excerpt_testkit::openai::authorization;
use excerpt_testkit::{rerank as shapes, Fail, FakeServer, Script};

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// `{"results": [{"index", "relevance_score"}]}` with probabilities, sorted by
    /// decreasing score as Cohere does.
    Cohere,
    /// `[{"index", "score"}]` with raw logits, sorted by decreasing score.
    TeiLogits,
}

struct RerankState {
    shape: Shape,
    script: Script,
    requests: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    auth: Mutex<Vec<Option<String>>>,
}

impl RerankState {
    fn new(shape: Shape) -> Self {
        Self {
            shape,
            script: Script::default(),
            requests: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
            auth: Mutex::new(Vec::new()),
        }
    }
}

/// The fake model's logit for a passage: depends on the text only.
fn logit(text: &str) -> f64 {
    (text.len() as f64 - 12.0) / 2.0
}

fn probability(text: &str) -> f64 {
    (text.len() % 10) as f64 / 10.0
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

async fn rerank(
    State(state): State<Arc<RerankState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    state.auth.lock().unwrap().push(authorization(&headers));
    state.bodies.lock().unwrap().push(body.clone());
    if let Some(failure) = state.script.next_failure() {
        return failure;
    }
    let docs = shapes::documents(&body);
    // Real servers sort by relevance (the shared bodies do): the client must reorder by
    // index.
    match state.shape {
        Shape::Cohere => {
            let scores: Vec<f64> = docs.iter().map(|d| probability(d)).collect();
            Json(shapes::cohere(&scores)).into_response()
        }
        Shape::TeiLogits => {
            let scores: Vec<f64> = docs.iter().map(|d| logit(d)).collect();
            Json(shapes::tei(&scores)).into_response()
        }
    }
}

fn start(shape: Shape) -> (FakeServer, Arc<RerankState>) {
    let state = Arc::new(RerankState::new(shape));
    let app = Router::new()
        .route("/rerank", post(rerank))
        .route("/v2/rerank", post(rerank))
        .with_state(state.clone());
    (FakeServer::start(app), state)
}

fn config(server: &FakeServer) -> RerankConfig {
    let mut config = RerankConfig::new(server.url(), "test-rerank-model");
    config.endpoint.max_retries = 3;
    config.endpoint.initial_backoff = Duration::from_millis(10);
    config.endpoint.timeout = Duration::from_secs(10);
    config
}

fn passages() -> Vec<String> {
    [
        "a",
        "short one",
        "a somewhat longer passage",
        "mid length text",
        "the longest passage of them all, by far",
        "xyz",
        "seventeen chars!!",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn cohere_shape_is_reordered_by_index_and_batched() {
    let (server, state) = start(Shape::Cohere);
    let mut config = config(&server);
    config.endpoint.url = format!("{}/v2", server.url());
    config.batch_size = 3;
    let reranker = HttpReranker::new(config).expect("client");
    assert_eq!(reranker.endpoint(), format!("{}/v2/rerank", server.url()));
    assert_eq!(reranker.model_id(), "test-rerank-model");
    let passages = passages();
    let scores = reranker.rerank("what?", &refs(&passages)).expect("scores");
    assert_eq!(scores.len(), passages.len());
    for (p, s) in passages.iter().zip(&scores) {
        assert!((f64::from(*s) - probability(p)).abs() < 1e-6, "{p:?}: {s}");
    }
    // 7 passages in batches of 3.
    assert_eq!(state.requests.load(Ordering::SeqCst), 3);
    let bodies = state.bodies.lock().unwrap().clone();
    assert_eq!(bodies[0]["model"], "test-rerank-model");
    assert_eq!(bodies[0]["query"], "what?");
    assert_eq!(
        bodies[0]["documents"],
        json!(["a", "short one", "a somewhat longer passage"])
    );
    assert_eq!(bodies[0]["top_n"], 3);
    assert_eq!(bodies[0]["return_documents"], false);
    assert_eq!(bodies[2]["documents"].as_array().map(Vec::len), Some(1));
    // No passages: no request.
    assert!(reranker.rerank("q", &[]).expect("empty").is_empty());
    assert_eq!(state.requests.load(Ordering::SeqCst), 3);
}

#[test]
fn tei_shape_logits_go_through_sigmoid() {
    let (server, state) = start(Shape::TeiLogits);
    let mut config = config(&server);
    config.api = RerankApi::Tei;
    config.endpoint.model = String::new();
    let reranker = HttpReranker::new(config).expect("client");
    // No model: the endpoint is the id.
    assert_eq!(reranker.model_id(), reranker.endpoint());
    let passages = passages();
    let scores = reranker.rerank("q", &refs(&passages)).expect("scores");
    for (p, s) in passages.iter().zip(&scores) {
        assert!((0.0..=1.0).contains(s));
        assert!(
            (f64::from(*s) - sigmoid(logit(p))).abs() < 1e-6,
            "{p:?}: {s}"
        );
    }
    // Order of relevance is preserved by the monotone mapping.
    let longest = passages
        .iter()
        .position(|p| p.starts_with("the longest"))
        .unwrap();
    assert!(scores.iter().all(|&s| s <= scores[longest]));
    let body = state.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["texts"].as_array().map(Vec::len), Some(passages.len()));
    assert_eq!(body["raw_scores"], false);
    assert!(body.get("documents").is_none() && body.get("model").is_none());
}

#[test]
fn probabilities_are_kept_unless_sigmoid_is_forced() {
    // Scores already in [0, 1] are kept as is.
    let (server, _state) = start(Shape::Cohere);
    let reranker = HttpReranker::new(config(&server)).expect("client");
    let scores = reranker.rerank("q", &["abc", "abcdefgh"]).expect("scores");
    assert!((scores[0] - 0.3).abs() < 1e-6 && (scores[1] - 0.8).abs() < 1e-6);
    // Forced sigmoid applies even to values in [0, 1].
    let forced = HttpReranker::new(RerankConfig {
        score_mapping: ScoreMapping::Sigmoid,
        ..config(&server)
    })
    .expect("client");
    let scores = forced.rerank("q", &["abc"]).expect("scores");
    assert!((f64::from(scores[0]) - sigmoid(0.3)).abs() < 1e-6);
}

#[test]
fn rate_limited_then_success_honours_retry_after() {
    let (server, state) = start(Shape::Cohere);
    state.script.push([Fail::RateLimited {
        retry_after_secs: 1,
    }]);
    let reranker = HttpReranker::new(config(&server)).expect("client");
    let start = Instant::now();
    let scores = reranker
        .rerank("q", &["abc"])
        .expect("succeeds after retry");
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After ignored"
    );
    assert_eq!(scores.len(), 1);
    assert_eq!(state.requests.load(Ordering::SeqCst), 2);
}

#[test]
fn service_unavailable_then_success() {
    let (server, state) = start(Shape::TeiLogits);
    state.script.push([Fail::Status(503), Fail::Status(502)]);
    let reranker = HttpReranker::new(RerankConfig {
        api: RerankApi::Tei,
        ..config(&server)
    })
    .expect("client");
    let scores = reranker.rerank("q", &["abc", "def"]).expect("third try");
    assert_eq!(scores.len(), 2);
    assert_eq!(state.requests.load(Ordering::SeqCst), 3);
}

#[test]
fn persistent_server_error_reports_status_after_retries() {
    let (server, state) = start(Shape::Cohere);
    state.script.set_always(Fail::Status(500));
    let reranker = HttpReranker::new(config(&server)).expect("client");
    match reranker.rerank("q", &["abc"]) {
        Err(
            ref err @ EmbedError::Remote {
                endpoint,
                status,
                ref message,
                ref url,
            },
        ) => {
            // The message names the rerank endpoint, not the embedding one.
            assert_eq!(endpoint, RemoteEndpoint::Rerank);
            assert!(
                err.to_string()
                    .starts_with(&format!("rerank endpoint {url} failed: ")),
                "{err}"
            );
            assert_eq!(status, Some(500));
            assert!(url.ends_with("/rerank"));
            assert!(message.contains("scripted 500"), "{message}");
            assert!(message.contains("after 3 retries"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(state.requests.load(Ordering::SeqCst), 4);
}

#[test]
fn unauthorized_is_not_retried_and_key_is_sent() {
    const VAR: &str = "EXCERPT_RERANK_TEST_KEY_51D2";
    std::env::set_var(VAR, "rk-secret");
    let (server, state) = start(Shape::Cohere);
    state.script.set_always(Fail::Status(401));
    let mut config = config(&server);
    config.endpoint.api_key_env = Some(VAR.into());
    let reranker = HttpReranker::new(config).expect("client");
    let err = reranker.rerank("q", &["abc"]).expect_err("fails");
    assert!(
        matches!(
            err,
            EmbedError::Remote {
                status: Some(401),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(state.requests.load(Ordering::SeqCst), 1);
    assert_eq!(
        *state.auth.lock().unwrap(),
        vec![Some("Bearer rk-secret".to_string())]
    );
    assert!(!format!("{reranker:?}").contains("rk-secret"));
}

#[test]
fn malformed_results_are_rejected() {
    // A server returning fewer results than documents (e.g. honouring a small top_n).
    let app = Router::new().route(
        "/rerank",
        post(|| async { Json(json!({"results": [{"index": 0, "relevance_score": 0.5}]})) }),
    );
    let server = FakeServer::start(app);
    let reranker = HttpReranker::new(config(&server)).expect("client");
    let err = reranker
        .rerank("q", &["a", "b"])
        .expect_err("missing index");
    assert!(err.to_string().contains("expected 2 scores"), "{err}");

    let app = Router::new().route(
        "/rerank",
        post(|| async { Json(json!([{"index": 0, "score": 0.5}, {"index": 0, "score": 0.1}])) }),
    );
    let server = FakeServer::start(app);
    let reranker = HttpReranker::new(config(&server)).expect("client");
    let err = reranker
        .rerank("q", &["a", "b"])
        .expect_err("duplicate index");
    assert!(err.to_string().contains("duplicate"), "{err}");
}

#[test]
fn invalid_config_is_rejected() {
    assert!(HttpReranker::new(RerankConfig::new("ftp://x", "m")).is_err());
    // Cohere-style requests need a model; TEI does not.
    assert!(HttpReranker::new(RerankConfig::new("http://127.0.0.1:1", " ")).is_err());
    assert!(HttpReranker::new(RerankConfig {
        api: RerankApi::Tei,
        ..RerankConfig::new("http://127.0.0.1:1", "")
    })
    .is_ok());
}
