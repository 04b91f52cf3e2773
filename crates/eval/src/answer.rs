//! Answer-level evaluation: the prompt that asks an LLM to answer from a context, and the
//! SQuAD-style scores of its answer against the reference (`token_f1`, `exact_match`).
//!
//! The prompt is a system message ([`SYSTEM_PROMPT`]) and a user message
//! ([`answer_prompt`]): the context rendered by [`render_text`] (the plain-text rendering
//! the CLI hands to LLMs, without its closing instruction), then the question, then a
//! request to answer briefly from the context. [`PROMPT_VERSION`] names this wording in
//! `report.json`; change it whenever the wording changes, since scores from different
//! prompts are not comparable.
//!
//! Scores compare normalised tokens ([`normalize_tokens`]): lowercased, punctuation
//! deleted, split on whitespace, the articles `a`, `an`, `the` dropped, as the SQuAD
//! evaluation script does. [`token_f1`] is the harmonic mean of token precision and
//! recall over the multiset overlap; [`exact_match`] compares the token sequences.

use std::collections::HashMap;

use excerpt_context::{render_text, Context, RenderOptions};
use serde::{Deserialize, Serialize};

/// Version of the answer prompt; recorded in the report with the scores.
pub const PROMPT_VERSION: &str = "answer-v1";

/// The system message of every answer request.
pub const SYSTEM_PROMPT: &str = "You answer questions using only the document excerpts you \
are given. Answer briefly: a short phrase or one sentence, with no preamble. If the excerpts \
do not contain the answer, say \"I don't know\".";

/// The closing request of the user message, after the question.
const ANSWER_REQUEST: &str = "Answer briefly from the context above.";

/// The user message asking for an answer to `question` from `context`: the context as
/// [`render_text`] renders it (no closing instruction), the question, and a request to
/// answer briefly from the context.
pub fn answer_prompt(question: &str, context: &Context) -> String {
    let rendered = render_text(
        context,
        &RenderOptions {
            closing_instruction: None,
        },
    );
    format!(
        "{}\nQuestion: {}\n\n{ANSWER_REQUEST}\n",
        rendered.trim_end(),
        question.trim()
    )
}

/// Whether `c` is deleted by normalisation: ASCII punctuation (SQuAD's set), Latin-1
/// punctuation (`¡ « » ¿ ·` ...) and the General Punctuation block (curly quotes,
/// dashes, ellipsis), so `Zoé’s` and `Zoé's` normalise alike.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            c,
            '\u{a1}' | '\u{a7}' | '\u{ab}' | '\u{b6}' | '\u{b7}' | '\u{bb}' | '\u{bf}'
        )
        || ('\u{2010}'..='\u{2027}').contains(&c)
        || ('\u{2030}'..='\u{205e}').contains(&c)
}

/// The normalised tokens of an answer: lowercased, punctuation deleted (not replaced:
/// `liquid-fuel` becomes `liquidfuel`), split on whitespace, `a`/`an`/`the` dropped.
pub fn normalize_tokens(text: &str) -> Vec<String> {
    let cleaned: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !is_punctuation(*c))
        .collect();
    cleaned
        .split_whitespace()
        .filter(|t| !matches!(*t, "a" | "an" | "the"))
        .map(str::to_string)
        .collect()
}

/// Token F1 of `prediction` against `reference` over normalised tokens:
/// with `common` the size of the multiset intersection, `P = common / |prediction|`,
/// `R = common / |reference|` and `F1 = 2PR / (P + R)` (0 when nothing is shared). When
/// either side has no tokens, F1 is 1 if both are empty and 0 otherwise.
pub fn token_f1(prediction: &str, reference: &str) -> f64 {
    let pred = normalize_tokens(prediction);
    let gold = normalize_tokens(reference);
    if pred.is_empty() || gold.is_empty() {
        return if pred.is_empty() && gold.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &gold {
        *counts.entry(t.as_str()).or_insert(0) += 1;
    }
    let mut common = 0usize;
    for t in &pred {
        if let Some(n) = counts.get_mut(t.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let p = common as f64 / pred.len() as f64;
    let r = common as f64 / gold.len() as f64;
    2.0 * p * r / (p + r)
}

/// Whether `prediction` and `reference` have the same normalised tokens, in order.
pub fn exact_match(prediction: &str, reference: &str) -> bool {
    normalize_tokens(prediction) == normalize_tokens(reference)
}

/// One line of `answers-<strategy>-<budget>.jsonl`: the endpoint's answer to one query
/// from one strategy's context at one budget, and its scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLine {
    /// The query's id.
    pub query_id: String,
    /// The endpoint's answer, as returned.
    pub answer: String,
    /// The reference answer of the query.
    pub reference: String,
    /// [`token_f1`] of the answer against the reference (rounded to 4 decimals).
    pub f1: f64,
    /// [`exact_match`] of the answer and the reference.
    pub em: bool,
    /// Prompt tokens the endpoint reported (`null` when it reports no usage).
    pub prompt_tokens: Option<u64>,
    /// Completion tokens the endpoint reported (`null` when it reports no usage).
    pub completion_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn normalisation_drops_case_punctuation_and_articles() {
        assert_eq!(
            normalize_tokens("The  Owner, Zoé’s café — an A-frame!"),
            ["owner", "zoés", "café", "aframe"]
        );
        assert_eq!(normalize_tokens("Zoé's"), normalize_tokens("Zoé’s"));
        assert!(normalize_tokens(" the a an ... ").is_empty());
        // Articles are whole tokens only.
        assert_eq!(normalize_tokens("theatre another"), ["theatre", "another"]);
    }

    #[test]
    fn identical_answers_score_one() {
        assert!(close(token_f1("Zoé, on Tuesdays", "zoé on tuesdays."), 1.0));
        assert!(exact_match("Zoé, on Tuesdays", "zoé on tuesdays."));
        assert!(exact_match("The 1872", "1872"));
    }

    #[test]
    fn disjoint_answers_score_zero() {
        assert_eq!(token_f1("kerosene", "1872"), 0.0);
        assert!(!exact_match("kerosene", "1872"));
    }

    #[test]
    fn partial_overlap() {
        // prediction: owner zoé roasts beans herself on tuesdays (7 tokens),
        // reference: zoé on tuesdays (3); 3 shared: P = 3/7, R = 1, F1 = 0.6.
        let f1 = token_f1(
            "The owner, Zoé, roasts the beans herself on Tuesdays.",
            "Zoé, on Tuesdays",
        );
        assert!(close(f1, 0.6), "{f1}");
        // One of two tokens each way: P = R = 1/2.
        assert!(close(token_f1("liquid oxygen", "oxygen tanks"), 0.5));
        // Order does not matter for F1, but does for exact match.
        assert!(close(token_f1("tuesdays on zoé", "zoé on tuesdays"), 1.0));
        assert!(!exact_match("tuesdays on zoé", "zoé on tuesdays"));
    }

    #[test]
    fn duplicates_count_as_a_multiset() {
        // prediction: 4 tokens, reference: 2 with one "rocket"; shared: 1 "rocket".
        // P = 1/4, R = 1/2, F1 = 2 * 1/8 / (3/4) = 1/3.
        let f1 = token_f1("rocket rocket rocket fuel", "rocket engine");
        assert!(close(f1, 1.0 / 3.0), "{f1}");
        // Two shared when both sides repeat: P = 2/3, R = 1, F1 = 0.8.
        assert!(close(token_f1("go go stop", "go go"), 0.8));
    }

    #[test]
    fn empty_answers() {
        assert_eq!(token_f1("", ""), 1.0);
        assert_eq!(token_f1("the", "a"), 1.0);
        assert_eq!(token_f1("", "1872"), 0.0);
        assert_eq!(token_f1("1872", "  "), 0.0);
        assert!(exact_match("", "."));
        assert!(!exact_match("", "1872"));
    }

    #[test]
    fn prompt_holds_context_then_question() {
        let context = Context {
            pieces: Vec::new(),
            strategy: "topk".into(),
            budget: 100,
            tokens: 0,
            order: Default::default(),
            notes: Vec::new(),
            warnings: Vec::new(),
            timings: None,
        };
        let p = answer_prompt("  When did the railway arrive? ", &context);
        let ctx_at = p.find("=== END OF DOCUMENT CONTEXT ===").unwrap();
        let q_at = p.find("Question: When did the railway arrive?\n").unwrap();
        let ask_at = p.find("Answer briefly from the context").unwrap();
        assert!(ctx_at < q_at && q_at < ask_at, "{p}");
        assert!(!p.contains(excerpt_context::render::DEFAULT_CLOSING_INSTRUCTION));
    }
}
