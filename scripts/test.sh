#!/usr/bin/env bash
# Runs the whole test suite and the code gates. Tests use the real embedding model, so it
# is fetched first when missing; cargo-nextest, and Chromium with chromedriver for the
# inspector's browser tests (apt-get), are installed when missing.
#
# Gates, in order (each fails the run): no import circles between a crate's modules
# (scripts/check-module-cycles.py), the names docs/ARCHITECTURE.md gives exist
# (scripts/check-architecture.py), no library file over 800 lines and no function over
# 100 (scripts/check-sizes.py), formatting, clippy with warnings as errors on every
# target, rustdoc with warnings as errors (broken intra-doc links), the tests, the AVX-512
# kernels run in a CPU emulator against their AVX2 twins (so they are checked on
# machines without AVX-512 too), the doc tests, the Python package's tests
# (scripts/test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-model.sh
scripts/fetch-pdfium.sh
# The PostgreSQL index's tests run against a real PostgreSQL 18 + pgvector; in CI they
# must not skip, so a server that cannot start fails them.
pg_started=$(date +%s%N)
scripts/postgres.sh start >/dev/null
echo "postgres: started in $(( ($(date +%s%N) - pg_started) / 1000000 )) ms"
export EXCERPT_REQUIRE_POSTGRES=1
trap 'scripts/postgres.sh stop' EXIT
# The inspector's browser tests (crates/server/tests/http/browser/) drive a real
# headless Chromium through chromedriver: Debian's packages, installed when missing; in CI
# the tests must not skip.
if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
  apt_started=$(date +%s)
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  echo "chromium: installed in $(( $(date +%s) - apt_started )) s"
fi
export EXCERPT_REQUIRE_BROWSER=1
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi
for tool in clippy rustfmt; do
  if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$tool"
  fi
done
step() { printf '\n== %s (%s)\n' "$1" "$(date +%H:%M:%S)"; }
step "module layers: no import circles inside a crate"
python3 scripts/check-module-cycles.py .
step "architecture: every path and item docs/ARCHITECTURE.md names exists"
python3 scripts/check-architecture.py .
step "sizes: no library file over 800 lines, no function over 100"
sizes_started=$(date +%s%N)
python3 scripts/check-sizes.py .
echo "sizes: checked in $(( ($(date +%s%N) - sizes_started) / 1000000 )) ms"
step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
step "cargo nextest"
cargo nextest run --workspace --locked --no-fail-fast "$@"
step "AVX-512 kernels under CPU emulation (scripts/avx512-emu)"
scripts/avx512-emu/check.sh
step "doc tests"
cargo test --workspace --locked --doc
step "python package: pip install, pytest (LangChain, LlamaIndex)"
scripts/test-python.sh
step "done"
