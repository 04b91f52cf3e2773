//! [`Text`]: a document's text, owned or left in place in a shared read-only buffer.
//!
//! The embedded index keeps a snapshot's document texts in the segment files, mapped
//! into memory, instead of copying them onto the heap: at a million chunks the texts
//! are most of what a snapshot would otherwise hold. A [`Text`] is either an owned
//! `String` or a byte range of such a buffer; both read as a `&str` (it dereferences to
//! `str`), compare, hash, print and serialise as the string they hold.
//!
//! A range of a buffer is checked to be UTF-8 once, the first time it is read, and the
//! result is kept: a document whose text is never read costs nothing, and its pages of
//! the file are never brought into memory. Bytes that are not UTF-8 (which a checksummed
//! segment cannot hold) read as their lossy conversion rather than as garbage or a panic.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A read-only buffer texts can be left in (a memory-mapped file, or any bytes).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A document's text: owned, or a range of a [`SharedBytes`] buffer read in place.
#[derive(Clone, Default)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Owned(String),
    InPlace(Arc<InPlace>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Owned(String::new())
    }
}

struct InPlace {
    buffer: SharedBytes,
    range: Range<usize>,
    /// Set on first read: `None` when the range is UTF-8 (read in place), or its lossy
    /// conversion when it is not.
    checked: OnceLock<Option<String>>,
}

impl Text {
    /// The bytes `range` of `buffer`, read in place; `None` when the range is not inside
    /// the buffer.
    pub fn in_place(buffer: SharedBytes, range: Range<usize>) -> Option<Text> {
        let len = (*buffer).as_ref().len();
        (range.start <= range.end && range.end <= len).then(|| {
            Text(Repr::InPlace(Arc::new(InPlace {
                buffer,
                range,
                checked: OnceLock::new(),
            })))
        })
    }

    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Owned(s) => s,
            Repr::InPlace(p) => {
                let bytes = &(*p.buffer).as_ref()[p.range.clone()];
                let lossy = p.checked.get_or_init(|| match std::str::from_utf8(bytes) {
                    Ok(_) => None,
                    Err(_) => Some(String::from_utf8_lossy(bytes).into_owned()),
                });
                match lossy {
                    Some(s) => s,
                    None => checked_str(bytes),
                }
            }
        }
    }

    /// Whether the text is read in place from a shared buffer (not owned).
    pub fn is_in_place(&self) -> bool {
        matches!(self.0, Repr::InPlace(_))
    }

    /// The text as an owned `String` (a copy when it is read in place).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s,
            Repr::InPlace(_) => self.as_str().to_string(),
        }
    }
}

/// `bytes` as a string slice, once `std::str::from_utf8` has accepted them.
#[allow(unsafe_code)]
fn checked_str(bytes: &[u8]) -> &str {
    // SAFETY: only called on the range of an `InPlace` whose check found it UTF-8 (the
    // result is kept, so it is checked once), and the buffer is read-only: `SharedBytes`
    // gives no way to change it, and the index maps only files it never rewrites.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Repr::Owned(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Repr::Owned(s.to_string()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.into_string()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(bytes: &[u8]) -> SharedBytes {
        Arc::new(bytes.to_vec())
    }

    #[test]
    fn a_range_reads_in_place_and_equals_its_owned_copy() {
        let buf = shared("héllo wörld".as_bytes());
        let t = Text::in_place(buf.clone(), 0..6).unwrap();
        assert!(t.is_in_place());
        assert_eq!(t.as_str(), "héllo");
        assert_eq!(t, Text::from("héllo"));
        assert_eq!(t.len(), 6);
        assert_eq!(format!("{t:?}"), "\"héllo\"");
        assert_eq!(t.clone().into_string(), "héllo");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"héllo\"");
        let back: Text = serde_json::from_str("\"héllo\"").unwrap();
        assert!(!back.is_in_place());
        assert_eq!(back, t);
        assert!(Text::in_place(buf.clone(), 3..20).is_none());
        assert!(Text::in_place(buf, 13..14).is_none());
    }

    #[test]
    fn bytes_that_are_not_utf8_read_as_their_lossy_conversion() {
        // A range that cuts "é" in two.
        let t = Text::in_place(shared("é!".as_bytes()), 1..3).unwrap();
        assert_eq!(t.as_str(), "\u{fffd}!");
    }
}
