#!/usr/bin/env bash
# Sets Excerpt up on a fresh machine and runs the main job once:
#   1. fetches the default embedding model into the cache (scripts/fetch-model.sh),
#   2. builds the release binary (target/release/excerpt, or under $CARGO_TARGET_DIR),
#   3. ingests the bundled sample corpus (this repository's own docs, without their
#      history) into
#      target/sample-index and prints the context for a question.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-model.sh
cargo build --release --locked -p excerpt-cli
bin="${CARGO_TARGET_DIR:-target}/release/excerpt"
index=target/sample-index
# The documents as they are today; their history (docs/history/) is a diary, not the sample.
"$bin" --index "$index" ingest docs README.md --exclude 'history/*'
"$bin" --index "$index" stats
question="${1:-How does Excerpt stay consistent when an ingest is killed?}"
echo
echo "== excerpt query \"$question\""
"$bin" --index "$index" query "$question" --budget 800
