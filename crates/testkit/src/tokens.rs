//! Tokenizers for tests, [`TokenCounter`]s without a model: [`WordCounter`] (runs of
//! letters and digits are one token each, every other visible character is one, as a
//! WordPiece tokenizer roughly splits words and punctuation) and [`WhitespaceCounter`]
//! (whitespace-separated words). Both say a sequence holds 256 tokens.

use excerpt_core::TokenCounter;

/// Runs of alphanumerics are one token, every other non-whitespace character is one
/// token; whitespace is no token.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordCounter;

impl TokenCounter for WordCounter {
    fn token_spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut word: Option<usize> = None;
        for (i, c) in text.char_indices() {
            if c.is_alphanumeric() {
                word.get_or_insert(i);
                continue;
            }
            if let Some(s) = word.take() {
                out.push((s, i));
            }
            if !c.is_whitespace() {
                out.push((i, i + c.len_utf8()));
            }
        }
        if let Some(s) = word {
            out.push((s, text.len()));
        }
        out
    }

    fn max_sequence_tokens(&self) -> usize {
        256
    }
}

/// Each run of non-whitespace characters is one token.
#[derive(Debug, Clone, Copy, Default)]
pub struct WhitespaceCounter;

impl TokenCounter for WhitespaceCounter {
    fn token_spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (c.is_whitespace(), start) {
                (true, Some(s)) => {
                    spans.push((s, i));
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        spans
    }

    fn max_sequence_tokens(&self) -> usize {
        256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_punctuation_and_whitespace() {
        let text = "Héllo, wörld  x2!";
        let words: Vec<&str> = WordCounter
            .token_spans(text)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect();
        assert_eq!(words, ["Héllo", ",", "wörld", "x2", "!"]);
        let words: Vec<&str> = WhitespaceCounter
            .token_spans(text)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect();
        assert_eq!(words, ["Héllo,", "wörld", "x2!"]);
    }
}
