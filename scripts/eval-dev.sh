#!/usr/bin/env bash
# Runs `excerpt eval` on every development set (QMSum, ContractNLI and financebench-dev in
# ../shared/data or $EXCERPT_DATA; pydocs-dev, pydocs-long and pydocs-nav, technical
# documentation, built into target/devdata by scripts/make-pydocs-set.py when missing) and scores each results file
# with the independent scorer at 4 characters per budget token, printing one Markdown
# table per set (the protocol of docs/EVAL.md).
#
#   scripts/eval-dev.sh [STRATEGY ...]        # default: auto (topk is always included)
#   EXCERPT_EVAL_SETS="contractnli-dev" scripts/eval-dev.sh topk auto 'rse:unit=sentence'
#   EXCERPT_EVAL_SETS="xquad" EXCERPT_EVAL_MODES="bm25 dense hybrid" scripts/eval-dev.sh
#
# `xquad-LANG` is the XQuAD dev set of one language (../shared/data/xquad-dev/LANG);
# `xquad` stands for all twelve. With $EXCERPT_EVAL_MODES, each set is run once per
# first-stage retrieval mode (`excerpt eval --mode`) on the same index, and its rows are
# named MODE/STRATEGY.
#
# A set is a folder holding corpus.jsonl and queries.jsonl (evidence spans, scored by
# score_context.py: recall, full, precision), or pdfs/ and queries.jsonl (page evidence,
# as financebench-dev: the folder of documents is the corpus, scored by score_pdf.py:
# text_recall, page_hit, and the pieces within the budget).
#
# Indexes are kept in target/eval/idx-SET (built once; delete to rebuild), results in
# target/eval/out-SET ($EXCERPT_EVAL_DIR replaces target/eval; $EXCERPT_EVAL_TAG is
# appended to both names, for a second index built with other options). Extra
# `excerpt eval` options go in $EXCERPT_EVAL_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${EXCERPT_DATA:-../shared/data}"
sets="${EXCERPT_EVAL_SETS:-qmsum-val contractnli-dev pydocs-dev pydocs-long pydocs-nav financebench-dev}"
bin="${EXCERPT_BIN:-${CARGO_TARGET_DIR:-target}/release/excerpt}"
scorer="${EXCERPT_SCORER:-../shared/eval/score_context.py}"
pdf_scorer="${EXCERPT_PDF_SCORER:-../shared/eval/score_pdf.py}"
evaldir="${EXCERPT_EVAL_DIR:-target/eval}"
budgets=(500 1000 2000)
strategies=("$@")
[ ${#strategies[@]} -eq 0 ] && strategies=(auto)
if [ ! -x "$bin" ]; then
  cargo build --release --locked -p excerpt-cli
fi
shared_data="$data"
expanded=()
for set in $sets; do
  if [ "$set" = xquad ]; then
    for lang in ar de el en es hi ro ru th tr vi zh; do expanded+=("xquad-$lang"); done
  else
    expanded+=("$set")
  fi
done
modes=(${EXCERPT_EVAL_MODES:-})
for set in "${expanded[@]}"; do
  data="$shared_data"
  dir="$set"
  if [[ "$set" == pydocs-* ]] && [ ! -d "$data/$set" ]; then
    data=target/devdata
    [ -f "$data/$set/queries.jsonl" ] || scripts/make-pydocs-set.py "$data"
  fi
  if [[ "$set" == xquad-* ]]; then
    dir="xquad-dev/${set#xquad-}"
  fi
  if [ -f "$data/$dir/corpus.jsonl" ]; then
    corpus="$data/$dir/corpus.jsonl"
  else
    corpus="$data/$dir/pdfs"
  fi
  args=()
  for s in "${strategies[@]}"; do args+=(--strategies "$s"); done
  for b in "${budgets[@]}"; do args+=(--budget "$b"); done
  outs=()
  for mode in "${modes[@]:-}"; do
    out="$evaldir/out-$set${EXCERPT_EVAL_TAG:-}${mode:+-$mode}"
    rm -rf "$out"
    # shellcheck disable=SC2086
    "$bin" --index "$evaldir/idx-$set${EXCERPT_EVAL_TAG:-}" eval --quiet \
      --corpus "$corpus" --queries "$data/$dir/queries.jsonl" \
      --out "$out" "${args[@]}" ${mode:+--mode "$mode"} ${EXCERPT_EVAL_ARGS:-} >/dev/null
    outs+=("$mode=$out")
  done
  echo
  echo "## $set"
  echo
  # Capped figures: only the first K = ceil(characters / 700) pieces count (3 / 6 / 12
  # at 2000 / 4000 / 8000 characters, `--max-pieces`); the readability columns are at
  # 2000 characters.
  if [ -d "$corpus" ]; then
    echo "| strategy | text_recall @2000 | @4000 | @8000 | text_recall ≤3/6/12 pieces @2000 | @4000 | @8000 | page_hit @2000 | @4000 | @8000 | page_hit ≤3/6/12 pieces @2000 | @4000 | @8000 | pieces @2000 | @4000 | @8000 | tiny @2000 | whole | in_order | grouped |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  else
    echo "| strategy | recall @2000 | @4000 | @8000 | recall ≤3/6/12 pieces @2000 | @4000 | @8000 | full @2000 | @4000 | @8000 | precision @2000 | @4000 | @8000 | pieces @2000 | tiny | whole | in_order | grouped |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  fi
  for mode_out in "${outs[@]}"; do
  mode=${mode_out%%=*}
  out=${mode_out#*=}
  for f in "$out"/results-*-500.jsonl; do
    name=${f#"$out"/results-}
    name=${name%-500.jsonl}
    row_name="${mode:+$mode/}$name"
    row=()
    capped=()
    for b in "${budgets[@]}"; do
      chars=$((b * 4))
      k=$(((chars + 699) / 700))
      if [ -d "$corpus" ]; then
        score=(python3 "$pdf_scorer" --queries "$data/$dir/queries.jsonl")
      else
        score=(python3 "$scorer" --corpus "$corpus" --queries "$data/$dir/queries.jsonl")
      fi
      row+=("$("${score[@]}" --results "$out/results-$name-$b.jsonl" --budget-chars "$chars")")
      capped+=("$("${score[@]}" --results "$out/results-$name-$b.jsonl" --budget-chars "$chars" --max-pieces "$k")")
    done
    if [ -d "$corpus" ]; then
      # score_pdf.py has no corpus texts to tell whole pieces and reading order from:
      # whole, in_order and grouped at 2000 characters are excerpt eval's (report.json,
      # as score_context.py defines them, on the texts the ingest extracted).
      python3 - "$name" "$row_name" "$out/report.json" "${row[@]}" "${capped[@]}" <<'EOF'
import json, sys
name, row_name, report = sys.argv[1:4]
rows, capped = [json.loads(r) for r in sys.argv[4:7]], [json.loads(r) for r in sys.argv[7:10]]
m = next(r["metrics"] for r in json.load(open(report))["results"]
         if r["results_file"] == f"results-{name}-500.jsonl")
cells = [f"{r['text_recall']:.3f}" for r in rows] + [f"{r['text_recall']:.3f}" for r in capped]
cells += [f"{r['page_hit']:.3f}" for r in rows] + [f"{r['page_hit']:.3f}" for r in capped]
cells += [f"{r['pieces']:.1f}" for r in rows] + [f"{rows[0]['tiny']:.2f}"]
cells += [f"{m[k]:.2f}" if m.get(k) is not None else "–" for k in ("whole", "in_order", "grouped")]
print(f"| `{row_name}` | " + " | ".join(cells) + " |")
EOF
    else
      python3 - "$row_name" "${row[@]}" "${capped[@]}" <<'EOF'
import json, sys
name = sys.argv[1]
rows, capped = [json.loads(r) for r in sys.argv[2:5]], [json.loads(r) for r in sys.argv[5:8]]
cells = [f"{r['recall']:.3f}" for r in rows] + [f"{r['recall']:.3f}" for r in capped]
cells += [f"{r[k]:.3f}" for k in ("full", "precision") for r in rows]
at2000 = rows[0]
cells += [f"{at2000['pieces']:.1f}"] + [f"{at2000[k]:.2f}" for k in ("tiny", "whole", "in_order", "grouped")]
print(f"| `{name}` | " + " | ".join(cells) + " |")
EOF
    fi
  done
  done
done
