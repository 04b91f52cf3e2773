//! A client of the common `/rerank` HTTP API ([`HttpReranker`]): one relevance score
//! in `[0, 1]` per passage, in input order.

use excerpt_core::{EmbedError, RemoteEndpoint, Reranker};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint, EndpointConfig};
use crate::score::sigmoid;

/// Passages sent per request unless [`RerankConfig::batch_size`] says otherwise (TEI's
/// default `max_client_batch_size` is 32).
pub const DEFAULT_RERANK_BATCH_SIZE: usize = 32;

/// Largest rerank response body read.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Which request body a rerank endpoint expects. Responses of either shape are
/// accepted whatever the request style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RerankApi {
    /// Cohere (v1 and v2), Jina, Voyage, vLLM, llama.cpp and most proxies:
    /// `{"model", "query", "documents": [...], "top_n", "return_documents": false}`,
    /// answered with `{"results": [{"index", "relevance_score"}]}`.
    #[default]
    Cohere,
    /// Hugging Face text-embeddings-inference (TEI):
    /// `{"query", "texts": [...], "raw_scores": false, "return_text": false,
    /// "truncate": true}`, answered with a bare array `[{"index", "score"}]`. No model
    /// is sent (TEI serves one).
    Tei,
}

/// How the scores of a response are brought into `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoreMapping {
    /// Keep the scores when every score of the call lies in `[0, 1]`, otherwise apply
    /// the logistic sigmoid to all of them. Cohere and Jina return probabilities; TEI
    /// returns sigmoid-activated scores by default but raw logits with
    /// `raw_scores: true`, and some servers (llama.cpp, some vLLM versions) return raw
    /// logits. The decision is made per call, over all its batches, so a call's
    /// scores stay comparable; set [`ScoreMapping::Sigmoid`] when the server is known
    /// to return logits, since a call whose logits all happen to fall in `[0, 1]`
    /// would otherwise be kept as is.
    #[default]
    Auto,
    /// Always apply the sigmoid (the server returns logits).
    Sigmoid,
    /// Keep the scores, clamped to `[0, 1]` (the server returns probabilities).
    Identity,
}

/// How to reach a `/rerank` endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankConfig {
    /// URL, model, API key, timeout and retries. The URL is a base URL (e.g.
    /// `https://api.cohere.com/v2`, `https://api.jina.ai/v1`, `http://localhost:8080`)
    /// or the full endpoint URL ending in `/rerank`. The model name is sent in each
    /// request (Cohere style; may be empty for servers that serve one model) and is
    /// also the reranker's model id when not empty.
    pub endpoint: EndpointConfig,
    /// Path appended to the URL ([`EndpointConfig::url`]) instead of `/rerank` (e.g.
    /// `v1/score`); `None` appends `/rerank` unless the URL already ends in it.
    pub path: Option<String>,
    /// Request body style.
    pub api: RerankApi,
    /// Passages per request (at least 1).
    pub batch_size: usize,
    /// How scores are mapped to `[0, 1]`.
    pub score_mapping: ScoreMapping,
}

impl RerankConfig {
    /// A config with defaults: Cohere-style requests to `{url}/rerank`, no API key,
    /// batches of 32, 5 retries starting at 500 ms, 60 s timeout, automatic score
    /// mapping.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: EndpointConfig::new(url, model),
            path: None,
            api: RerankApi::Cohere,
            batch_size: DEFAULT_RERANK_BATCH_SIZE,
            score_mapping: ScoreMapping::Auto,
        }
    }
}

/// The endpoint requests go to: see [`RerankConfig::endpoint`] and
/// [`RerankConfig::path`].
fn rerank_endpoint(url: &str, path: Option<&str>) -> String {
    let base = url.trim().trim_end_matches('/');
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => format!("{base}/{}", p.trim_start_matches('/')),
        None if base.ends_with("/rerank") => base.to_string(),
        None => format!("{base}/rerank"),
    }
}

#[derive(Serialize)]
struct CohereRequest<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    model: &'a str,
    query: &'a str,
    documents: &'a [&'a str],
    /// Always the batch length, so servers with a small default return every score.
    top_n: usize,
    return_documents: bool,
}

#[derive(Serialize)]
struct TeiRequest<'a> {
    query: &'a str,
    texts: &'a [&'a str],
    raw_scores: bool,
    return_text: bool,
    truncate: bool,
}

/// Either response shape.
#[derive(Deserialize)]
#[serde(untagged)]
enum RerankResponse {
    /// Cohere, Jina and most others.
    Results { results: Vec<RerankItem> },
    /// TEI.
    Bare(Vec<RerankItem>),
}

#[derive(Deserialize)]
struct RerankItem {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f64,
}

/// A [`Reranker`] calling a `/rerank` endpoint (Cohere v1/v2, Jina, TEI and
/// compatible servers).
///
/// Passages go in batches of [`RerankConfig::batch_size`]; each response's results are
/// put back in passage order by their `index` (every index must be present exactly
/// once) and mapped to `[0, 1]` as [`RerankConfig::score_mapping`] says. 429, 5xx and
/// connection failures are retried with exponential backoff honouring `Retry-After`;
/// other 4xx fail at once with [`EmbedError::Remote`].
pub struct HttpReranker {
    agent: ureq::Agent,
    endpoint: Endpoint,
    config: RerankConfig,
    api_key: Option<String>,
    model_id: String,
}

impl std::fmt::Debug for HttpReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpReranker")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.config.endpoint.model)
            .field("api", &self.config.api)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl HttpReranker {
    /// Builds the client. Reads the API key from the environment now. Fails with
    /// [`EmbedError::Remote`] if the URL is not http(s), or if the model is empty for
    /// Cohere-style requests.
    pub fn new(config: RerankConfig) -> Result<Self, EmbedError> {
        let endpoint = Endpoint {
            kind: RemoteEndpoint::Rerank,
            url: rerank_endpoint(&config.endpoint.url, config.path.as_deref()),
        };
        endpoint.check_scheme()?;
        if config.api == RerankApi::Cohere && config.endpoint.model.trim().is_empty() {
            return Err(endpoint.error(None, "no model name configured"));
        }
        let api_key = endpoint.api_key(&config.endpoint)?;
        let agent = http::agent(config.endpoint.timeout);
        let model_id = if config.endpoint.model.trim().is_empty() {
            endpoint.url.clone()
        } else {
            config.endpoint.model.trim().to_string()
        };
        Ok(Self {
            agent,
            endpoint,
            config: RerankConfig {
                batch_size: config.batch_size.max(1),
                ..config
            },
            api_key,
            model_id,
        })
    }

    /// The full endpoint URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
    }

    /// A malformed answer to a successful request.
    fn error(&self, message: String) -> EmbedError {
        self.endpoint.error(Some(200), message)
    }

    /// One batch with retries; raw scores in batch order.
    fn rerank_batch(&self, query: &str, batch: &[&str]) -> Result<Vec<f64>, EmbedError> {
        let policy = self.config.endpoint.retry_policy();
        let key = self.api_key.as_deref();
        let response: RerankResponse = match self.config.api {
            RerankApi::Cohere => {
                let body = CohereRequest {
                    model: self.config.endpoint.model.trim(),
                    query,
                    documents: batch,
                    top_n: batch.len(),
                    return_documents: false,
                };
                http::with_retries(&self.endpoint, policy, || {
                    http::post_json(
                        &self.agent,
                        &self.endpoint.url,
                        key,
                        &body,
                        MAX_RESPONSE_BYTES,
                    )
                })?
            }
            RerankApi::Tei => {
                let body = TeiRequest {
                    query,
                    texts: batch,
                    raw_scores: false,
                    return_text: false,
                    truncate: true,
                };
                http::with_retries(&self.endpoint, policy, || {
                    http::post_json(
                        &self.agent,
                        &self.endpoint.url,
                        key,
                        &body,
                        MAX_RESPONSE_BYTES,
                    )
                })?
            }
        };
        let items = match response {
            RerankResponse::Results { results } => results,
            RerankResponse::Bare(items) => items,
        };
        self.order(batch.len(), items)
    }

    /// Puts scores in passage order by `index`; every index exactly once.
    fn order(&self, n: usize, items: Vec<RerankItem>) -> Result<Vec<f64>, EmbedError> {
        if items.len() != n {
            return Err(self.error(format!("expected {n} scores, got {}", items.len())));
        }
        let mut slots: Vec<Option<f64>> = vec![None; n];
        for item in items {
            let i = item.index;
            let slot = slots
                .get_mut(i)
                .ok_or_else(|| self.error(format!("result index {i} out of range 0..{n}")))?;
            if slot.is_some() {
                return Err(self.error(format!("duplicate result index {i}")));
            }
            if !item.relevance_score.is_finite() {
                return Err(self.error(format!("non-finite score for index {i}")));
            }
            *slot = Some(item.relevance_score);
        }
        slots
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.ok_or_else(|| self.error(format!("missing result index {i}"))))
            .collect()
    }
}

/// Brings raw scores into `[0, 1]`.
fn map_scores(raw: &[f64], mapping: ScoreMapping) -> Vec<f32> {
    let sigmoid_all = match mapping {
        ScoreMapping::Sigmoid => true,
        ScoreMapping::Identity => false,
        ScoreMapping::Auto => raw.iter().any(|s| !(0.0..=1.0).contains(s)),
    };
    raw.iter()
        .map(|&s| {
            let s = if sigmoid_all { sigmoid(s) } else { s };
            s.clamp(0.0, 1.0) as f32
        })
        .collect()
}

impl Reranker for HttpReranker {
    /// The configured model name, or the endpoint URL when no model is configured.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn rerank(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let mut raw = Vec::with_capacity(passages.len());
        for batch in passages.chunks(self.config.batch_size) {
            raw.extend(self.rerank_batch(query, batch)?);
        }
        Ok(map_scores(&raw, self.config.score_mapping))
    }
}

#[cfg(test)]
mod tests {
    use super::{map_scores, rerank_endpoint, ScoreMapping};

    #[test]
    fn endpoint_appends_rerank_unless_present_or_overridden() {
        assert_eq!(rerank_endpoint("http://h:1", None), "http://h:1/rerank");
        assert_eq!(
            rerank_endpoint("http://h:1/v2/", None),
            "http://h:1/v2/rerank"
        );
        assert_eq!(
            rerank_endpoint("http://h:1/v1/rerank", None),
            "http://h:1/v1/rerank"
        );
        assert_eq!(
            rerank_endpoint("http://h:1/", Some("/v1/score")),
            "http://h:1/v1/score"
        );
    }

    #[test]
    fn scores_are_mapped_into_unit_interval() {
        assert_eq!(
            map_scores(&[0.2, 1.0, 0.0], ScoreMapping::Auto),
            vec![0.2, 1.0, 0.0]
        );
        let s = map_scores(&[0.0, 2.0, -3.0], ScoreMapping::Auto);
        assert!((s[0] - 0.5).abs() < 1e-6 && s[1] > 0.88 && s[2] < 0.05);
        assert_eq!(map_scores(&[0.5], ScoreMapping::Sigmoid), vec![sig(0.5)]);
        assert_eq!(map_scores(&[1.5], ScoreMapping::Identity), vec![1.0]);
    }

    fn sig(x: f64) -> f32 {
        (1.0 / (1.0 + (-x).exp())) as f32
    }
}
