//! `LlmTokens::lower_bound` of the tiktoken counters never exceeds the exact count: the
//! budget check rejects spans by it without counting, so a wrong bound would drop
//! context that fits.

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn word_count_bounds_tiktoken_counts(t in text()) {
        for c in COUNTERS.iter() {
            prop_assert!(c.lower_bound(&t) <= c.count(&t), "{}: {t:?}", c.name());
        }
    }
}

#[test]
fn bound_is_tight_on_plain_prose() {
    let c = TiktokenCounter::cl100k().unwrap();
    let t = "the cat sat on the mat and looked at the dog";
    assert_eq!(c.lower_bound(t), c.count(t));
}
