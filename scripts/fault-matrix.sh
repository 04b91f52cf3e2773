#!/usr/bin/env bash
# The full fault matrix of an index directory (crates/index/tests/faults.rs): every kind
# of index file deleted, truncated and bit-flipped, alone and in every pair with every
# combination of faults (42 + 819 cases), each followed by query, ingest, rm, verify and
# repair. Then the manifest matrix: every JSON-valid edit of every field of both manifests,
# alone and with the newest segment lost, and a bit flipped in every byte of both. CI runs
# the sampled versions; this one takes about 25 minutes in a debug build on 2 cores, so
# it runs under `cargo test` in release (nextest's 5-minute limit of .config/nextest.toml
# would kill the manifest matrix).
# Prints the tally: cases, operations, documents lost and named, writes refused.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p excerpt-index --test faults "$@" -- --include-ignored --nocapture
