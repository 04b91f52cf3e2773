//! [`embed_bench`](./embed_bench.rs) with the system allocator, for comparison.
//!
//! `cargo run --release -p excerpt-embed --example embed_bench_system -- [N] [BATCH]`

mod bench_common;

fn main() {
    bench_common::run("system");
}
