//! LLM token counting with OpenAI's BPE encodings (tiktoken-rs).
//!
//! The vocabularies are compiled into the binary by tiktoken-rs (`include_str!`): no
//! network access, no files at run time. Building the BPE takes a noticeable fraction of
//! a second, so construct a [`TiktokenCounter`] once and keep it.

use tiktoken_rs::CoreBPE;

use crate::context::LlmTokens;
use crate::error::ContextError;

/// Counts tokens of `cl100k_base` (GPT-3.5/GPT-4) or `o200k_base` (GPT-4o and later).
///
/// Text is encoded as ordinary text: special-token strings in documents (e.g.
/// `<|endoftext|>`) count as the ordinary tokens they are made of.
pub struct TiktokenCounter {
    bpe: CoreBPE,
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
            "cl100k_base" => (tiktoken_rs::cl100k_base(), "cl100k_base"),
            "o200k_base" => (tiktoken_rs::o200k_base(), "o200k_base"),
            other => {
                return Err(ContextError::Tokenizer {
                    name: other.to_string(),
                    message: format!("unknown encoding, expected one of {:?}", Self::ENCODINGS),
                })
            }
        };
        let bpe = bpe.map_err(|e| ContextError::Tokenizer {
            name: name.to_string(),
            message: e.to_string(),
        })?;
        Ok(TiktokenCounter { bpe, name })
    }

    /// `cl100k_base`.
    pub fn cl100k() -> Result<Self, ContextError> {
        Self::new("cl100k_base")
    }
}

impl LlmTokens for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
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
