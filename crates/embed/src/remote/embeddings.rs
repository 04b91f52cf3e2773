//! A blocking client for OpenAI-compatible embedding endpoints.

use std::sync::OnceLock;

use excerpt_core::{normalize, EmbedError, Embedder, RemoteEndpoint};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint, EndpointConfig};

/// Texts sent per request unless [`RemoteConfig::batch_size`] says otherwise.
pub const DEFAULT_REMOTE_BATCH_SIZE: usize = 64;

/// Largest response body read (vectors as JSON text are large).
const MAX_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;

/// How to reach an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    /// URL, model, API key, timeout and retries. The URL is a base URL, with or without
    /// a trailing `/v1` (e.g. `https://api.openai.com` or `http://localhost:8080/v1`);
    /// requests go to `{base}/v1/embeddings`. The model name is also the embedder's
    /// model id.
    pub endpoint: EndpointConfig,
    /// Texts per request (at least 1).
    pub batch_size: usize,
    /// Vector length, if known in advance; otherwise learned from the first response.
    pub dimension: Option<usize>,
}

impl RemoteConfig {
    /// A config with defaults: no API key, batches of 64, 5 retries starting at
    /// 500 ms, 60 s timeout, dimension learned from the first response.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: EndpointConfig::new(url, model),
            batch_size: DEFAULT_REMOTE_BATCH_SIZE,
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
    endpoint: Endpoint,
    config: RemoteConfig,
    api_key: Option<String>,
    dimension: OnceLock<usize>,
}

impl std::fmt::Debug for RemoteEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.config.endpoint.model)
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

/// `{base}/v1/embeddings`, whether or not `base` already ends in `/v1`.
fn endpoint_url(base: &str) -> String {
    http::openai_endpoint(base, "embeddings")
}

impl RemoteEmbedder {
    /// Builds the client. Reads the API key from the environment now. Fails with
    /// [`EmbedError::Remote`] if the URL or model is empty or the URL is not http(s).
    pub fn new(config: RemoteConfig) -> Result<Self, EmbedError> {
        let endpoint = Endpoint {
            kind: RemoteEndpoint::Embedding,
            url: endpoint_url(&config.endpoint.url),
        };
        endpoint.check_scheme()?;
        if config.endpoint.model.trim().is_empty() {
            return Err(endpoint.error(None, "no model name configured"));
        }
        let api_key = endpoint.api_key(&config.endpoint)?;
        let agent = http::agent(config.endpoint.timeout);
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
        &self.endpoint.url
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
        self.endpoint.error(status, message)
    }

    /// One batch with retries; vectors in batch order, normalised.
    fn embed_batch(&self, batch: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = Request {
            model: &self.config.endpoint.model,
            input: batch,
        };
        let policy = self.config.endpoint.retry_policy();
        let response = http::with_retries(&self.endpoint, policy, || {
            http::post_json::<_, Response>(
                &self.agent,
                &self.endpoint.url,
                self.api_key.as_deref(),
                &body,
                MAX_RESPONSE_BYTES,
            )
        })?;
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
            normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }
}

impl Embedder for RemoteEmbedder {
    /// The configured model name.
    fn model_id(&self) -> &str {
        &self.config.endpoint.model
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
