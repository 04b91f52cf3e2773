//! The remote client against a real HTTP server on 127.0.0.1 speaking the
//! OpenAI embeddings protocol, with scripted failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use excerpt_embed::{EmbedError, Embedder, RemoteConfig, RemoteEmbedder, RemoteEndpoint};
use excerpt_testkit::{openai, Fail, FakeServer, Script};
use serde::Deserialize;

const DIM: usize = 8;

#[derive(Default)]
struct ServerState {
    /// Failures answered instead of embeddings.
    script: Script,
    /// Return `data` in reverse order (with correct `index`).
    reverse: bool,
    requests: AtomicUsize,
    auth: Mutex<Vec<Option<String>>>,
    models: Mutex<Vec<String>>,
    batch_sizes: Mutex<Vec<usize>>,
}

#[derive(Deserialize)]
struct EmbedRequest {
    model: String,
    input: Vec<String>,
}

/// A deterministic, deliberately unnormalised vector for `text`.
fn fake_vector(text: &str) -> Vec<f32> {
    let h = blake3::hash(text.as_bytes());
    h.as_bytes()[..DIM]
        .iter()
        .map(|&b| (b as f32 - 127.5) * 3.0)
        .collect()
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

async fn embeddings(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Json(req): Json<EmbedRequest>,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    state
        .auth
        .lock()
        .unwrap()
        .push(openai::authorization(&headers));
    state.models.lock().unwrap().push(req.model.clone());
    if let Some(failure) = state.script.next_failure() {
        return failure;
    }
    state.batch_sizes.lock().unwrap().push(req.input.len());
    let vectors = req.input.iter().map(|t| fake_vector(t)).collect();
    Json(openai::embeddings(&req.model, vectors, state.reverse)).into_response()
}

struct TestServer {
    server: FakeServer,
    state: Arc<ServerState>,
}

impl TestServer {
    fn start(state: ServerState) -> Self {
        let state = Arc::new(state);
        let app = Router::new()
            .route(openai::EMBEDDINGS_PATH, post(embeddings))
            .with_state(state.clone());
        Self {
            server: FakeServer::start(app),
            state,
        }
    }

    fn url(&self) -> String {
        self.server.url()
    }

    fn config(&self) -> RemoteConfig {
        let mut config = RemoteConfig::new(self.url(), "test-embed-model");
        config.endpoint.max_retries = 3;
        config.endpoint.initial_backoff = Duration::from_millis(10);
        config.endpoint.timeout = Duration::from_secs(10);
        config
    }

    fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("passage number {i}")).collect()
}

fn check_vectors(texts: &[String], got: &[Vec<f32>]) {
    assert_eq!(got.len(), texts.len());
    for (t, v) in texts.iter().zip(got) {
        let want = normalized(fake_vector(t));
        assert_eq!(v.len(), DIM);
        for (a, b) in v.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "vector of {t:?} differs");
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}

#[test]
fn normal_path_batches_and_normalises() {
    let server = TestServer::start(ServerState::default());
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    assert_eq!(
        embedder.endpoint(),
        format!("{}/v1/embeddings", server.url())
    );
    assert_eq!(embedder.model_id(), "test-embed-model");
    let texts = texts(150);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = embedder.embed(&refs).expect("embeds");
    check_vectors(&texts, &got);
    assert_eq!(*server.state.batch_sizes.lock().unwrap(), vec![64, 64, 22]);
    assert!(server
        .state
        .models
        .lock()
        .unwrap()
        .iter()
        .all(|m| m == "test-embed-model"));
    // Dimension learned from the responses; no extra request for it.
    let before = server.requests();
    assert_eq!(embedder.dimension(), DIM);
    assert_eq!(server.requests(), before);
    // Query embedding and empty input.
    let q = embedder.embed_query("passage number 3").expect("query");
    check_vectors(&texts[3..4], &[q]);
    assert!(embedder.embed(&[]).expect("empty").is_empty());
}

#[test]
fn base_url_with_v1_and_dimension_probe() {
    let server = TestServer::start(ServerState::default());
    let mut config = server.config();
    config.endpoint.url = format!("{}/v1/", server.url());
    config.batch_size = 5;
    let embedder = RemoteEmbedder::new(config).expect("client");
    assert_eq!(
        embedder.endpoint(),
        format!("{}/v1/embeddings", server.url())
    );
    // Unknown dimension: probed with one request.
    assert_eq!(embedder.dimension(), DIM);
    assert_eq!(server.requests(), 1);
    let texts = texts(12);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    check_vectors(&texts, &embedder.embed(&refs).expect("embeds"));
    assert_eq!(server.requests(), 4);
}

#[test]
fn reordered_index_is_put_back_in_order() {
    let server = TestServer::start(ServerState {
        reverse: true,
        ..Default::default()
    });
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    let texts = texts(10);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    check_vectors(&texts, &embedder.embed(&refs).expect("embeds"));
}

#[test]
fn rate_limit_then_success_honours_retry_after() {
    let server = TestServer::start(ServerState::default());
    server.state.script.push([Fail::RateLimited {
        retry_after_secs: 1,
    }]);
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    let texts = texts(3);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    let got = embedder.embed(&refs).expect("succeeds after retry");
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    check_vectors(&texts, &got);
    assert_eq!(server.requests(), 2);
}

#[test]
fn service_unavailable_twice_then_success() {
    let server = TestServer::start(ServerState::default());
    server
        .state
        .script
        .push([Fail::Status(503), Fail::Status(503)]);
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    let texts = texts(4);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    check_vectors(
        &texts,
        &embedder.embed(&refs).expect("succeeds on third try"),
    );
    assert_eq!(server.requests(), 3);
}

#[test]
fn persistent_server_error_fails_with_status() {
    let server = TestServer::start(ServerState {
        script: Script::always(Fail::Status(500)),
        ..Default::default()
    });
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    let err = embedder.embed(&["x"]).expect_err("fails");
    match &err {
        EmbedError::Remote {
            endpoint,
            url,
            status,
            message,
        } => {
            assert_eq!(*endpoint, RemoteEndpoint::Embedding);
            assert_eq!(*status, Some(500));
            assert!(url.ends_with("/v1/embeddings"));
            assert!(message.contains("scripted 500"), "{message}");
            assert!(
                err.to_string()
                    .starts_with(&format!("embedding endpoint {url} failed: HTTP 500")),
                "{err}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    // One attempt plus max_retries.
    assert_eq!(server.requests(), 4);
}

#[test]
fn unauthorized_is_not_retried() {
    let server = TestServer::start(ServerState {
        script: Script::always(Fail::Status(401)),
        ..Default::default()
    });
    let embedder = RemoteEmbedder::new(server.config()).expect("client");
    let err = embedder.embed(&["x"]).expect_err("fails");
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
    assert_eq!(server.requests(), 1);
}

#[test]
fn api_key_from_env_is_sent_as_bearer() {
    const VAR: &str = "EXCERPT_EMBED_TEST_KEY_7F3A";
    // Edition 2021: set_var is safe; no other test reads this variable.
    std::env::set_var(VAR, "sk-test-secret");
    let server = TestServer::start(ServerState::default());
    let mut config = server.config();
    config.endpoint.api_key_env = Some(VAR.into());
    let with_key = RemoteEmbedder::new(config).expect("client");
    with_key.embed(&["a"]).expect("embeds");
    // An unset variable, or none configured: no header (local servers need none).
    let mut config = server.config();
    config.endpoint.api_key_env = Some("EXCERPT_EMBED_TEST_UNSET_VAR_9C1".into());
    let unset = RemoteEmbedder::new(config).expect("client");
    unset.embed(&["b"]).expect("embeds");
    let none = RemoteEmbedder::new(server.config()).expect("client");
    none.embed(&["c"]).expect("embeds");
    let auth = server.state.auth.lock().unwrap().clone();
    assert_eq!(
        auth,
        vec![Some("Bearer sk-test-secret".to_string()), None, None]
    );
    // The key never shows in Debug output.
    assert!(!format!("{with_key:?}").contains("sk-test-secret"));
    // Never in the clear to a host off this machine, unless asked for.
    let mut plain = RemoteConfig::new("http://embeddings.example.org/v1", "m");
    plain.endpoint.api_key_env = Some(VAR.into());
    let err = RemoteEmbedder::new(plain.clone()).expect_err("a key over plain http");
    assert!(err.to_string().contains("plain http"), "{err}");
    assert!(!err.to_string().contains("sk-test-secret"), "{err}");
    let mut allowed = plain;
    allowed.endpoint.allow_plain_http_key = true;
    assert!(RemoteEmbedder::new(allowed).is_ok());
}

#[test]
fn connection_refused_is_retried_then_reported() {
    // A port with nothing listening: bind, note the port, close.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let mut config = RemoteConfig::new(format!("http://{addr}"), "m");
    config.endpoint.max_retries = 2;
    config.endpoint.initial_backoff = Duration::from_millis(5);
    let embedder = RemoteEmbedder::new(config).expect("client");
    let err = embedder.embed(&["x"]).expect_err("nothing listens");
    match &err {
        EmbedError::Remote {
            status, message, ..
        } => {
            assert_eq!(*status, None);
            assert!(message.contains("after 2 retries"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn invalid_config_is_rejected() {
    assert!(RemoteEmbedder::new(RemoteConfig::new("ftp://x", "m")).is_err());
    assert!(RemoteEmbedder::new(RemoteConfig::new("http://127.0.0.1:1", " ")).is_err());
}
