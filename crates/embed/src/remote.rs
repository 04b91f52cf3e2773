//! A blocking client for OpenAI-compatible embedding endpoints.

use std::sync::OnceLock;
use std::time::Duration;

use excerpt_core::{EmbedError, Embedder};
use serde::{Deserialize, Serialize};

/// Texts sent per request unless [`RemoteConfig::batch_size`] says otherwise.
pub const DEFAULT_REMOTE_BATCH_SIZE: usize = 64;

/// Longest wait honoured from a `Retry-After` header or reached by backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Largest response body read (vectors as JSON text are large).
const MAX_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;

/// How to reach an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    /// Base URL, with or without a trailing `/v1` (e.g. `https://api.openai.com` or
    /// `http://localhost:8080/v1`); requests go to `{base}/v1/embeddings`.
    pub url: String,
    /// Model name sent in each request; also the embedder's model id.
    pub model: String,
    /// Name of the environment variable holding the API key, sent as
    /// `Authorization: Bearer <key>`. `None`, or a variable that is unset, sends no
    /// header (fine for local servers).
    pub api_key_env: Option<String>,
    /// Texts per request (at least 1).
    pub batch_size: usize,
    /// Retries after the first attempt on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// Timeout of one whole request.
    pub timeout: Duration,
    /// Delay before the first retry; doubles on each further retry (capped at 60 s).
    /// A `Retry-After` header (in seconds) takes precedence when longer.
    pub initial_backoff: Duration,
    /// Vector length, if known in advance; otherwise learned from the first response.
    pub dimension: Option<usize>,
}

impl RemoteConfig {
    /// A config with defaults: no API key, batches of 64, 5 retries starting at
    /// 500 ms, 60 s timeout, dimension learned from the first response.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key_env: None,
            batch_size: DEFAULT_REMOTE_BATCH_SIZE,
            max_retries: 5,
            timeout: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(500),
            dimension: None,
        }
    }
}

/// An [`Embedder`] calling an OpenAI-compatible `POST /v1/embeddings` endpoint.
///
/// Requests carry `{"model", "input": [...]}` in batches of
/// [`RemoteConfig::batch_size`]; responses' `data[].embedding` are put back in input
/// order by their `index` and L2-normalised. 429, 5xx and connection failures are
/// retried with exponential backoff; other 4xx fail at once.
pub struct RemoteEmbedder {
    agent: ureq::Agent,
    endpoint: String,
    config: RemoteConfig,
    api_key: Option<String>,
    dimension: OnceLock<usize>,
}

impl std::fmt::Debug for RemoteEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("endpoint", &self.endpoint)
            .field("model", &self.config.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("dimension", &self.dimension.get())
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [&'a str],
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: Option<usize>,
}

/// The outcome of one failed attempt.
struct Failure {
    status: Option<u16>,
    message: String,
    retryable: bool,
    retry_after: Option<Duration>,
}

/// `{base}/v1/embeddings`, whether or not `base` already ends in `/v1`.
fn endpoint_url(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let base = base.strip_suffix("/embeddings").unwrap_or(base);
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/embeddings")
}

impl RemoteEmbedder {
    /// Builds the client. Reads the API key from the environment now. Fails with
    /// [`EmbedError::Remote`] if the URL or model is empty or the URL is not http(s).
    pub fn new(config: RemoteConfig) -> Result<Self, EmbedError> {
        let endpoint = endpoint_url(&config.url);
        let invalid = |message: &str| EmbedError::Remote {
            url: endpoint.clone(),
            status: None,
            message: message.to_string(),
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(invalid("the URL must start with http:// or https://"));
        }
        if config.model.trim().is_empty() {
            return Err(invalid("no model name configured"));
        }
        let api_key = config
            .api_key_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let dimension = OnceLock::new();
        if let Some(d) = config.dimension {
            let _ = dimension.set(d);
        }
        Ok(Self {
            agent,
            endpoint,
            config: RemoteConfig {
                batch_size: config.batch_size.max(1),
                ..config
            },
            api_key,
            dimension,
        })
    }

    /// The full endpoint URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The vector length: configured, learned from an earlier response, or else
    /// learned now by embedding one short probe text.
    pub fn probe_dimension(&self) -> Result<usize, EmbedError> {
        if let Some(&d) = self.dimension.get() {
            return Ok(d);
        }
        let v = self.embed(&["dimension probe"])?;
        v.first()
            .map(Vec::len)
            .ok_or_else(|| self.error(None, "the endpoint returned no vector".into()))
    }

    fn error(&self, status: Option<u16>, message: String) -> EmbedError {
        EmbedError::Remote {
            url: self.endpoint.clone(),
            status,
            message,
        }
    }

    /// One HTTP attempt for one batch.
    fn attempt(&self, batch: &[&str]) -> Result<Response, Failure> {
        let mut request = self.agent.post(&self.endpoint);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let body = Request {
            model: &self.config.model,
            input: batch,
        };
        let mut response = match request.send_json(&body) {
            Ok(r) => r,
            Err(e) => {
                let retryable = matches!(
                    e,
                    ureq::Error::Io(_)
                        | ureq::Error::Timeout(_)
                        | ureq::Error::ConnectionFailed
                        | ureq::Error::HostNotFound
                        | ureq::Error::Protocol(_)
                        | ureq::Error::BodyStalled
                );
                return Err(Failure {
                    status: None,
                    message: format!("request failed: {e}"),
                    retryable,
                    retry_after: None,
                });
            }
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Duration::from_secs_f64(s).min(MAX_BACKOFF));
            let text = response
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .lossy_utf8(true)
                .read_to_string()
                .unwrap_or_default();
            let mut snippet: String = text.chars().take(500).collect();
            if snippet.len() < text.len() {
                snippet.push('…');
            }
            return Err(Failure {
                status: Some(status),
                message: format!("HTTP {status}: {}", snippet.trim()),
                retryable: status == 429 || status >= 500,
                retry_after,
            });
        }
        response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_json::<Response>()
            .map_err(|e| Failure {
                status: Some(status),
                message: format!("malformed response: {e}"),
                // A truncated body is a transport problem; bad JSON is not.
                retryable: matches!(e, ureq::Error::Io(_) | ureq::Error::Timeout(_)),
                retry_after: None,
            })
    }

    /// One batch with retries; vectors in batch order, normalised.
    fn embed_batch(&self, batch: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut backoff = self.config.initial_backoff;
        let mut retries = 0;
        let response = loop {
            match self.attempt(batch) {
                Ok(r) => break r,
                Err(f) if f.retryable && retries < self.config.max_retries => {
                    retries += 1;
                    let wait = f.retry_after.map_or(backoff, |ra| ra.max(backoff));
                    std::thread::sleep(wait);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(f) => {
                    let message = if retries > 0 {
                        format!("{} (after {} retries)", f.message, retries)
                    } else {
                        f.message
                    };
                    return Err(self.error(f.status, message));
                }
            }
        };
        self.order_and_check(batch.len(), response)
    }

    /// Puts `data` in input order by `index` (array order when absent), checks counts
    /// and dimensions, normalises.
    fn order_and_check(&self, n: usize, response: Response) -> Result<Vec<Vec<f32>>, EmbedError> {
        if response.data.len() != n {
            return Err(self.error(
                Some(200),
                format!("expected {n} embeddings, got {}", response.data.len()),
            ));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; n];
        for (pos, item) in response.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            let slot = slots.get_mut(i).ok_or_else(|| {
                self.error(
                    Some(200),
                    format!("embedding index {i} out of range 0..{n}"),
                )
            })?;
            if slot.is_some() {
                return Err(self.error(Some(200), format!("duplicate embedding index {i}")));
            }
            *slot = Some(item.embedding);
        }
        let mut out = Vec::with_capacity(n);
        for v in slots.into_iter() {
            let mut v = v.ok_or_else(|| self.error(Some(200), "missing embedding index".into()))?;
            if v.is_empty() {
                return Err(self.error(Some(200), "empty embedding".into()));
            }
            let expected = *self.dimension.get_or_init(|| v.len());
            if v.len() != expected {
                return Err(self.error(
                    Some(200),
                    format!("embedding has {} dimensions, expected {expected}", v.len()),
                ));
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm.is_finite() && norm > 1e-12 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
            out.push(v);
        }
        Ok(out)
    }
}

impl Embedder for RemoteEmbedder {
    /// The configured model name.
    fn model_id(&self) -> &str {
        &self.config.model
    }

    /// The configured or learned dimension. When neither is known yet this sends one
    /// probe request; it returns 0 if that fails (use
    /// [`RemoteEmbedder::probe_dimension`] to see the error).
    fn dimension(&self) -> usize {
        self.probe_dimension().unwrap_or(0)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.config.batch_size) {
            out.extend(self.embed_batch(batch)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint_url;

    #[test]
    fn endpoint_accepts_base_with_or_without_v1() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
            "http://h:1/v1/embeddings",
        ] {
            assert_eq!(endpoint_url(base), "http://h:1/v1/embeddings", "{base}");
        }
        assert_eq!(
            endpoint_url("https://x.org/openai/v1"),
            "https://x.org/openai/v1/embeddings"
        );
    }
}
