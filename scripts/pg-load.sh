#!/usr/bin/env bash
# Query throughput of `excerpt serve` on a PostgreSQL index: one server, then two
# servers on the same database, under wrk on 127.0.0.1 (read-only: queries only).
#   scripts/pg-load.sh URL [path/to/excerpt]
# URL is a database holding a collection written by
#   excerpt bench --postgres URL --model-id sentence-transformers/all-MiniLM-L6-v2 ...
# (generated text and vectors, recorded under the model `serve` loads, so the servers
# embed each query with the real model and search the generated vectors). Phases of
# $SECONDS_LOAD s (default 20) with $CONN connections in all (default 8): with two
# servers, each gets half the connections from a wrk of its own. Prints one JSON line
# per phase (requests/s summed, p50/p99 of each wrk). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
url="${1:?usage: scripts/pg-load.sh URL [path/to/excerpt]}"
bin="${2:-${CARGO_TARGET_DIR:-target}/release/excerpt}"
command -v wrk >/dev/null || { echo "pg-load: wrk is needed (apt-get install wrk)" >&2; exit 1; }
[ -x "$bin" ] || { echo "pg-load: no binary at $bin (cargo build --release)" >&2; exit 1; }
conn="${CONN:-8}"
secs="${SECONDS_LOAD:-20}"
export INGEST_EVERY=0 LOAD_QUERIES=bench
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start_server() { # name
  RUST_LOG=warn "$bin" --index "$url" serve --addr 127.0.0.1:0 >"$tmp/$1.out" 2>"$tmp/$1.err" &
  pids+=($!)
  for _ in $(seq 1 300); do grep -q listening "$tmp/$1.out" 2>/dev/null && break; sleep 0.1; done
  local base
  base=$(sed -n 's/^listening on //p' "$tmp/$1.out")
  [ -n "$base" ] || { echo "pg-load: server $1 did not start" >&2; cat "$tmp/$1.err" >&2; exit 1; }
  # Warm-up: the model, the pool's connections.
  for _ in 1 2 3 4 5; do
    curl -sf -X POST -H 'Content-Type: application/json' -d '{"query": "w1 w2 w3", "budget": 1000}' "$base/v1/query" >/dev/null
  done
  echo "$base"
}
result() { grep '^LOADJSON ' "$1" | sed 's/^LOADJSON //'; }
a=$(start_server a)
wrk -t2 -c"$conn" -d"${secs}s" --timeout 30s -s scripts/load.lua "$a" >"$tmp/one"
printf '{"phase": "one server", "connections": %s, "result": %s}\n' "$conn" "$(result "$tmp/one")"
b=$(start_server b)
half=$(( (conn + 1) / 2 ))
wrk -t1 -c"$half" -d"${secs}s" --timeout 30s -s scripts/load.lua "$a" >"$tmp/two-a" &
w1=$!
wrk -t1 -c"$half" -d"${secs}s" --timeout 30s -s scripts/load.lua "$b" >"$tmp/two-b" &
w2=$!
wait "$w1" "$w2"
ra=$(result "$tmp/two-a")
rb=$(result "$tmp/two-b")
total=$(python3 -c 'import json,sys; print(round(sum(json.loads(a)["rps"] for a in sys.argv[1:]), 1))' "$ra" "$rb")
printf '{"phase": "two servers", "connections": %s, "rps": %s, "a": %s, "b": %s}\n' "$((half * 2))" "$total" "$ra" "$rb"
