//! PDF through PDFium (Chrome's PDF engine). Two parts: [`binding`] opens the file with
//! PDFium and reads each page's characters into lines with their font, size and position
//! (and the outline); [`layout`] is a pure engine over those lines that builds the
//! document text, its headings and its pages (so every offset is exact by construction,
//! and the layout rules are tested without PDFium). [`pages`] renders a page of an
//! indexed PDF with ranges of its text outlined, for the inspector.

mod binding;
mod layout;
mod pages;

pub(crate) use binding::load;
pub use binding::{pdfium_library_path, PDFIUM_ENV};
pub(crate) use pages::render_page;
pub use pages::{
    PageError, PageImage, PageRequest, PixelBox, DEFAULT_PAGE_WIDTH, MAX_PAGE_WIDTH, MIN_PAGE_WIDTH,
};
