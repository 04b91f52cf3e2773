//! Clauses of a sentence and list enumerators.

use excerpt_core::TextRange;

/// The clauses of sentence `s` of `text`: the sentence cut after a semicolon (and the
/// spaces after it) and before an enumerator such as `(a)`, `(iv)` or `(2)` that follows a
/// space, with pieces shorter than `min_chars` characters joined to their neighbour. The
/// clauses partition the sentence exactly; a sentence without such cuts is one clause.
pub(crate) fn clauses(text: &str, s: TextRange, min_chars: usize) -> Vec<TextRange> {
    let body = s.slice(text);
    // Cut points as (byte offset in body, char offset in body).
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (b, c) = chars[i];
        if c == ';' {
            let mut j = i + 1;
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
            if j > i + 1 && j < chars.len() {
                cuts.push((chars[j].0, j));
            }
            i = j;
            continue;
        }
        if c == '(' && i > 0 && chars[i - 1].1.is_whitespace() {
            let inner: String = chars[i + 1..]
                .iter()
                .take(6)
                .map(|x| x.1)
                .take_while(|&x| x != ')')
                .collect();
            let closes = chars
                .get(i + 1 + inner.chars().count())
                .is_some_and(|x| x.1 == ')');
            let enumerator = closes
                && !inner.is_empty()
                && (inner.chars().all(|x| x.is_ascii_digit()) && inner.len() <= 2
                    || inner.len() == 1 && inner.chars().all(|x| x.is_ascii_lowercase())
                    || inner.chars().all(|x| matches!(x, 'i' | 'v' | 'x')) && inner.len() <= 4);
            if enumerator && cuts.last().is_none_or(|&(cb, _)| cb != b) {
                cuts.push((b, i));
            }
        }
        i += 1;
    }
    let total_chars = chars.len();
    let mut bounds: Vec<(usize, usize)> = vec![(0, 0)];
    for cut in cuts {
        let last = *bounds.last().expect("non-empty");
        if cut.1 - last.1 >= min_chars && total_chars - cut.1 >= min_chars {
            bounds.push(cut);
        }
    }
    bounds.push((body.len(), total_chars));
    bounds
        .windows(2)
        .map(|w| TextRange {
            byte_start: s.byte_start + w[0].0,
            byte_end: s.byte_start + w[1].0,
            char_start: s.char_start + w[0].1,
            char_end: s.char_start + w[1].1,
        })
        .collect()
}

/// Whether `text` opens with a list enumerator: `(a)`, `(iv)`, `(2)`, `a)`, `iv)`, `2)`,
/// `a.`, `2.` or `1.6` (after leading spaces).
pub(crate) fn starts_with_enumerator(text: &str) -> bool {
    let t = text.trim_start();
    let t = t.strip_prefix('(').unwrap_or(t);
    // The label's characters are ASCII, so its length in bytes is the run of such
    // bytes (a byte of a longer character is never one of them).
    let (label, rest) = t.split_at(
        t.bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'.')
            .count(),
    );
    let label = label.trim_end_matches('.');
    if label.is_empty() || label.len() > 6 {
        return false;
    }
    let numeric = label
        .split('.')
        .all(|part| (1..=2).contains(&part.len()) && part.chars().all(|c| c.is_ascii_digit()));
    let roman = label.len() <= 4 && label.chars().all(|c| matches!(c, 'i' | 'v' | 'x'));
    let letter = label.len() == 1 && label.chars().all(|c| c.is_ascii_alphabetic());
    let closed = rest.starts_with(')')
        || (t[..t.len() - rest.len()].ends_with('.') || numeric)
            && rest.starts_with(|c: char| c.is_whitespace());
    (numeric || roman || letter) && closed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range_of(text: &str) -> TextRange {
        TextRange {
            byte_start: 0,
            byte_end: text.len(),
            char_start: 0,
            char_end: text.chars().count(),
        }
    }

    #[test]
    fn clauses_cut_at_semicolons_and_enumerators_and_partition_the_sentence() {
        let t = "Information that: (i) is public; (ii) was known before, or (iii) is received lawfully.";
        let parts: Vec<&str> = clauses(t, range_of(t), 10)
            .iter()
            .map(|r| r.slice(t))
            .collect();
        assert_eq!(
            parts,
            [
                "Information that: ",
                "(i) is public; ",
                "(ii) was known before, or ",
                "(iii) is received lawfully."
            ]
        );
        // Too-short pieces stay joined; character offsets follow multi-byte text.
        let t = "Ä; b; (c) ü is here and long enough";
        let r = clauses(t, range_of(t), 8);
        assert_eq!(r.iter().map(|r| r.slice(t)).collect::<String>(), t);
        for x in &r {
            assert_eq!(t[..x.byte_start].chars().count(), x.char_start);
            assert_eq!(t[..x.byte_end].chars().count(), x.char_end);
        }
        assert_eq!(clauses(t, range_of(t), 1000).len(), 1);
        assert!(clauses("(a) x", range_of("(a) x"), 0)
            .iter()
            .all(|r| !r.is_empty()));
    }

    #[test]
    fn enumerators_open_list_items() {
        for yes in [
            "(a) keep",
            "  (iv) was",
            "b) the",
            "2. The",
            "1.6 shall",
            "(12) x",
            "c. Other",
        ] {
            assert!(starts_with_enumerator(yes), "{yes}");
        }
        for no in [
            "The party",
            "I agree",
            "2018 was",
            "(hereinafter the",
            "Section 2",
            "",
            "(a",
        ] {
            assert!(!starts_with_enumerator(no), "{no}");
        }
    }
}
