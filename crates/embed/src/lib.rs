//! Embedders for Excerpt: turn passages and queries into L2-normalised vectors, and
//! the other model clients Excerpt uses (rerankers, chat).
//!
//! The crate has two halves:
//!
//! - `local`: models run on the CPU by our own BERT forward pass (candle is not
//!   used; the weights are read from `model.safetensors` directly).
//!   - [`LocalEmbedder`]: a BERT or XLM-RoBERTa sentence-transformers model directory
//!     (`config.json`, `model.safetensors`, `tokenizer.json`, optionally
//!     `1_Pooling/config.json`, `sentence_bert_config.json` and the query and
//!     passage prompts of `config_sentence_transformers.json`). Mean or CLS pooling
//!     over each text's own tokens, batched, sorted by length, no padding computed.
//!     It also exposes its tokenizer as an [`excerpt_core::TokenCounter`]
//!     ([`LocalTokenCounter`]) so chunks can be budgeted in the model's own tokens.
//!   - [`CrossEncoderReranker`]: a BERT or XLM-RoBERTa sequence-classification
//!     model scoring (query, passage) pairs.
//!   - Model location: [`default_home`] is `$EXCERPT_HOME` or the user's cache
//!     directory plus `excerpt`; [`resolve_model`] maps an optional `--model` value to
//!     a directory under `<home>/models/` (the default model is
//!     [`DEFAULT_MODEL_NAME`]). With the cargo feature `hub`, `download_model`
//!     fetches a model from the Hugging Face Hub and `fetch_default_model` fetches
//!     [`DEFAULT_MODEL`] at its pinned revision, checking the SHA-256 of its files
//!     ([`verify_model_files`]).
//!   - The matrix kernel: our own AVX2 + FMA kernel where the CPU has both, else the
//!     `gemm` crate's (NEON on aarch64); `EXCERPT_KERNEL` ([`KernelChoice`]) forces one.
//! - `remote`: blocking HTTP clients with batching, retries and exponential backoff
//!   with jitter (honouring `Retry-After`).
//!   - [`RemoteEmbedder`]: OpenAI-compatible `POST /v1/embeddings` endpoints,
//!     configured by [`RemoteConfig`].
//!   - [`HttpReranker`]: the common `/rerank` API, configured by [`RerankConfig`].
//!   - [`ChatClient`]: OpenAI-compatible `POST /v1/chat/completions`, configured by
//!     [`ChatConfig`].
//!
//!   The three configs share their endpoint settings (URL, model, API key, timeout,
//!   retries) as an [`EndpointConfig`].
//!
//! The embedders implement [`excerpt_core::Embedder`], the rerankers
//! [`excerpt_core::Reranker`]. Vectors are normalised by [`excerpt_core::normalize`].
//!
//! Unsafe code is confined to the local matrix and element-wise kernels and the
//! attention step of the forward pass; every unsafe block states why it is sound
//! (`clippy::undocumented_unsafe_blocks` is on).

#![warn(clippy::undocumented_unsafe_blocks)]

mod local;
mod remote;
mod score;

pub use local::throughput;
pub use local::{
    default_home, encoder_flops, fma_peak_avx512_gflops, fma_peak_gflops, models_dir,
    resolve_model, verify_model_files, CrossEncoderReranker, KernelChoice, LocalEmbedder,
    LocalTokenCounter, PinnedModel, Pooling, QueryWeights, DEFAULT_BATCH_SIZE,
    DEFAULT_CROSS_ENCODER_BATCH_SIZE, DEFAULT_MODEL, DEFAULT_MODEL_NAME,
};
#[cfg(feature = "hub")]
pub use local::{download_model, fetch_default_model};
pub use remote::{
    default_key_env, ChatClient, ChatConfig, ChatResponse, EndpointConfig, HttpReranker,
    RemoteConfig, RemoteEmbedder, RerankApi, RerankConfig, ScoreMapping, DEFAULT_REMOTE_BATCH_SIZE,
    DEFAULT_RERANK_BATCH_SIZE,
};

pub use excerpt_core::{
    EmbedError, Embedder, Pooled, RemoteEndpoint, Reranker, SpanPool, TokenCounter,
};
