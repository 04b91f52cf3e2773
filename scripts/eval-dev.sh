#!/usr/bin/env bash
# Runs `excerpt eval` on every development set (QMSum and ContractNLI in ../shared/data or
# $EXCERPT_DATA; pydocs-dev, technical documentation, built into target/devdata by
# scripts/make-pydocs-set.py when missing) and scores each results file with the
# independent scorer at 4 characters per budget token, printing one Markdown table per
# set (the protocol of docs/EVAL.md).
#
#   scripts/eval-dev.sh [STRATEGY ...]        # default: auto (topk is always included)
#   EXCERPT_EVAL_SETS="contractnli-dev" scripts/eval-dev.sh topk auto 'rse:unit=sentence'
#
# Indexes are kept in target/eval/idx-SET (built once; delete to rebuild), results in
# target/eval/out-SET ($EXCERPT_EVAL_TAG is appended to both names, for a second index
# built with other options). Extra `excerpt eval` options go in $EXCERPT_EVAL_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${EXCERPT_DATA:-../shared/data}"
sets="${EXCERPT_EVAL_SETS:-qmsum-val contractnli-dev pydocs-dev pydocs-long pydocs-nav}"
bin="${EXCERPT_BIN:-target/release/excerpt}"
scorer="${EXCERPT_SCORER:-../shared/eval/score_context.py}"
budgets=(500 1000 2000)
strategies=("$@")
[ ${#strategies[@]} -eq 0 ] && strategies=(auto)
if [ ! -x "$bin" ]; then
  cargo build --release --locked -p excerpt-cli
fi
shared_data="$data"
for set in $sets; do
  data="$shared_data"
  if [[ "$set" == pydocs-* ]] && [ ! -d "$data/$set" ]; then
    data=target/devdata
    [ -f "$data/$set/queries.jsonl" ] || scripts/make-pydocs-set.py "$data"
  fi
  out="target/eval/out-$set${EXCERPT_EVAL_TAG:-}"
  rm -rf "$out"
  args=()
  for s in "${strategies[@]}"; do args+=(--strategies "$s"); done
  for b in "${budgets[@]}"; do args+=(--budget "$b"); done
  # shellcheck disable=SC2086
  "$bin" --index "target/eval/idx-$set${EXCERPT_EVAL_TAG:-}" eval --quiet \
    --corpus "$data/$set/corpus.jsonl" --queries "$data/$set/queries.jsonl" \
    --out "$out" "${args[@]}" ${EXCERPT_EVAL_ARGS:-} >/dev/null
  echo
  echo "## $set"
  echo
  echo "| strategy | recall @2000 | @4000 | @8000 | full @2000 | @4000 | @8000 | precision @2000 | @4000 | @8000 |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for f in "$out"/results-*-500.jsonl; do
    name=${f#"$out"/results-}
    name=${name%-500.jsonl}
    row=()
    for b in "${budgets[@]}"; do
      row+=("$(python3 "$scorer" --corpus "$data/$set/corpus.jsonl" \
        --queries "$data/$set/queries.jsonl" --results "$out/results-$name-$b.jsonl" \
        --budget-chars $((b * 4)))")
    done
    python3 - "$name" "${row[@]}" <<'EOF'
import json, sys
name, rows = sys.argv[1], [json.loads(r) for r in sys.argv[2:]]
cells = [f"{r[k]:.3f}" for k in ("recall", "full", "precision") for r in rows]
print(f"| `{name}` | " + " | ".join(cells) + " |")
EOF
  done
done
