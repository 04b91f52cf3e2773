//! Text on its way to a terminal: what a document, a model or an error message could
//! smuggle in (escape sequences, bidirectional controls) written as visible escapes.

/// Whether `c` must not reach a terminal raw: a control character (C0, DEL, C1: ESC
/// starts the sequences that move the cursor, set the title or write the clipboard, BEL
/// rings) or a bidirectional control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
/// U+061C), which reorders what is shown so that a line reads other than it is.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
        )
}

/// `s` with the characters `escape` picks written as escapes (`\n`, `\u{1b}`,
/// `\u{202e}`).
fn escaped(s: &str, escape: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(&escape) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` on one line for the terminal: every control character (newlines too) and
/// bidirectional control escaped. For ids, titles, sections and messages.
pub(crate) fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, unsafe_char)
}

/// `s` for the terminal with its lines and tabs kept: every other control character and
/// every bidirectional control escaped. For text bodies (contexts, answers): document
/// text and a model's answer must not be able to drive the terminal.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, |c| c != '\n' && c != '\t' && unsafe_char(c))
}
