//! placeholder

pub mod segments;

pub use segments::{
    best_segment, select_segments, DocValues, Segment, SegmentError, SegmentParams, SelectedSegment,
};
