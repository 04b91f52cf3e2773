//! LLM token counting with OpenAI's BPE encodings (`cl100k_base`, `o200k_base`).
//!
//! Counting is done by the `bpe-openai` crate: the same counts as OpenAI's tiktoken
//! (checked against `tiktoken-rs` by a property test in `tests/token_bound.rs`) at about
//! twice tiktoken-rs's speed on prose (1.4× for o200k), which matters because assembly
//! counts every span it offers to the budget. The vocabularies are compiled into the
//! binary: no network access, no files at run time. Each encoding is deserialized once
//! per process, on first use.

use std::cell::RefCell;

use crate::context::LlmTokens;
use crate::error::ContextError;
use crate::pieces::cl100k_pieces;

/// Counts tokens of `cl100k_base` (GPT-3.5/GPT-4) or `o200k_base` (GPT-4o and later).
///
/// Text is encoded as ordinary text: special-token strings in documents (e.g.
/// `<|endoftext|>`) count as the ordinary tokens they are made of.
pub struct TiktokenCounter {
    bpe: &'static bpe_openai::Tokenizer,
    name: &'static str,
    /// The counts of short pieces ([`MEMO_PIECE_BYTES`]), one memo per thread that
    /// counts with this counter: the counter's own, dropped with it.
    pieces: thread_local::ThreadLocal<RefCell<PieceMemo>>,
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
        Ok(TiktokenCounter {
            bpe,
            name,
            pieces: thread_local::ThreadLocal::new(),
        })
    }

    /// `cl100k_base`.
    pub fn cl100k() -> Result<Self, ContextError> {
        Self::new("cl100k_base")
    }
}

impl LlmTokens for TiktokenCounter {
    /// `bpe_openai::Tokenizer::count`, with the count of each short piece of its
    /// pre-tokenization remembered: the count of a text is the sum of its pieces'
    /// counts, each a function of the piece alone, and most pieces (" the",
    /// " revenue") recur across the spans an assembly counts, so the sum is the
    /// crate's to the token. `cl100k_base`'s pieces are cut by `pieces::cl100k_pieces`
    /// (the crate's regex only where the text is not ASCII).
    fn count(&self, text: &str) -> usize {
        let text = self.bpe.normalize(text);
        let mut memo = self.pieces.get_or_default().borrow_mut();
        let mut piece_count = |piece: &str| {
            if piece.len() > MEMO_PIECE_BYTES {
                return self.bpe.bpe.count(piece.as_bytes());
            }
            if let Some(&n) = memo.get(piece) {
                return n as usize;
            }
            let n = self.bpe.bpe.count(piece.as_bytes());
            if memo.len() >= MEMO_PIECES {
                memo.clear();
            }
            memo.insert(piece.into(), n as u32);
            n
        };
        if self.name == "cl100k_base" {
            // The same pieces as the crate's split, most without its regex.
            let mut total = 0;
            cl100k_pieces(self.bpe, text.as_str(), |piece| total += piece_count(piece));
            total
        } else {
            self.bpe.split(text.as_str()).map(piece_count).sum()
        }
    }
    fn name(&self) -> &str {
        self.name
    }
    /// Whitespace-separated words: the cl100k and o200k pre-tokenizers never let a
    /// piece run from one word across whitespace into the next, so every word starts at
    /// least one token (checked by a property test).
    fn lower_bound(&self, text: &str) -> usize {
        words(text)
    }
}

/// A budget in characters instead of an LLM's tokens: every
/// [`CharCounter::CHARS_PER_TOKEN`] characters of a text count as one token, rounded up,
/// whatever the script (`--llm-encoding chars`: a budget of 500 holds 2000 characters).
/// For an LLM whose tokenizer is none of OpenAI's, and for measuring at a number of
/// characters, as the evaluation's scorers cut contexts (4 characters a budget token).
#[derive(Debug, Default, Clone, Copy)]
pub struct CharCounter;

impl CharCounter {
    /// Its encoding name.
    pub const NAME: &'static str = "chars";
    /// Characters a token.
    pub const CHARS_PER_TOKEN: usize = 4;
}

impl LlmTokens for CharCounter {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(Self::CHARS_PER_TOKEN)
    }
    fn name(&self) -> &str {
        Self::NAME
    }
    fn lower_bound(&self, text: &str) -> usize {
        self.count(text)
    }
}

/// Every encoding [`llm_counter`] accepts.
pub const LLM_ENCODINGS: [&str; 3] = ["o200k_base", "cl100k_base", CharCounter::NAME];

/// The counter of encoding `name`: a [`TiktokenCounter`] (`o200k_base`, `cl100k_base`)
/// or the [`CharCounter`] (`chars`).
pub fn llm_counter(name: &str) -> Result<std::sync::Arc<dyn LlmTokens + Send>, ContextError> {
    if name == CharCounter::NAME {
        return Ok(std::sync::Arc::new(CharCounter));
    }
    match TiktokenCounter::new(name) {
        Ok(t) => Ok(std::sync::Arc::new(t)),
        Err(_) => Err(ContextError::Tokenizer {
            name: name.to_string(),
            message: format!("unknown encoding, expected one of {LLM_ENCODINGS:?}"),
        }),
    }
}

/// Longest piece whose count [`TiktokenCounter::count`] remembers, in bytes.
const MEMO_PIECE_BYTES: usize = 32;

/// Pieces whose count a counter remembers per thread before it starts again (a few
/// megabytes at most).
const MEMO_PIECES: usize = 1 << 16;

type PieceMemo = std::collections::HashMap<Box<str>, u32, foldhash::fast::RandomState>;

/// `text.split_whitespace().count()`, several times faster: `rse` takes the lower bound
/// of every chunk within reach of a hit, a few megabytes of text for a long question.
///
/// The whitespace outside ASCII (U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028,
/// U+2029, U+202F, U+205F, U+3000) starts with one of four bytes; each of those bytes in
/// `text` is checked, and only a text that holds such whitespace is split the slow way.
/// Any other text splits at ASCII whitespace only, and the bytes of its other non-ASCII
/// characters are simply not whitespace, so its words are the runs of bytes that are
/// not ASCII whitespace: counted by comparing each byte with the one before, in blocks
/// the compiler turns into vector instructions.
pub(crate) fn words(text: &str) -> usize {
    let bytes = text.as_bytes();
    let lead = |c: u8| matches!(c, 0xC2 | 0xE1 | 0xE2 | 0xE3);
    let mut from = 0;
    while let Some(p) = bytes[from..].iter().position(|&c| lead(c)) {
        let at = from + p;
        // A lead byte starts a character, so `at` is a character boundary.
        if text[at..].chars().next().is_some_and(char::is_whitespace) {
            return text.split_whitespace().count();
        }
        from = at + 1;
    }
    let space = |c: u8| (c == b' ') | (c.wrapping_sub(b'\t') < 5);
    let Some(&first) = bytes.first() else {
        return 0;
    };
    let mut count = usize::from(!space(first));
    // Word starts: a byte that is not whitespace after one that is. At most 128 a block,
    // so a block's count fits in a byte.
    for (before, at) in bytes[..bytes.len() - 1]
        .chunks(128)
        .zip(bytes[1..].chunks(128))
    {
        let starts = before
            .iter()
            .zip(at)
            .map(|(&b, &c)| u8::from(space(b) & !space(c)))
            .fold(0u8, u8::wrapping_add);
        count += usize::from(starts);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::words;
    use proptest::prelude::*;

    #[test]
    fn chars_count_four_characters_a_token_in_any_script() {
        let c = super::llm_counter("chars").unwrap();
        assert_eq!(c.name(), "chars");
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("abcd"), 1);
        assert_eq!(c.count("abcde"), 2);
        // Characters, not bytes: eight Greek letters are 16 bytes and 2 tokens.
        assert_eq!(c.count("αβγδεζηθ"), 2);
        assert_eq!(c.lower_bound("αβγδεζηθ"), 2);
        assert_eq!(
            super::llm_counter("o200k_base").unwrap().name(),
            "o200k_base"
        );
        let err = super::llm_counter("gpt2").err().unwrap().to_string();
        assert!(err.contains("chars") && err.contains("o200k_base"), "{err}");
    }

    #[test]
    fn remembered_piece_counts_are_the_crates_in_either_encoding() {
        use crate::context::LlmTokens;
        let cl = super::TiktokenCounter::new("cl100k_base").unwrap();
        let o = super::TiktokenCounter::new("o200k_base").unwrap();
        // Pieces whose counts differ between the encodings, counted in turn on one
        // thread, twice (the second time from the memo), and a piece too long to keep.
        let texts = [
            " Nederlandse 🙂 naïve façade 1234567 ",
            "def __init__(self):\n\treturn {'k': [1, 2]}",
            &"x".repeat(100),
        ];
        for _ in 0..2 {
            for t in texts {
                assert_eq!(cl.count(t), cl.bpe.count(t), "{t:?}");
                assert_eq!(o.count(t), o.bpe.count(t), "{t:?}");
            }
        }
    }

    /// Every kind of whitespace, ASCII and not, and characters of one to four bytes,
    /// some of which begin with the bytes that non-ASCII whitespace begins with.
    const ALPHABET: &[char] = &[
        'a',
        'Z',
        '7',
        '.',
        ' ',
        '\t',
        '\n',
        '\u{b}',
        '\u{c}',
        '\r',
        '\u{85}',
        '\u{a0}',
        '\u{1680}',
        '\u{2000}',
        '\u{2007}',
        '\u{200a}',
        '\u{200b}',
        '\u{2028}',
        '\u{2029}',
        '\u{202f}',
        '\u{205f}',
        '\u{3000}',
        '\u{3001}',
        '\u{a9}',
        '\u{e9}',
        '\u{2019}',
        '\u{2014}',
        '\u{1681}',
        '\u{4e2d}',
        '\u{1f600}',
        '\u{1c}',
    ];

    proptest! {
        #[test]
        fn words_are_split_whitespace_counted(
            picks in proptest::collection::vec(0..ALPHABET.len(), 0..400)
        ) {
            let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
            prop_assert_eq!(words(&text), text.split_whitespace().count(), "{:?}", text);
        }

        #[test]
        fn words_of_text_without_unicode_spaces(
            picks in proptest::collection::vec(0..ALPHABET.len(), 0..400)
        ) {
            // The fast path only.
            let text: String = picks
                .iter()
                .map(|&i| ALPHABET[i])
                .filter(|c| c.is_ascii() || !c.is_whitespace())
                .collect();
            prop_assert_eq!(words(&text), text.split_whitespace().count(), "{:?}", text);
        }
    }
}
