#!/usr/bin/env python3
"""Whole queries over HTTP against a running `excerpt serve`, with the server's own
stage times: client-side p50 / p99 per strategy, and the p50 of each stage the server
reports (`"timings": true`).

    excerpt --index IDX serve --port 8765 &
    scripts/query-bench.py --url http://127.0.0.1:8765 --queries QUERIES.jsonl \
        [--strategy topk --strategy auto] [--budget 1000] [--rounds 3] [--scoped] \
        [--mode dense]

QUERIES.jsonl holds one {"query": ...} per line (an eval set's queries file will do;
with --scoped, a query's "doc" or "scope" restricts it as `excerpt eval` does). Queries
run one at a time, after one warm-up pass; the rounds are interleaved by strategy."""
import argparse, http.client, json, statistics, time, urllib.parse, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--queries", required=True)
ap.add_argument("--strategy", action="append")
ap.add_argument("--budget", type=int, default=1000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--limit", type=int, default=200)
ap.add_argument("--scoped", action="store_true")
ap.add_argument("--mode", choices=["hybrid", "dense", "bm25"],
                help="retrieval mode (default: the server's, hybrid)")
ap.add_argument("--keep-alive", action="store_true",
                help="send every query on one kept-alive connection (as a client pool does) "
                     "instead of a new connection each")
ap.add_argument("--slowest", type=int, default=0, metavar="N",
                help="also print the stage times of each strategy's N slowest queries")
ap.add_argument("--no-timings", action="store_true",
                help="do not ask for the stage times (a server older than `timings`)")
a = ap.parse_args()
strategies = a.strategy or ["topk", "auto"]
queries = []
for line in open(a.queries):
    if not line.strip():
        continue
    q = json.loads(line)
    body = {"query": q["query"], "budget": a.budget}
    if not a.no_timings:
        body["timings"] = True
    if a.mode:
        body["mode"] = a.mode
    scope = q.get("scope") or ([q["doc"]] if q.get("doc") else None)
    if a.scoped and scope:
        body["filter"] = {"doc_ids": scope}
    queries.append(body)
queries = queries[: a.limit]


url = urllib.parse.urlsplit(a.url)
conn = http.client.HTTPConnection(url.hostname, url.port or 80) if a.keep_alive else None


def post(body):
    data = json.dumps(body).encode()
    start = time.perf_counter()
    if conn is not None:
        conn.request("POST", url.path.rstrip("/") + "/v1/query", data,
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        out = json.loads(r.read())
        if r.status != 200:
            raise SystemExit(f"HTTP {r.status}: {out}")
    else:
        req = urllib.request.Request(a.url.rstrip("/") + "/v1/query", data,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            out = json.load(r)
    return (time.perf_counter() - start) * 1000, out.get("timings", {})


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


for body in queries:  # warm-up: model, caches, page cache
    post(dict(body, strategy=strategies[0]))
wall = {s: [] for s in strategies}
stages = {s: {} for s in strategies}
slow = {}
for _ in range(a.rounds):
    for s in strategies:
        for body in queries:
            ms, t = post(dict(body, strategy=s))
            wall[s].append(ms)
            slow.setdefault(s, []).append((ms, len(body["query"].split()), t))
            for k, v in t.items():
                stages[s].setdefault(k, []).append(v)
conn_kind = "one kept-alive connection" if conn is not None else "a connection each"
print(f"{len(queries)} queries x {a.rounds} rounds, budget {a.budget}, one at a time, {conn_kind}")
names = ["embed_ms", "lexical_ms", "dense_ms", "fusion_ms", "feedback_ms", "assembly_ms", "total_ms"]
print("| strategy | HTTP p50 | HTTP p99 | " + " | ".join(n[:-3] + " p50" for n in names) + " |")
print("|---" * (3 + len(names)) + "|")
for s in strategies:
    cells = [f"{pct(wall[s], 50):.1f}", f"{pct(wall[s], 99):.1f}"]
    cells += [f"{statistics.median(stages[s][n]):.2f}" if n in stages[s] else "" for n in names]
    print(f"| `{s}` | " + " | ".join(cells) + " |")
if a.slowest:
    for s in strategies:
        print(f"\n`{s}`, the {a.slowest} slowest: HTTP ms, words, then each stage's ms")
        for ms, words, t in sorted(slow[s], key=lambda x: -x[0])[: a.slowest]:
            print(f"  {ms:7.1f} {words:4d}w  " + "  ".join(
                f"{n[:-3]} {t[n]:.1f}" for n in names if n in t))
