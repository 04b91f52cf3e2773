//! Excerpt's embedded index: one directory holding everything a query needs.
//!
//! - [`Manifest`]: the committed state, one JSON file replaced atomically (write, fsync,
//!   rename). It names the live segments and the [`IndexConfig`] (model, chunker, headers),
//!   and checks itself: it holds the BLAKE3 of its own canonical body ([`CHECKSUM_KEY`]).
//! - Segments (`segments/<name>.docs` and `.vec`): immutable files of documents (text,
//!   sections, chunks, sentences) and their chunk vectors, written once, checksummed in the
//!   manifest, deleted only when no manifest names them.
//! - BM25 ([`bm25`]): a tantivy index over chunk text (plus the chunk header), whose
//!   commit payload is the manifest generation it matches.
//! - [`Snapshot`]: an immutable reader view of one generation (documents in id order,
//!   chunk vectors and document texts memory-mapped from the segment files, a BM25
//!   searcher). Queries never see half an ingest.
//! - ANN ([`AnnOptions`], [`AnnStatus`]): for large collections, an IVF index (`ann/`)
//!   that dense search uses instead of the exact scan; missing or corrupt files only
//!   make search exact again.
//! - [`IndexWriter`]: the single writer (a lock file enforces it). `put`/`delete` stage,
//!   `commit` makes a new generation visible.
//!
//! Crash safety: segment files first, then the ANN files, then the BM25 commit tagged
//! with the new generation, then the manifest rename. A crash before the rename leaves the old
//! manifest in force; a BM25 index whose payload is not the manifest's generation is
//! rebuilt from the segments (on disk by the next writer, in memory by a reader).

// Two `unsafe` calls, each allowed where it is: in `in_place` (mapping a segment file)
// and in `quant` (the AVX2 build of the 8-bit scan, once the CPU is checked).
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod ann;
pub mod bm25;
mod dense;
mod error;
mod health;
mod in_place;
mod kmeans;
mod maintenance;
mod manifest;
mod merge;
mod quant;
mod quiet;
mod segment;
mod snapshot;
mod svec;
mod writer;

pub use ann::{AnnOptions, AnnStatus, DEFAULT_ANN_MIN_CHUNKS, DEFAULT_PROBE};
pub use dense::top_k_rows;
pub use error::IndexError;
pub use health::{Damage, SegmentDamage};
pub use in_place::SegmentDocs;
pub use maintenance::{verify, FileCheck, RepairReport, VerifyReport};
pub use manifest::{
    canonical_checksum, AnnMeta, ContextualizerConfig, IndexConfig, Manifest, SegmentMeta,
    SentenceVectors, CHECKSUM_KEY, FORMAT_VERSION, MANIFEST_FILE, OLDEST_READABLE_FORMAT,
    PREVIOUS_MANIFEST_FILE,
};
pub use merge::MergePolicy;
pub use snapshot::{DocMask, Snapshot, SnapshotStats};
pub use svec::SentenceRows;
pub use writer::{check_config, CommitStats, IndexWriter};
