//! Retrieval: from a query to ranked chunks with calibrated relevance.
//!
//! - [`fusion`]: pure fusion of ranked lists (RRF, min-max weighted, distribution-based),
//!   each with its formula and an absolute relevance in [0, 1].
//! - [`filter`]: query scope ([`Filter`]: document ids, id prefixes, metadata) turned into
//!   a [`excerpt_index::DocMask`] both searches apply.

pub mod filter;
pub mod fusion;

pub use filter::{Filter, MetaCondition};

pub use fusion::{
    fuse, fuse_hybrid, ChunkKey, Fused, FusionError, FusionMethod, Normalization, WeightedList,
};
