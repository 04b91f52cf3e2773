//! Test support shared by the Excerpt test suites (a dev-dependency only, never
//! published).
//!
//! The fake remote services speak the real protocols over real sockets on 127.0.0.1:
//! [`FakeServer`] runs an [`axum::Router`] on its own tokio runtime, [`Script`] answers
//! scripted failures (an HTTP status, or 429 with `Retry-After`) before the normal
//! response, and [`openai`] and [`rerank`] build and read the JSON bodies of the
//! OpenAI-compatible chat-completions and embeddings endpoints and of `/rerank`
//! endpoints. Each suite writes its own handlers (what the fake model answers is what
//! the suite tests) and shares the plumbing. [`fixtures`] holds small file helpers;
//! [`postgres`] starts a real PostgreSQL (through `scripts/postgres.sh`) and makes
//! databases for the suites of the PostgreSQL index. [`tokens`] holds tokenizers for
//! tests (a [`WordCounter`] and a [`WhitespaceCounter`]); `mcp` (feature `mcp`) the
//! calls of an MCP test client.
//!
//! `axum` and `tokio` are re-exported so a suite can write handlers without depending
//! on them itself.

#![forbid(unsafe_code)]

pub mod fixtures;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod openai;
pub mod postgres;
pub mod rerank;
mod script;
mod server;
pub mod tokens;

pub use axum;
pub use script::{Fail, Script};
pub use server::FakeServer;
pub use tokens::{WhitespaceCounter, WordCounter};
pub use tokio;
