//! LLM token counting with OpenAI's BPE encodings (`cl100k_base`, `o200k_base`).
//!
//! Counting is done by the `bpe-openai` crate: the same counts as OpenAI's tiktoken
//! (checked against `tiktoken-rs` by a property test in `tests/token_bound.rs`) at about
//! twice tiktoken-rs's speed on prose (1.4× for o200k), which matters because assembly
//! counts every span it offers to the budget. The vocabularies are compiled into the
//! binary: no network access, no files at run time. Each encoding is deserialized once
//! per process, on first use.

use crate::context::LlmTokens;
use crate::error::ContextError;

/// Counts tokens of `cl100k_base` (GPT-3.5/GPT-4) or `o200k_base` (GPT-4o and later).
///
/// Text is encoded as ordinary text: special-token strings in documents (e.g.
/// `<|endoftext|>`) count as the ordinary tokens they are made of.
pub struct TiktokenCounter {
    bpe: &'static bpe_openai::Tokenizer,
    name: &'static str,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("name", &self.name)
            .finish()
    }
}

impl TiktokenCounter {
    /// Encodings [`TiktokenCounter::new`] accepts.
    pub const ENCODINGS: [&'static str; 2] = ["cl100k_base", "o200k_base"];

    /// The encoding called `name` (`cl100k_base` or `o200k_base`).
    pub fn new(name: &str) -> Result<Self, ContextError> {
        let (bpe, name) = match name {
            "cl100k_base" => (bpe_openai::cl100k_base(), "cl100k_base"),
            "o200k_base" => (bpe_openai::o200k_base(), "o200k_base"),
            other => {
                return Err(ContextError::Tokenizer {
                    name: other.to_string(),
                    message: format!("unknown encoding, expected one of {:?}", Self::ENCODINGS),
                })
            }
        };
        Ok(TiktokenCounter { bpe, name })
    }

    /// `cl100k_base`.
    pub fn cl100k() -> Result<Self, ContextError> {
        Self::new("cl100k_base")
    }
}

impl LlmTokens for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.count(text)
    }
    fn name(&self) -> &str {
        self.name
    }
    /// Whitespace-separated words: the cl100k and o200k pre-tokenizers never let a
    /// piece run from one word across whitespace into the next, so every word starts at
    /// least one token (checked by a property test).
    fn lower_bound(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}
