#!/usr/bin/env bash
# Crash loop: SIGKILLs `excerpt ingest`, `excerpt rm` and `excerpt serve` (during POST
# /v1/ingest) at random moments, $1 times (default 100), checking after every kill that
# the index opens, keeps its invariants and has every live chunk in BM25, and that a
# final ingest completes. CI runs the same test with 6 kills. Prints the seed of the
# kill schedule (rerun a failure by reading it from the output).
set -euo pipefail
cd "$(dirname "$0")/.."
EXCERPT_KILL_ROUNDS="${1:-100}" cargo nextest run -p excerpt-cli --locked --no-capture \
  -E 'test(sigkill_during_writes_leaves_a_consistent_index)'
