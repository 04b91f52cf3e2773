//! Models run on this machine, by our own BERT forward pass (which also runs the
//! XLM-RoBERTa family).
//!
//! - [`LocalEmbedder`] (`embedder.rs`): a sentence-transformers embedding model, and
//!   its tokenizer as a token counter ([`LocalTokenCounter`]);
//! - [`CrossEncoderReranker`] (`cross_encoder.rs`): a BERT or XLM-RoBERTa
//!   sequence-classification model scoring (query, passage) pairs;
//! - where models live on disk (`location.rs`).
//!
//! Below them, in layers: the model directory's files (`files.rs`), its
//! `config.json` (`config.rs`), its `model.safetensors` (`weights.rs`) and tokenizer
//! set-up (`tokenize.rs`); the encoder forward pass (`bert.rs`) over our matrix
//! kernels (`sgemm/`) and element-wise kernels (`math.rs`, and `lanes.rs` for
//! sixteen-lane vectors: AVX-512 and its AVX2 twin); the machine's measured FMA peak
//! and a pass's arithmetic, for benchmarks (`peak.rs`). Only these files hold unsafe
//! code.

mod bert;
mod config;
mod cross_encoder;
mod embedder;
mod files;
mod lanes;
mod location;
mod math;
mod peak;
mod sgemm;
pub mod throughput;
mod tokenize;
mod weights;

pub use cross_encoder::{CrossEncoderReranker, DEFAULT_CROSS_ENCODER_BATCH_SIZE};
pub use embedder::{LocalEmbedder, LocalTokenCounter, Pooling, QueryWeights, DEFAULT_BATCH_SIZE};
pub use location::{
    default_home, models_dir, resolve_model, verify_model_files, PinnedModel, DEFAULT_MODEL,
    DEFAULT_MODEL_NAME,
};
#[cfg(feature = "hub")]
pub use location::{download_model, fetch_default_model};
pub use peak::{encoder_flops, fma_peak_avx512_gflops, fma_peak_gflops};
pub use sgemm::KernelChoice;

use excerpt_core::EmbedError;

/// Deterministic pseudo-random values in [-1, 1), for the kernels' tests.
#[cfg(test)]
pub(crate) fn test_values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// [`EmbedError::Inference`] with `context: err`.
pub(crate) fn inference_error(context: &str, err: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference {
        message: format!("{context}: {err}"),
    }
}
