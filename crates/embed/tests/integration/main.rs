//! Integration tests of excerpt-embed: the local model against reference embeddings,
//! its tokenizer, tiny XLM-RoBERTa models against PyTorch's outputs, model location,
//! and the remote client against a real local server.

mod chat;
mod cross_encoder;
mod local;
mod location;
mod remote;
mod rerank_http;
mod xlmr;
