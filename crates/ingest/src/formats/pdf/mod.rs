//! PDF through PDFium (Chrome's PDF engine). Two parts: [`binding`] opens the file with
//! PDFium and reads each page's characters into lines with their font, size and position
//! (and the outline); [`layout`] is a pure engine over those lines that builds the
//! document text, its headings and its pages (so every offset is exact by construction,
//! and the layout rules are tested without PDFium).

mod binding;
mod layout;

pub(crate) use binding::load;
pub use binding::{pdfium_library_path, PDFIUM_ENV};
