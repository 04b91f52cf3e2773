//! Sentence ranges: Unicode sentence boundaries (UAX #29), broken after every line end,
//! with whitespace-only pieces joined to the sentence before them.

use unicode_segmentation::UnicodeSegmentation;

/// Byte ranges `(start, end)` of the sentences of `text`, partitioning it exactly: no
/// gap, no overlap, none empty, in order.
///
/// Built on UAX #29 sentence boundaries (which also break after every line end, so each
/// line or paragraph ends a sentence). Whitespace after a sentence belongs to it: a
/// whitespace-only piece joins the sentence before it, or the one after it at the start
/// of the text. Empty text has no sentences; whitespace-only text is one sentence.
pub fn split_sentences(text: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    // Leading whitespace-only pieces waiting for a sentence.
    let mut lead: Option<usize> = None;
    for (start, piece) in text.split_sentence_bound_indices() {
        for (s, p) in split_lines(start, piece).flat_map(|(s, p)| split_at_thai_spaces(s, p)) {
            let end = s + p.len();
            if p.trim().is_empty() {
                match out.last_mut() {
                    Some(last) => last.1 = end,
                    None => {
                        lead.get_or_insert(s);
                    }
                }
            } else {
                out.push((lead.take().unwrap_or(s), end));
            }
        }
    }
    if let Some(s) = lead {
        // Only whitespace: one sentence.
        out.push((s, text.len()));
    }
    out
}

/// Whether `c` is a letter or mark of the Thai or Lao script.
fn is_thai(c: char) -> bool {
    matches!(c as u32, 0x0E00..=0x0EFF)
}

/// Splits a piece after each run of spaces between two Thai (or Lao) characters: those
/// scripts put no space between words and a space between sentences, which UAX #29 does
/// not know (a Thai paragraph is one sentence to it). The spaces stay with the sentence
/// before them.
fn split_at_thai_spaces(start: usize, piece: &str) -> Vec<(usize, &str)> {
    if piece.is_ascii() || !piece.chars().any(is_thai) {
        return vec![(start, piece)];
    }
    let mut out = Vec::new();
    let mut from = 0;
    let mut prev_thai = false;
    let mut spaces: Option<usize> = None;
    for (at, c) in piece.char_indices() {
        if c == ' ' || c == '\u{a0}' {
            if prev_thai && spaces.is_none() {
                spaces = Some(at);
            }
            continue;
        }
        if spaces.take().is_some() && is_thai(c) && at > from {
            out.push((start + from, &piece[from..at]));
            from = at;
        }
        prev_thai = is_thai(c);
    }
    out.push((start + from, &piece[from..]));
    out
}

/// Splits a piece after each `\n` (UAX #29 already does for paragraph separators; this
/// makes it independent of the version's rules).
fn split_lines(start: usize, piece: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = start;
    piece.split_inclusive('\n').map(move |l| {
        let s = at;
        at += l.len();
        (s, l)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str) -> Vec<&str> {
        split_sentences(text)
            .iter()
            .map(|&(a, b)| &text[a..b])
            .collect()
    }

    #[test]
    fn a_space_between_thai_words_ends_a_sentence() {
        let text = "กรุงเทพมหานครเป็นเมืองหลวง ประเทศไทยมีประชากรมาก\nNext line.";
        assert_eq!(
            texts(text),
            vec![
                "กรุงเทพมหานครเป็นเมืองหลวง ",
                "ประเทศไทยมีประชากรมาก\n",
                "Next line."
            ]
        );
        // Between a Thai word and a Latin one, a space is only a space.
        assert_eq!(texts("ภาษา Thai ภาษา"), vec!["ภาษา Thai ภาษา"]);
    }

    #[test]
    fn basic() {
        assert!(split_sentences("").is_empty());
        assert_eq!(texts("   \n "), vec!["   \n "]);
        assert_eq!(
            texts("Hello there.  How are you? Fine\nNext line\n\n\nPara two."),
            vec![
                "Hello there.  ",
                "How are you? ",
                "Fine\n",
                "Next line\n\n\n",
                "Para two."
            ]
        );
        assert_eq!(texts("\n\nStart. End"), vec!["\n\nStart. ", "End"]);
        assert_eq!(texts("a\r\nb"), vec!["a\r\n", "b"]);
    }

    proptest! {
        #[test]
        fn partitions(text in "(\\PC|[ \\n\\r\\t.!?]){0,200}") {
            let s = split_sentences(&text);
            let mut at = 0;
            for &(a, b) in &s {
                prop_assert_eq!(a, at);
                prop_assert!(b > a);
                prop_assert!(text.is_char_boundary(b));
                // No sentence spans a line end in its non-whitespace part.
                prop_assert!(!text[a..b].trim().contains('\n'));
                at = b;
            }
            prop_assert_eq!(at, text.len());
            prop_assert_eq!(s.is_empty(), text.is_empty());
        }
    }
}
