//! The LLM token counters agree with tiktoken, and `LlmTokens::lower_bound` never exceeds
//! the exact count: the budget check rejects spans by it without counting, so a wrong
//! bound would drop context that fits.

use std::sync::LazyLock;

use excerpt_context::{LlmTokens, TiktokenCounter};
use proptest::prelude::*;

/// Built once: loading an encoding takes far longer than counting.
static COUNTERS: LazyLock<[TiktokenCounter; 2]> = LazyLock::new(|| {
    [
        TiktokenCounter::new("cl100k_base").unwrap(),
        TiktokenCounter::new("o200k_base").unwrap(),
    ]
});

/// Text made of pieces that stress the pre-tokenizer: words, digits, punctuation runs,
/// contractions, every kind of whitespace, CJK and emoji.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z]{1,12}",
        "[0-9]{1,7}",
        "[.,;:!?()\\[\\]{}'\"/\\\\-]{1,4}",
        Just("'s".to_string()),
        Just("'LL".to_string()),
        "[ \t\n\r]{1,3}",
        Just("\u{a0}".to_string()),
        Just("\u{2003}".to_string()),
        Just("\u{85}".to_string()),
        Just("\u{3000}".to_string()),
        "[\u{4e00}-\u{4e20}]{1,4}",
        Just("😀".to_string()),
        Just("é".to_string()),
        "\\PC{1,3}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

/// The reference implementation: OpenAI's tiktoken as ported by tiktoken-rs.
static REFERENCE: LazyLock<[(&str, tiktoken_rs::CoreBPE); 2]> = LazyLock::new(|| {
    [
        ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
        ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
    ]
});

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The counter (bpe-openai) gives tiktoken's counts, special-token text included.
    #[test]
    fn counts_equal_tiktoken(t in text()) {
        for (c, (name, reference)) in COUNTERS.iter().zip(REFERENCE.iter()) {
            prop_assert_eq!(c.name(), *name);
            prop_assert_eq!(c.count(&t), reference.encode_ordinary(&t).len(), "{}: {:?}", name, t);
        }
    }

    #[test]
    fn word_count_bounds_tiktoken_counts(t in text()) {
        for c in COUNTERS.iter() {
            prop_assert!(c.lower_bound(&t) <= c.count(&t), "{}: {t:?}", c.name());
        }
    }
}

#[test]
fn counts_equal_tiktoken_on_documents() {
    let docs = [
        include_str!("../../../README.md"),
        include_str!("../../../docs/ARCHITECTURE.md"),
        "Line one.\r\n\r\n  Indented   text\twith\ttabs <|endoftext|> and 12345678 digits.",
    ];
    for d in docs {
        for (c, (name, reference)) in COUNTERS.iter().zip(REFERENCE.iter()) {
            assert_eq!(c.count(d), reference.encode_ordinary(d).len(), "{name}");
        }
    }
}

#[test]
fn bound_is_tight_on_plain_prose() {
    let c = TiktokenCounter::cl100k().unwrap();
    let t = "the cat sat on the mat and looked at the dog";
    assert_eq!(c.lower_bound(t), c.count(t));
}
