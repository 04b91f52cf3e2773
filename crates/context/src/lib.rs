//! Context assembly: turning ranked chunks into context that reads like the source.
//!
//! - [`assemble`] with a [`StrategyConfig`] and an [`AssembleRequest`]: the single entry
//!   point. The strategies ([`Strategy`]): `topk`, `adjacent`, `rse`, `window`, `section`,
//!   `auto`; the guarantees they all keep are documented on [`assemble`]
//!   (exact slices, merged non-overlapping pieces, exact token budget, determinism).
//! - [`Context`] and [`Piece`]: the typed output (exact slices with provenance).
//! - [`Hit`], [`Corpus`], [`LlmTokens`]: what strategies read; [`TiktokenCounter`] counts
//!   LLM tokens with an embedded BPE vocabulary.
//! - [`render_markdown`], [`render_text`]: renderings of a context for people and LLMs
//!   (its JSON is the engine's, `excerpt::context_value`: one rendering for every front end).
//! - [`feedback_terms`]: pseudo-relevance feedback terms for the sentence route.
//! - [`segments`]: Relevant Segment Extraction's exact maximum-sum segment search, and
//!   [`select_segments_optimal`], the budget-optimal set of segments.

#![forbid(unsafe_code)]

mod assemble;
mod context;
mod dialogue;
mod error;
mod feedback;
mod headings;
mod memo;
mod near;
mod optimal;
mod passages;
mod pieces;
pub mod render;
pub mod segments;
mod selection;
mod sentences;
mod strategies;
mod tokens;

pub use assemble::{assemble, MAX_BUDGET};
pub use context::{AssembleRequest, Context, Corpus, Hit, LlmTokens, Piece, PieceOrder, Timings};
pub use error::ContextError;
pub use feedback::feedback_terms;
pub use optimal::{select_segments_optimal, select_segments_optimal_lazy};
pub use render::{
    render_markdown, render_text, RenderOptions, DEFAULT_CLOSING_INSTRUCTION,
    SCORE_ORDER_CLOSING_INSTRUCTION,
};
pub use segments::{
    best_segment, select_segments, select_segments_lazy, DocValues, Segment, SegmentError,
    SegmentParams, SelectedSegment,
};
pub use strategies::{
    AdjacentParams, AutoParams, RseParams, RsePreset, RseUnit, SectionParams, Strategy,
    StrategyConfig, TopkParams, TopkUnit, WindowExpand, WindowParams, WindowSeeds,
};
pub use tokens::{llm_counter, CharCounter, TiktokenCounter, LLM_ENCODINGS};
