//! The format loaders: each turns the text of one file of its format into
//! [`ParsedDocument`](crate::ParsedDocument)s. They build on `parsed` and are
//! chosen by `load`; they never import from it. The JSONL loader reuses the
//! Markdown loader's structure scan for headings inside JSONL texts.

pub(crate) mod docx;
pub(crate) mod html;
pub(crate) mod jsonl;
pub(crate) mod markdown;
pub(crate) mod pdf;
pub(crate) mod text;
