//! Plain text: the text is the document, with no structure.

use crate::parsed::ParsedDocument;

/// `base` with `text` as its text (already decoded and newline-normalised), no sections
/// and no atomic ranges.
pub(crate) fn load(base: ParsedDocument, text: &str) -> ParsedDocument {
    ParsedDocument {
        text: text.to_string(),
        ..base
    }
}
