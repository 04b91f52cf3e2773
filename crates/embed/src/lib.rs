//! Embedders for Excerpt: turn passages and queries into L2-normalised vectors.
//!
//! Two implementations of [`excerpt_core::Embedder`]:
//!
//! - [`LocalEmbedder`]: any BERT-family sentence-transformers model directory
//!   (`config.json`, `model.safetensors`, `tokenizer.json`, optionally
//!   `1_Pooling/config.json` and `sentence_bert_config.json`), run on the CPU by our
//!   own BERT forward pass (`bert.rs`, products by `sgemm.rs`; candle only reads the
//!   weights). Mean or CLS pooling over each text's own tokens, batched, sorted by
//!   length, no padding computed. It also exposes its tokenizer as an [`excerpt_core::TokenCounter`]
//!   ([`LocalTokenCounter`]) so chunks can be budgeted in the model's own tokens.
//! - [`RemoteEmbedder`]: a blocking client for OpenAI-compatible
//!   `POST /v1/embeddings` endpoints, with batching, retries and exponential backoff
//!   (honouring `Retry-After`), configured by [`RemoteConfig`].
//!
//! Model location: [`default_home`] is `$EXCERPT_HOME` or the user's cache directory
//! plus `excerpt`; [`resolve_model`] maps an optional `--model` value to a directory
//! under `<home>/models/` (the default model is [`DEFAULT_MODEL_NAME`]). With the
//! cargo feature `hub`, `download_model` fetches a model from the Hugging Face Hub.

mod bert;
mod chat;
mod http;
mod local;
mod location;
mod math;
mod remote;
mod rerank;
mod sgemm;

pub use chat::{ChatClient, ChatConfig, ChatResponse};
pub use local::{LocalEmbedder, LocalTokenCounter, Pooling, DEFAULT_BATCH_SIZE};
#[cfg(feature = "hub")]
pub use location::download_model;
pub use location::{default_home, models_dir, resolve_model, DEFAULT_MODEL_NAME};
pub use remote::{RemoteConfig, RemoteEmbedder, DEFAULT_REMOTE_BATCH_SIZE};
pub use rerank::{
    CrossEncoderReranker, HttpReranker, RerankApi, RerankConfig, ScoreMapping,
    DEFAULT_CROSS_ENCODER_BATCH_SIZE, DEFAULT_RERANK_BATCH_SIZE,
};

pub use excerpt_core::{EmbedError, Embedder, Reranker, TokenCounter};
