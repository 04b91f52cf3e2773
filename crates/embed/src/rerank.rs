//! Rerankers: a client of the common `/rerank` HTTP API ([`HttpReranker`]) and a local
//! BERT cross-encoder run on the CPU by our own forward pass ([`CrossEncoderReranker`]).
//! Both implement [`Reranker`]: one relevance score in `[0, 1]` per passage, in input
//! order.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use candle_core::{Device, Tensor};
use candle_transformers::models::bert::Config as BertConfig;
use excerpt_core::{EmbedError, Reranker};
use serde::{Deserialize, Serialize};
use tokenizers::{
    PaddingParams, PaddingStrategy, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

use crate::bert::{tensor_f32, BertEncoder};
use crate::http;
use crate::local::{encode_unpadded, inference_error};

/// Passages sent per request unless [`RerankConfig::batch_size`] says otherwise (TEI's
/// default `max_client_batch_size` is 32).
pub const DEFAULT_RERANK_BATCH_SIZE: usize = 32;

/// Pairs scored per forward pass unless [`CrossEncoderReranker::with_batch_size`] says
/// otherwise.
pub const DEFAULT_CROSS_ENCODER_BATCH_SIZE: usize = 16;

/// Largest rerank response body read.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Longest pair a cross-encoder sees unless the model allows fewer positions.
const DEFAULT_MAX_LENGTH: usize = 512;

/// Fewest tokens a pair may be truncated to: `[CLS] q [SEP] p [SEP]`.
const MIN_MAX_LENGTH: usize = 5;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

// ---------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------

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
    /// Base URL (e.g. `https://api.cohere.com/v2`, `https://api.jina.ai/v1`,
    /// `http://localhost:8080`) or the full endpoint URL ending in `/rerank`.
    pub url: String,
    /// Path appended to [`RerankConfig::url`] instead of `/rerank` (e.g.
    /// `v1/score`); `None` appends `/rerank` unless the URL already ends in it.
    pub path: Option<String>,
    /// Model name sent in each request (Cohere style; may be empty for servers that
    /// serve one model); also the reranker's model id when not empty.
    pub model: String,
    /// Request body style.
    pub api: RerankApi,
    /// Name of the environment variable holding the API key, sent as
    /// `Authorization: Bearer <key>`. `None`, or a variable that is unset, sends no
    /// header (fine for local servers).
    pub api_key_env: Option<String>,
    /// Passages per request (at least 1).
    pub batch_size: usize,
    /// Retries after the first attempt on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// Timeout of one whole request.
    pub timeout: Duration,
    /// Delay before the first retry; doubles on each further retry (capped at 60 s).
    /// A `Retry-After` header (in seconds) takes precedence when longer.
    pub initial_backoff: Duration,
    /// How scores are mapped to `[0, 1]`.
    pub score_mapping: ScoreMapping,
}

impl RerankConfig {
    /// A config with defaults: Cohere-style requests to `{url}/rerank`, no API key,
    /// batches of 32, 5 retries starting at 500 ms, 60 s timeout, automatic score
    /// mapping.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            path: None,
            model: model.into(),
            api: RerankApi::Cohere,
            api_key_env: None,
            batch_size: DEFAULT_RERANK_BATCH_SIZE,
            max_retries: 5,
            timeout: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(500),
            score_mapping: ScoreMapping::Auto,
        }
    }
}

/// The endpoint requests go to: see [`RerankConfig::url`] and [`RerankConfig::path`].
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
    endpoint: String,
    config: RerankConfig,
    api_key: Option<String>,
    model_id: String,
}

impl std::fmt::Debug for HttpReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpReranker")
            .field("endpoint", &self.endpoint)
            .field("model", &self.config.model)
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
        let endpoint = rerank_endpoint(&config.url, config.path.as_deref());
        let invalid = |message: &str| EmbedError::Remote {
            url: endpoint.clone(),
            status: None,
            message: message.to_string(),
        };
        if !http::is_http_url(&endpoint) {
            return Err(invalid("the URL must start with http:// or https://"));
        }
        if config.api == RerankApi::Cohere && config.model.trim().is_empty() {
            return Err(invalid("no model name configured"));
        }
        let api_key = http::api_key(config.api_key_env.as_deref());
        let agent = http::agent(config.timeout);
        let model_id = if config.model.trim().is_empty() {
            endpoint.clone()
        } else {
            config.model.trim().to_string()
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
        &self.endpoint
    }

    fn error(&self, message: String) -> EmbedError {
        EmbedError::Remote {
            url: self.endpoint.clone(),
            status: Some(200),
            message,
        }
    }

    /// One batch with retries; raw scores in batch order.
    fn rerank_batch(&self, query: &str, batch: &[&str]) -> Result<Vec<f64>, EmbedError> {
        let policy = http::RetryPolicy {
            max_retries: self.config.max_retries,
            initial_backoff: self.config.initial_backoff,
        };
        let key = self.api_key.as_deref();
        let response: RerankResponse = match self.config.api {
            RerankApi::Cohere => {
                let body = CohereRequest {
                    model: self.config.model.trim(),
                    query,
                    documents: batch,
                    top_n: batch.len(),
                    return_documents: false,
                };
                http::with_retries(&self.endpoint, policy, || {
                    http::post_json(&self.agent, &self.endpoint, key, &body, MAX_RESPONSE_BYTES)
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
                    http::post_json(&self.agent, &self.endpoint, key, &body, MAX_RESPONSE_BYTES)
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

// ---------------------------------------------------------------------------------
// Local cross-encoder
// ---------------------------------------------------------------------------------

/// The fields of `config.json` checked beyond candle's BERT config.
#[derive(Deserialize)]
struct HeadConfig {
    #[serde(default)]
    architectures: Option<Vec<String>>,
    #[serde(default)]
    model_type: Option<String>,
}

fn load_error(path: &Path, message: impl Into<String>) -> EmbedError {
    EmbedError::ModelLoad {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn require_file(dir: &Path, name: &str) -> Result<std::path::PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(load_error(
            &path,
            format!(
                "missing file `{name}` in cross-encoder directory {} (expected a \
                 BertForSequenceClassification model with config.json, model.safetensors \
                 and tokenizer.json)",
                dir.display()
            ),
        ))
    }
}

/// A local cross-encoder: a BERT sequence-classification model scoring (query,
/// passage) pairs on the CPU, e.g. `cross-encoder/ms-marco-MiniLM-L-6-v2`.
///
/// Load a Hugging Face model directory with [`CrossEncoderReranker::load`]
/// (`config.json` with `architectures: ["BertForSequenceClassification"]`,
/// `model.safetensors`, `tokenizer.json`). Each pair is tokenized as
/// `[CLS] query [SEP] passage [SEP]` with segment ids 0 and 1 and truncated
/// longest-first to 512 tokens (or the model's `max_position_embeddings` when fewer).
/// A batch of pairs runs through our own BERT forward pass ([`BertEncoder`]), each
/// pair at its own length (no padding). The [CLS] hidden state goes through the pooler
/// (`bert.pooler.dense` and tanh) and the `classifier` linear layer; one label is
/// turned into a score by the sigmoid, two labels by the softmax probability of label
/// 1 (as sentence-transformers' `CrossEncoder` does). Passages are sorted by length
/// into batches; scores come back in input order.
pub struct CrossEncoderReranker {
    encoder: BertEncoder,
    /// Pooler `hidden x hidden` weights, row per output (as stored), and biases.
    pooler: Dense,
    /// Classifier `num_labels x hidden` weights and biases.
    classifier: Dense,
    num_labels: usize,
    /// Truncates pairs to `max_length`; pads to the longest pair of a batch (the
    /// padding is dropped before the forward pass).
    tokenizer: Tokenizer,
    max_length: usize,
    batch_size: usize,
    model_id: String,
}

/// A dense layer `y = W x + b` with `W` stored row-major, one row per output.
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

impl Dense {
    /// Reads `{name}.weight` (`outputs x inputs`) and `{name}.bias` (`outputs`).
    fn load(
        tensors: &HashMap<String, Tensor>,
        name: &str,
        outputs: usize,
        inputs: usize,
    ) -> Result<Self, String> {
        if inputs == 0 {
            return Err(format!("`{name}` has no inputs"));
        }
        let get =
            |suffix: &str, shape: &[usize]| tensor_f32(tensors, &format!("{name}.{suffix}"), shape);
        Ok(Self {
            weight: get("weight", &[outputs, inputs])?,
            bias: get("bias", &[outputs])?,
            inputs,
        })
    }

    /// `W x + b`, accumulated in f64, then `f` applied to each output.
    fn apply(&self, x: &[f32], f: impl Fn(f64) -> f64) -> Vec<f32> {
        self.weight
            .chunks_exact(self.inputs)
            .zip(&self.bias)
            .map(|(row, &b)| {
                let dot: f64 = row
                    .iter()
                    .zip(x)
                    .map(|(&w, &v)| f64::from(w) * f64::from(v))
                    .sum();
                f(dot + f64::from(b)) as f32
            })
            .collect()
    }
}

impl std::fmt::Debug for CrossEncoderReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoderReranker")
            .field("model_id", &self.model_id)
            .field("num_labels", &self.num_labels)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl CrossEncoderReranker {
    /// Loads a BERT sequence-classification model directory.
    ///
    /// Accepts weights with or without the `bert.` prefix of Hugging Face's
    /// `BertForSequenceClassification` (`bert.embeddings.*`, `bert.encoder.*`,
    /// `bert.pooler.dense.*`, `classifier.*`). Fails with [`EmbedError::ModelLoad`]
    /// naming the file when a file is missing or malformed, the architecture is not
    /// BERT, or the pooler or classifier weights are absent (an embedding model is not
    /// a cross-encoder) or the classifier has more than two labels.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        if !dir.is_dir() {
            return Err(load_error(dir, "model directory does not exist"));
        }
        let config_path = require_file(dir, "config.json")?;
        let weights_path = require_file(dir, "model.safetensors")?;
        let tokenizer_path = require_file(dir, "tokenizer.json")?;

        let config_text = std::fs::read_to_string(&config_path)
            .map_err(|e| load_error(&config_path, format!("cannot read: {e}")))?;
        let head: HeadConfig = serde_json::from_str(&config_text)
            .map_err(|e| load_error(&config_path, format!("malformed JSON: {e}")))?;
        if let Some(model_type) = head.model_type.as_deref() {
            if model_type != "bert" {
                return Err(load_error(
                    &config_path,
                    format!(
                        "model_type `{model_type}` is not supported (only BERT cross-encoders)"
                    ),
                ));
            }
        }
        if let Some(archs) = &head.architectures {
            if !archs.is_empty() && !archs.iter().any(|a| a.starts_with("Bert")) {
                return Err(load_error(
                    &config_path,
                    format!(
                        "architecture {archs:?} is not supported (expected \
                         BertForSequenceClassification)"
                    ),
                ));
            }
        }
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|e| load_error(&config_path, format!("not a BERT config: {e}")))?;
        let max_length = DEFAULT_MAX_LENGTH.min(config.max_position_embeddings);
        if max_length < MIN_MAX_LENGTH {
            return Err(load_error(
                &config_path,
                format!("max_position_embeddings must be at least {MIN_MAX_LENGTH}"),
            ));
        }

        let tokenizer = pair_tokenizer(&tokenizer_path, max_length, &config)?;

        let bytes = std::fs::read(&weights_path)
            .map_err(|e| load_error(&weights_path, format!("cannot read: {e}")))?;
        let model_id = model_id(dir, &bytes);
        let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
            .map_err(|e| load_error(&weights_path, format!("cannot read weights: {e}")))?;
        drop(bytes);

        // Hugging Face nests the encoder under `bert.`; bare BertModel exports do not.
        let prefix = if tensors.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        let pooler_name = format!("{prefix}pooler.dense.weight");
        if !tensors.contains_key(&pooler_name) {
            return Err(load_error(
                &weights_path,
                format!(
                    "missing pooler weights `{pooler_name}`: not a \
                     BertForSequenceClassification (cross-encoder) model"
                ),
            ));
        }
        let num_labels = match tensors.get("classifier.weight").map(|t| t.dims().to_vec()) {
            Some(dims) if dims.len() == 2 && dims[1] == config.hidden_size => dims[0],
            Some(dims) => {
                return Err(load_error(
                    &weights_path,
                    format!(
                        "classifier.weight has shape {dims:?}, expected [num_labels, {}]",
                        config.hidden_size
                    ),
                ))
            }
            None => {
                return Err(load_error(
                    &weights_path,
                    "missing classifier weights `classifier.weight`: not a sequence-\
                     classification (cross-encoder) model; an embedding model cannot rerank",
                ))
            }
        };
        if !(1..=2).contains(&num_labels) {
            return Err(load_error(
                &weights_path,
                format!("the classifier has {num_labels} labels; only 1 or 2 are supported"),
            ));
        }

        let weights_err = |what: &str, e: String| {
            load_error(
                &weights_path,
                format!("{what} weights do not match config.json: {e}"),
            )
        };
        let hidden = config.hidden_size;
        let encoder =
            BertEncoder::load(&tensors, &config).map_err(|e| weights_err("encoder", e))?;
        let pooler = Dense::load(&tensors, &format!("{prefix}pooler.dense"), hidden, hidden)
            .map_err(|e| weights_err("pooler", e))?;
        let classifier = Dense::load(&tensors, "classifier", num_labels, hidden)
            .map_err(|e| weights_err("classifier", e))?;

        Ok(Self {
            encoder,
            pooler,
            classifier,
            num_labels,
            tokenizer,
            max_length,
            batch_size: DEFAULT_CROSS_ENCODER_BATCH_SIZE,
            model_id,
        })
    }

    /// Sets how many pairs go through the model at once (at least 1; default
    /// [`DEFAULT_CROSS_ENCODER_BATCH_SIZE`]).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The batch size in use.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Tokens per pair, special tokens included; longer pairs are truncated.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Labels of the classifier head (1 or 2).
    pub fn num_labels(&self) -> usize {
        self.num_labels
    }

    /// Scores one batch of passages against `query`, in batch order.
    fn score_batch(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let n = passages.len();
        let pairs: Vec<tokenizers::EncodeInput> =
            passages.iter().map(|&p| (query, p).into()).collect();
        let unpadded = encode_unpadded(&self.tokenizer, pairs)?;
        if unpadded.iter().any(|(ids, _)| ids.is_empty()) {
            return Err(inference_error("tokenization failed", "empty encoding"));
        }
        let seqs: Vec<(&[u32], &[u32])> = unpadded
            .iter()
            .map(|(ids, types)| (ids.as_slice(), types.as_slice()))
            .collect();
        let h = self.encoder.hidden_size();
        // Pooler and classifier on each pair's first ([CLS]) row.
        let head = |hidden: &[f32]| -> Vec<Vec<f32>> {
            let mut start = 0;
            let mut logits = Vec::with_capacity(n);
            for (ids, _) in &seqs {
                let cls = &hidden[start * h..][..h];
                start += ids.len();
                let pooled = self.pooler.apply(cls, f64::tanh);
                logits.push(self.classifier.apply(&pooled, |x| x));
            }
            logits
        };
        let logits = self
            .encoder
            .forward(&seqs, head)
            .map_err(|e| inference_error("model forward pass failed", e))?;
        logits
            .iter()
            .map(|row| {
                let score = match row.as_slice() {
                    [logit] => sigmoid(f64::from(*logit)),
                    [l0, l1] => sigmoid(f64::from(*l1) - f64::from(*l0)),
                    _ => {
                        return Err(inference_error(
                            "model forward pass failed",
                            "unexpected classifier output width",
                        ))
                    }
                };
                if score.is_finite() {
                    Ok(score as f32)
                } else {
                    Err(inference_error(
                        "model forward pass failed",
                        "non-finite score",
                    ))
                }
            })
            .collect()
    }
}

/// `<dir name>@<12 hex digits of blake3 of the weights file>`.
fn model_id(dir: &Path, weights: &[u8]) -> String {
    let hex = blake3::hash(weights).to_hex();
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "cross-encoder".to_string());
    format!("{name}@{}", &hex.as_str()[..12])
}

/// The tokenizer for pairs: longest-first truncation to `max_length`, padding to the
/// longest pair of a batch (overriding whatever `tokenizer.json` ships).
fn pair_tokenizer(
    path: &Path,
    max_length: usize,
    config: &BertConfig,
) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| load_error(path, format!("cannot parse tokenizer: {e}")))?;
    if tokenizer.get_post_processor().is_none() {
        return Err(load_error(
            path,
            "the tokenizer has no post-processor, so it cannot add [CLS] and [SEP] to \
             sentence pairs",
        ));
    }
    let mut padding = tokenizer
        .get_padding()
        .cloned()
        .unwrap_or_else(|| PaddingParams {
            pad_id: config.pad_token_id as u32,
            ..PaddingParams::default()
        });
    padding.strategy = PaddingStrategy::BatchLongest;
    padding.pad_to_multiple_of = None;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| load_error(path, format!("cannot set truncation: {e}")))?;
    tokenizer.with_padding(Some(padding));
    Ok(tokenizer)
}

impl Reranker for CrossEncoderReranker {
    /// `<directory name>@<12 hex digits of a hash of the weights file>`.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn rerank(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        // Sort by length so the tokenizer pads each batch little (the padding is dropped
        // before the forward pass); write scores back in input order.
        let mut order: Vec<usize> = (0..passages.len()).collect();
        order.sort_by_key(|&i| passages[i].len());
        let mut out = vec![0.0f32; passages.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&str> = chunk.iter().map(|&i| passages[i]).collect();
            let scores = self.score_batch(query, &batch)?;
            if scores.len() != chunk.len() {
                return Err(inference_error(
                    "model forward pass failed",
                    "wrong number of scores",
                ));
            }
            for (&i, s) in chunk.iter().zip(scores) {
                out[i] = s;
            }
        }
        Ok(out)
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
