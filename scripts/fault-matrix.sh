#!/usr/bin/env bash
# The full fault matrix of an index directory (crates/index/tests/faults.rs): every kind
# of index file deleted, truncated and bit-flipped, alone and in every pair with every
# combination of faults (42 + 819 cases), each followed by query, ingest, rm, verify and
# repair. CI runs the sampled version (42 + 91 cases); this one takes a few minutes.
# Prints the tally: cases, operations, documents lost and named, writes refused.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo nextest run -p excerpt-index --test faults --run-ignored all --no-capture "$@"
