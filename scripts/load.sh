#!/usr/bin/env bash
# Load test of `excerpt serve` on 127.0.0.1 with wrk (Debian package `wrk`): ingests
# README.md and docs/ into a fresh index, starts the server, and runs three phases of
# mixed queries and ingests (one ingest in $INGEST_EVERY requests):
#   steady   $CONN connections for $SECONDS_STEADY s (default 16 connections, 20 s)
#   burst    600 connections for 10 s, far over the concurrency limit: the excess must
#            get 503 + Retry-After, never a crash or a hang
#   after    the server's threads and RSS 15 s after the burst (idle threads retire)
# Prints one JSON line per phase (throughput, p50/p90/p99, status counts) and the
# server's RSS and thread count; fails if the server died or answered anything but
# 200 and 503 (the server log is kept in target/load-server.log). Not part of CI (it takes about a minute and wants a quiet machine).
#   scripts/load.sh [path/to/excerpt]   (default: target/release/excerpt)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${CARGO_TARGET_DIR:-target}/release/excerpt}"
command -v wrk >/dev/null || { echo "load: wrk is needed (apt-get install wrk)" >&2; exit 1; }
[ -x "$bin" ] || { echo "load: no binary at $bin (cargo build --release)" >&2; exit 1; }
conn="${CONN:-16}"
steady="${SECONDS_STEADY:-20}"
export INGEST_EVERY="${INGEST_EVERY:-20}"
tmp=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null
    # A server still waiting on requests after 10 s is stopped for good.
    for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server" 2>/dev/null
  fi
  wait 2>/dev/null
  mkdir -p target && cp "$tmp/err" target/load-server.log 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
"$bin" --quiet --index "$tmp/idx" ingest README.md docs >/dev/null
RUST_LOG=warn "$bin" --index "$tmp/idx" serve --addr 127.0.0.1:0 >"$tmp/out" 2>"$tmp/err" &
server=$!
for _ in $(seq 1 300); do grep -q listening "$tmp/out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^listening on //p' "$tmp/out")
[ -n "$base" ] || { echo "load: the server did not start" >&2; cat "$tmp/err" >&2; exit 1; }
mem() { awk '/^VmRSS/ {printf "%d", $2/1024}' "/proc/$server/status"; }
threads() { awk '/^Threads/ {print $2}' "/proc/$server/status"; }
report() { # phase name, wrk output
  local line
  line=$(grep '^LOADJSON ' "$2" | sed 's/^LOADJSON //')
  printf '{"phase": "%s", "rss_mib": %s, "threads": %s, "result": %s}\n' "$1" "$(mem)" "$(threads)" "$line"
}
printf '{"phase": "idle", "rss_mib": %s, "threads": %s}\n' "$(mem)" "$(threads)"
wrk -t2 -c"$conn" -d"${steady}s" --timeout 30s -s scripts/load.lua "$base" >"$tmp/steady"
report steady "$tmp/steady"
wrk -t2 -c600 -d10s --timeout 30s -s scripts/load.lua "$base" >"$tmp/burst"
report burst "$tmp/burst"
sleep 15
printf '{"phase": "after", "rss_mib": %s, "threads": %s}\n' "$(mem)" "$(threads)"
curl -sf "$base/healthz" >/dev/null || { echo "load: the server stopped answering" >&2; exit 1; }
# Health is answered outside the query pool: a query must still be answered too (wrk
# counts only the requests that finished, so hung ones would not show in its figures).
curl -sf --max-time 60 -H 'Content-Type: application/json' -d '{"query": "how do I run the tests?", "budget": 300}' \
  "$base/v1/query" >/dev/null || { echo "load: the server stopped answering queries" >&2; exit 1; }
bad=$(cat "$tmp/steady" "$tmp/burst" | grep '^LOADJSON' | grep -oE '"[0-9]{3}": [0-9]+' | grep -vE '"(200|503)"' || true)
if [ -n "$bad" ]; then
  echo "load: unexpected statuses: $bad; server faults logged:" >&2
  grep -iE "error|fault" "$tmp/err" | head -20 >&2
  exit 1
fi
echo "load: ok" >&2
