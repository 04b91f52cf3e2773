//! Retrieval: from a query to ranked chunks with calibrated relevance.
//!
//! - [`retrieve`] ([`stage`]): the stage itself: query embedding, dense and BM25 search,
//!   relevance calibration or fusion, optional reranking, over one [`Store`].
//! - [`store`]: the storage interface the query path reads ([`Store`]), and the embedded
//!   index's implementation ([`SnapshotStore`]).
//! - [`fusion`]: pure fusion of ranked lists (RRF, min-max weighted, distribution-based),
//!   each with its formula and an absolute relevance in [0, 1].
//! - [`calibrate`]: relevance in [0, 1] for lists that are not fused (dense, BM25).
//! - [`filter`]: query scope ([`Filter`]: document ids, id prefixes, metadata) turned into
//!   a [`excerpt_index::DocMask`] both searches apply.

#![forbid(unsafe_code)]

pub mod calibrate;
pub mod filter;
pub mod fusion;
pub mod stage;
pub mod store;

pub use filter::{Filter, MetaCondition};

pub use fusion::{
    fuse, fuse_hybrid, ChunkKey, Fused, FusionError, FusionMethod, Normalization, WeightedList,
};
pub use stage::{
    model_reads_query, retrieve, retrieve_with, Mode, Retrieval, RetrieveError, RetrieveRequest,
    MAX_CANDIDATES, MAX_QUERY_BYTES,
};
pub use store::{
    AfterLexical, EmbedQuery, Found, SearchRequest, SearchTimes, SnapshotCorpus, SnapshotStore,
    Store, StoreCorpus, StoreError,
};
