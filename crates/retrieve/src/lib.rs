//! placeholder

pub mod fusion;

pub use fusion::{
    fuse, fuse_hybrid, ChunkKey, Fused, FusionError, FusionMethod, Normalization, WeightedList,
};
