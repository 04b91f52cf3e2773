use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A half-open range of a document's text, as bytes (for slicing) and characters
/// (Unicode scalar values, the offsets users and the eval format see).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TextRange {
    /// Byte offset of the start.
    pub byte_start: usize,
    /// Byte offset of the end (exclusive).
    pub byte_end: usize,
    /// Character offset of the start.
    pub char_start: usize,
    /// Character offset of the end (exclusive).
    pub char_end: usize,
}

impl TextRange {
    /// The slice of `text` this range covers. Panics only if the range was built for
    /// another text, which the constructors rule out.
    pub fn slice<'a>(&self, text: &'a str) -> &'a str {
        &text[self.byte_start..self.byte_end]
    }
    /// Length in bytes.
    pub fn byte_len(&self) -> usize {
        self.byte_end - self.byte_start
    }
    /// Length in characters.
    pub fn char_len(&self) -> usize {
        self.char_end - self.char_start
    }
    /// True when the range covers nothing.
    pub fn is_empty(&self) -> bool {
        self.byte_start == self.byte_end
    }
    /// The smallest range covering both.
    pub fn cover(&self, other: &TextRange) -> TextRange {
        TextRange {
            byte_start: self.byte_start.min(other.byte_start),
            byte_end: self.byte_end.max(other.byte_end),
            char_start: self.char_start.min(other.char_start),
            char_end: self.char_end.max(other.char_end),
        }
    }
}

/// Maps byte offsets of one text to character offsets in O(log n) after an O(n) build.
///
/// Stores the byte offset of every 64th character, then counts the rest. Borrows its
/// text ([`CharIndex::new`]) or owns it ([`CharIndex::owned`], a `CharIndex<'static>`
/// that can be kept in a map beside other texts).
#[derive(Debug, Clone)]
pub struct CharIndex<'a> {
    text: Cow<'a, str>,
    /// `marks[i]` is the byte offset of character `i * STRIDE`.
    marks: Vec<usize>,
}

const STRIDE: usize = 64;

impl CharIndex<'static> {
    /// Builds the index for `text`, which it keeps.
    pub fn owned(text: String) -> Self {
        CharIndex::build(Cow::Owned(text))
    }
}

impl<'a> CharIndex<'a> {
    /// Builds the index for `text`.
    pub fn new(text: &'a str) -> Self {
        Self::build(Cow::Borrowed(text))
    }

    fn build(text: Cow<'a, str>) -> Self {
        let marks = text
            .char_indices()
            .step_by(STRIDE)
            .map(|(b, _)| b)
            .collect();
        CharIndex { text, marks }
    }

    /// The text this index was built for.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Character offset of byte offset `byte`, or `None` when `byte` is not a char
    /// boundary of the text (the end of the text is a boundary).
    pub fn char_offset(&self, byte: usize) -> Option<usize> {
        if !self.text.is_char_boundary(byte) {
            return None;
        }
        let mark = match self.marks.binary_search(&byte) {
            Ok(i) => return Some(i * STRIDE),
            Err(0) => return Some(0),
            Err(i) => i - 1,
        };
        let from = self.marks[mark];
        Some(mark * STRIDE + self.text[from..byte].chars().count())
    }

    /// Byte offset of character offset `ch`, or `None` past the end.
    pub fn byte_offset(&self, ch: usize) -> Option<usize> {
        let mark = ch / STRIDE;
        let Some(&from) = self.marks.get(mark) else {
            return (ch == self.char_len()).then_some(self.text.len());
        };
        match self.text[from..].char_indices().nth(ch - mark * STRIDE) {
            Some((b, _)) => Some(from + b),
            None => (ch == self.char_len()).then_some(self.text.len()),
        }
    }

    /// Number of characters in the text.
    pub fn char_len(&self) -> usize {
        match self.marks.last() {
            None => 0,
            Some(&b) => (self.marks.len() - 1) * STRIDE + self.text[b..].chars().count(),
        }
    }

    /// A [`TextRange`] from byte offsets, checked.
    pub fn range(&self, byte_start: usize, byte_end: usize) -> Result<TextRange, crate::Error> {
        let bad = || crate::Error::BadRange {
            start: byte_start,
            end: byte_end,
            len: self.text.len(),
        };
        if byte_start > byte_end || byte_end > self.text.len() {
            return Err(bad());
        }
        let char_start = self.char_offset(byte_start).ok_or_else(bad)?;
        let char_end = self.char_offset(byte_end).ok_or_else(bad)?;
        Ok(TextRange {
            byte_start,
            byte_end,
            char_start,
            char_end,
        })
    }

    /// `text[start..end]` in character offsets, or `None` when `start > end` or `end` is
    /// past the end of the text.
    pub fn slice_chars(&self, start: usize, end: usize) -> Option<&str> {
        let range = self.range_chars(start, end).ok()?;
        Some(range.slice(&self.text))
    }

    /// A [`TextRange`] from character offsets, checked.
    pub fn range_chars(
        &self,
        char_start: usize,
        char_end: usize,
    ) -> Result<TextRange, crate::Error> {
        let bad = || crate::Error::BadRange {
            start: char_start,
            end: char_end,
            len: self.text.len(),
        };
        if char_start > char_end {
            return Err(bad());
        }
        let byte_start = self.byte_offset(char_start).ok_or_else(bad)?;
        let byte_end = self.byte_offset(char_end).ok_or_else(bad)?;
        Ok(TextRange {
            byte_start,
            byte_end,
            char_start,
            char_end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn char_offsets_agree_with_naive(text in "\\PC{0,300}") {
            let idx = CharIndex::new(&text);
            let naive: Vec<usize> = text.char_indices().map(|(b, _)| b).chain([text.len()]).collect();
            prop_assert_eq!(idx.char_len(), naive.len() - 1);
            for (ch, &b) in naive.iter().enumerate() {
                prop_assert_eq!(idx.char_offset(b), Some(ch));
                prop_assert_eq!(idx.byte_offset(ch), Some(b));
            }
            prop_assert_eq!(idx.byte_offset(naive.len()), None);
        }
    }

    #[test]
    fn rejects_non_boundaries() {
        let idx = CharIndex::new("héllo");
        assert!(idx.range(0, 2).is_err());
        assert_eq!(idx.range(0, 3).unwrap().char_end, 2);
        assert!(idx.range(3, 100).is_err());
    }

    #[test]
    fn owned_index_slices_by_characters() {
        let idx = CharIndex::owned("héllo wörld".repeat(20));
        assert_eq!(idx.char_len(), 220);
        assert_eq!(idx.slice_chars(1, 5), Some("éllo"));
        assert_eq!(idx.slice_chars(217, 220), Some("rld"));
        assert_eq!(idx.slice_chars(220, 220), Some(""));
        assert_eq!(idx.slice_chars(5, 4), None);
        assert_eq!(idx.slice_chars(0, 221), None);
        assert_eq!(idx.text().len(), "héllo wörld".len() * 20);
    }
}
