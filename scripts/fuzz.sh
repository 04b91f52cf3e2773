#!/usr/bin/env bash
# Fuzzes every target in fuzz/ (libFuzzer through cargo-fuzz, nightly Rust) for
# $1 seconds each (default 60), one after the other, then prints what each run did.
# A crash or timeout leaves its input under fuzz/artifacts/<target>/: copy it into
# fuzz/regressions/<target>/, fix the bug, and `cargo nextest run -p
# excerpt-fuzz-targets` replays it on stable from then on. Not part of CI.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"; shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(load_text load_markdown load_html load_jsonl load_pdf query_spec manifest segment)
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo +nightly install --locked cargo-fuzz
status=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  # Seed the corpus with the kept inputs.
  cp -n fuzz/regressions/"$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
  echo "== $t ($secs s)"
  if ! (cd fuzz && cargo +nightly fuzz run "$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=1048576 \
        -print_final_stats=1 2>"../target/fuzz-$t.log"); then
    status=1
    echo "   FOUND a failure: see fuzz/artifacts/$t/ and target/fuzz-$t.log"
  fi
  grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "target/fuzz-$t.log" | tail -2 | sed 's/^/   /' || true
done
exit $status
