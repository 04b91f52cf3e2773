#!/usr/bin/env bash
# Runs the whole test suite. Tests use the real embedding model, so it is fetched first
# when missing; cargo-nextest is installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-model.sh
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi
cargo nextest run --workspace --locked --no-fail-fast "$@"
cargo test --workspace --locked --doc
