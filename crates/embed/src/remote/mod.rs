//! Clients of models served over HTTP: blocking, with batching, retries and
//! exponential backoff honouring `Retry-After`, all through one request helper
//! ([`http`]). Their configs share the endpoint settings ([`EndpointConfig`]: URL,
//! model, API key, timeout, retries).
//!
//! - [`RemoteEmbedder`]: OpenAI-compatible `POST /v1/embeddings`;
//! - [`ChatClient`]: OpenAI-compatible `POST /v1/chat/completions`;
//! - [`HttpReranker`]: the common `/rerank` API (Cohere, Jina, TEI and compatible).
//!
//! Every failure is an [`excerpt_core::EmbedError::Remote`] naming which kind of
//! endpoint failed and its URL.

mod chat;
mod embeddings;
mod http;
mod rerank;

pub use chat::{ChatClient, ChatConfig, ChatResponse};
pub use embeddings::{RemoteConfig, RemoteEmbedder, DEFAULT_REMOTE_BATCH_SIZE};
pub use http::{default_key_env, EndpointConfig};
pub use rerank::{HttpReranker, RerankApi, RerankConfig, ScoreMapping, DEFAULT_RERANK_BATCH_SIZE};
