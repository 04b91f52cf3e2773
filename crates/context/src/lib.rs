//! Context assembly: turning ranked chunks into context that reads like the source.
//!
//! - [`Context`] and [`Piece`]: the typed output (exact slices with provenance).
//! - [`Hit`], [`Corpus`], [`LlmTokens`]: what strategies read.
//! - [`segments`]: Relevant Segment Extraction's exact maximum-sum segment search.

mod context;
pub mod segments;

pub use context::{Context, Corpus, Hit, LlmTokens, Piece};
pub use segments::{
    best_segment, select_segments, DocValues, Segment, SegmentError, SegmentParams, SelectedSegment,
};
