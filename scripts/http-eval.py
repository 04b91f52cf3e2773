#!/usr/bin/env python3
"""Runs an evaluation set's questions through a running `excerpt serve` (any index:
directory or PostgreSQL) and writes one results file per strategy and budget in the
eval format (../shared/eval/EVAL_FORMAT.md), to be scored by score_context.py. It is how
the two storage backends are compared on the same questions through the same API.

    scripts/http-eval.py --url http://127.0.0.1:7700 --queries Q.jsonl --out DIR \\
        --strategy auto --strategy topk --budget 500 --budget 1000 --budget 2000

A question's `scope` becomes the query's document filter, as `excerpt eval` does.
Standard library only.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        sys.exit(f"http-eval: {url} answered {e.code}: {e.read().decode(errors='replace')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="base URL of `excerpt serve`")
    ap.add_argument("--queries", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--strategy", action="append", required=True)
    ap.add_argument("--budget", action="append", type=int, required=True)
    ap.add_argument("--mode", help="dense, bm25 or hybrid (the server's default)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.queries, encoding="utf-8") as f:
        queries = [json.loads(line) for line in f if line.strip()]
    for strategy in args.strategy:
        name = strategy.replace(":", "_").replace(",", "_").replace("=", "_")
        for budget in args.budget:
            path = os.path.join(args.out, f"results-{name}-{budget}.jsonl")
            with open(path, "w", encoding="utf-8") as out:
                for q in queries:
                    body = {"query": q["query"], "strategy": strategy, "budget": budget}
                    if args.mode:
                        body["mode"] = args.mode
                    if q.get("scope"):
                        body["filter"] = {"doc_ids": q["scope"]}
                    ctx = post(args.url.rstrip("/") + "/v1/query", body)
                    pieces = [{k: p[k] for k in ("doc_id", "start", "end", "text", "score") if k in p}
                              for p in ctx["pieces"]]
                    out.write(json.dumps({"query_id": q["id"], "strategy": strategy,
                                          "pieces": pieces}, ensure_ascii=False) + "\n")
            print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
