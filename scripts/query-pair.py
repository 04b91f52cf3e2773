#!/usr/bin/env python3
"""Two `excerpt serve` builds compared query by query: each query goes to both servers,
one right after the other, in alternating order, so that a noisy machine slows both
alike. Prints each server's HTTP p50 / p90 / p99 and the p50 of the stages it reports
(`"timings": true`), then the per-query difference (B minus A): its median, its mean
and how many queries B answered faster.

    excerpt --index IDX serve --addr 127.0.0.1:8801 &    # build A
    other/excerpt --index IDX serve --addr 127.0.0.1:8802 &    # build B
    scripts/query-pair.py --a http://127.0.0.1:8801 --b http://127.0.0.1:8802 \\
        --queries QUERIES.jsonl [--strategy auto] [--rounds 3] [--budget 1000] [--mode dense]

Both servers must serve the same index. Unlike scripts/query-bench.py, whose runs of two
builds one after the other can differ by a third on a shared machine, this resolves a
tenth of a millisecond."""
import argparse, json, statistics, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--a", required=True, help="URL of build A's server")
ap.add_argument("--b", required=True, help="URL of build B's server")
ap.add_argument("--queries", required=True, help="JSONL, one {\"query\": ...} a line")
ap.add_argument("--strategy", default="topk")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--budget", type=int, default=1000)
ap.add_argument("--mode", choices=["hybrid", "dense", "bm25"])
a = ap.parse_args()
queries = [json.loads(l)["query"] for l in open(a.queries) if l.strip()]


def post(url, query):
    body = {"query": query, "budget": a.budget, "strategy": a.strategy, "timings": True}
    if a.mode:
        body["mode"] = a.mode
    req = urllib.request.Request(url.rstrip("/") + "/v1/query", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        out = json.load(r)
    return (time.perf_counter() - start) * 1000, out.get("timings", {})


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


for q in queries:  # warm-up: model, caches, page cache
    post(a.a, q)
    post(a.b, q)
wall = {"a": [], "b": []}
stages = {"a": {}, "b": {}}
for r in range(a.rounds):
    for i, q in enumerate(queries):
        for side in (("a", "b") if (r + i) % 2 == 0 else ("b", "a")):
            ms, t = post(getattr(a, side), q)
            wall[side].append(ms)
            for name, v in t.items():
                stages[side].setdefault(name, []).append(v)
print(f"{len(queries)} queries x {a.rounds} rounds, `{a.strategy}`, budget {a.budget}, "
      "each query to both servers in turn")
for side in ("a", "b"):
    s = stages[side]
    line = " ".join(f"{n[:-3]} {statistics.median(v):.2f}" for n, v in s.items()
                    if n.endswith("_ms") and statistics.median(v) > 0)
    print(f"{side.upper()}: HTTP p50 {pct(wall[side], 50):.1f} p90 {pct(wall[side], 90):.1f} "
          f"p99 {pct(wall[side], 99):.1f} ms | stage p50s: {line}")
d = [y - x for x, y in zip(wall["a"], wall["b"])]
print(f"B - A per query: median {statistics.median(d):+.2f} ms, mean {statistics.mean(d):+.2f} ms; "
      f"B faster in {sum(x < 0 for x in d)} of {len(d)}")
