//! Embedding throughput of the local model on ~250-token passages, with mimalloc as
//! the global allocator (as the `excerpt` binary uses).
//!
//! `cargo run --release -p excerpt-embed --example embed_bench -- [N] [BATCH]`

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench_common;

fn main() {
    bench_common::run("mimalloc");
}
