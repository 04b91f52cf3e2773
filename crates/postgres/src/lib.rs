//! The PostgreSQL + pgvector index backend: one shared index for any number of query
//! servers and ingest workers.
//!
//! - [`PgIndex::connect`]: the pool (r2d2 over the blocking `postgres` client), the
//!   `vector` extension, the versioned schema ([`schema`]), the config row.
//! - Writes ([`PgIndex::replace`], [`PgIndex::delete`]): a document replace is one
//!   transaction under an advisory lock on the document id; an unchanged content hash
//!   writes nothing.
//! - Queries: [`PgIndex`] implements [`excerpt_retrieve::Store`] (dense through HNSW,
//!   lexical as BM25 over full text, documents fetched for the strategies); fusion
//!   and everything after it stay in Excerpt.
//! - Text PostgreSQL cannot store (a NUL character) is refused before it is sent, as a
//!   bad input naming the field ([`check_text`], [`PgError::Unstorable`]).
//! - Listings ([`PgIndex::list_documents`], [`PgIndex::document`], [`PgIndex::stats`],
//!   [`PgIndex::all_documents`]): what `excerpt docs`, `stats` and `eval` read.

#![forbid(unsafe_code)]

mod catalog;
mod error;
mod index;
pub mod schema;
mod search;
mod storable;

pub use catalog::{DocumentWithVectors, PgStats};
pub use error::{redact, PgError};
pub use index::{is_postgres_url, DocumentWrite, PgIndex, Replaced};
pub use search::PgCorpus;
pub use storable::{check_document, check_json, check_metadata, check_text};
