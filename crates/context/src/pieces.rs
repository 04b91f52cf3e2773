//! `cl100k_base`'s pre-tokenization, decided byte by byte where the text is ASCII.
//!
//! Before its byte pairs are merged, a text is cut into pieces by a regular expression
//! (tiktoken's, which `bpe-openai` runs as three patterns with a look-ahead emulated):
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
//!   | ␠?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//! ```
//!
//! The first alternative that matches at a piece's start decides it. The budget check
//! counts every span it offers, and one anchored search of the regex per piece (about a
//! fifth of a microsecond) was most of that count: about a quarter of a millisecond of
//! every `auto` question (docs/history/benchmarks-2026-11-28.md). Among ASCII characters the
//! classes are plain byte tests (letters, digits, the six whitespace characters), so
//! [`cl100k_pieces`] decides each piece from its bytes, and hands a piece to the crate's
//! regex only when a byte it needs to look at is not ASCII (a letter such as `é` may
//! continue a word, `U+00A0` a run of whitespace, `ſ` a contraction). The regex, started
//! at that piece, cuts it as it would have in the whole text: it reads nothing before
//! its start. A property test holds the pieces to the crate's on text that mixes every
//! class with characters outside ASCII.

/// ASCII `\s` (Unicode `White_Space`): tab, line feed, vertical tab, form feed, carriage
/// return, space.
fn space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// ASCII `[^\s\p{L}\p{N}]`: punctuation, symbols and control characters.
fn other(b: u8) -> bool {
    b.is_ascii() && !space(b) && !b.is_ascii_alphanumeric()
}

/// Where the piece starting at `i` ends, or `None` when that depends on a character
/// that is not ASCII. `i < bytes.len()`.
fn piece_end(bytes: &[u8], i: usize) -> Option<usize> {
    let n = bytes.len();
    let at = |k: usize| bytes.get(k).copied();
    let c = bytes[i];
    if !c.is_ascii() {
        return None;
    }
    // The end of a run of ASCII bytes of `class` from `k`, or `None` when a byte that
    // is not ASCII stops it (it may be of the class).
    let run = |mut k: usize, class: fn(u8) -> bool| {
        while k < n && class(bytes[k]) {
            k += 1;
        }
        (k == n || bytes[k].is_ascii()).then_some(k)
    };
    // (?i:'s|'t|'re|'ve|'m|'ll|'d): case-insensitive in Unicode, where `ſ` is an `s`
    // and the Kelvin sign a `k`, so a byte outside ASCII there leaves it undecided.
    if c == b'\'' {
        match at(i + 1) {
            Some(b) if !b.is_ascii() => return None,
            Some(b) => match b.to_ascii_lowercase() {
                b's' | b't' | b'm' | b'd' => return Some(i + 2),
                first @ (b'r' | b'v' | b'l') => {
                    let second = if first == b'l' { b'l' } else { b'e' };
                    match at(i + 2) {
                        Some(b) if !b.is_ascii() => return None,
                        Some(b) if b.to_ascii_lowercase() == second => return Some(i + 3),
                        _ => {}
                    }
                }
                _ => {}
            },
            None => {}
        }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if c.is_ascii_alphabetic() {
        return run(i + 1, |b| b.is_ascii_alphabetic());
    }
    let lead = c != b'\r' && c != b'\n' && !c.is_ascii_digit();
    if lead {
        match at(i + 1) {
            Some(b) if !b.is_ascii() => return None,
            Some(b) if b.is_ascii_alphabetic() => return run(i + 2, |b| b.is_ascii_alphabetic()),
            _ => {}
        }
    }
    // \p{N}{1,3}
    if c.is_ascii_digit() {
        let mut k = i + 1;
        while k < n && k < i + 3 && bytes[k].is_ascii_digit() {
            k += 1;
        }
        if k < i + 3 && k < n && !bytes[k].is_ascii() {
            return None;
        }
        return Some(k);
    }
    // ␠?[^\s\p{L}\p{N}]+[\r\n]*
    let from = if c == b' ' {
        match at(i + 1) {
            Some(b) if !b.is_ascii() => return None,
            Some(b) if other(b) => Some(i + 1),
            _ => None,
        }
    } else if other(c) {
        Some(i)
    } else {
        None
    };
    if let Some(from) = from {
        let mut k = run(from, other)?;
        while k < n && matches!(bytes[k], b'\r' | b'\n') {
            k += 1;
        }
        return Some(k);
    }
    // What is left is whitespace. Its run, which a character outside ASCII may extend.
    debug_assert!(space(c));
    let end = run(i, space)?;
    // \s*[\r\n]+: up to the run's last line break.
    if let Some(last) = bytes[i..end]
        .iter()
        .rposition(|&b| b == b'\r' || b == b'\n')
    {
        return Some(i + last + 1);
    }
    // \s+(?!\S): the whole run at the end of the text, else all of it but the last
    // character (which goes with what follows), else (one character) \s+.
    if end == n || end - i == 1 {
        Some(end)
    } else {
        Some(end - 1)
    }
}

/// Calls `f` with each piece of `text` in `cl100k_base`'s pre-tokenization, in order:
/// the pieces of `tokenizer.split(text)` for the `cl100k_base` tokenizer.
pub(crate) fn cl100k_pieces<'a>(
    tokenizer: &bpe_openai::Tokenizer,
    text: &'a str,
    mut f: impl FnMut(&'a str),
) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let end = match piece_end(bytes, i) {
            Some(end) => end,
            // The crate's regex at this piece: a split of the rest of the text starts
            // with the piece the split of the whole text has here.
            None => {
                let rest = &text[i..];
                i + tokenizer.split(rest).next().map_or(rest.len(), str::len)
            }
        };
        f(&text[i..end]);
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pieces(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        cl100k_pieces(bpe_openai::cl100k_base(), text, |p| out.push(p));
        out
    }

    fn crates(text: &str) -> Vec<&str> {
        bpe_openai::cl100k_base().split(text).collect()
    }

    /// Every class of the pattern in ASCII, the letters of the contractions in both
    /// cases, and characters outside ASCII beside them: letters (`é`, `ſ`, which folds
    /// to `s`, the Kelvin sign), digits (`٣`, `²`), whitespace (`U+0085`, `U+00A0`,
    /// `U+2003`), a combining mark, punctuation, CJK and an emoji.
    const ALPHABET: &[&str] = &[
        "a",
        "Z",
        "s",
        "S",
        "t",
        "T",
        "r",
        "R",
        "e",
        "E",
        "v",
        "V",
        "l",
        "L",
        "m",
        "M",
        "d",
        "D",
        "x",
        "0",
        "7",
        "42",
        "1234",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\u{b}",
        "\u{c}",
        "'",
        "'s",
        "'LL",
        "'re",
        "'ve",
        ".",
        ",",
        "(",
        "-",
        "$",
        "\u{0}",
        "\u{1c}",
        "\u{7f}",
        "\u{17f}",
        "\u{212a}",
        "\u{e9}",
        "\u{663}",
        "\u{b2}",
        "\u{85}",
        "\u{a0}",
        "\u{2003}",
        "\u{301}",
        "\u{2019}",
        "\u{2014}",
        "\u{4e2d}",
        "\u{1f600}",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn the_pieces_are_the_crates(picks in proptest::collection::vec(0..ALPHABET.len(), 0..60)) {
            let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
            prop_assert_eq!(pieces(&text), crates(&text), "{:?}", text);
        }

        #[test]
        fn the_pieces_of_ascii_are_the_crates(text in "[ -~\t\n\r\u{b}\u{c}\u{0}]{0,80}") {
            prop_assert_eq!(pieces(&text), crates(&text), "{:?}", text);
        }
    }

    #[test]
    fn the_pieces_of_documents_are_the_crates() {
        for text in [
            include_str!("../../../README.md"),
            include_str!("../../../docs/ARCHITECTURE.md"),
            include_str!("../../../docs/BENCHMARKS.md"),
            include_str!("pieces.rs"),
            "Line one.\r\n\r\n  Indented   text\twith\ttabs <|endoftext|> and 12345678.\n \n",
            "They'll say it's the CEO’s “plan” — naïve, 12½ % of ٣٤٥ ſ'ſ \u{a0}\u{a0}x  ",
        ] {
            assert_eq!(pieces(text), crates(text));
        }
    }
}
