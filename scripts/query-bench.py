#!/usr/bin/env python3
"""Whole queries over HTTP against a running `excerpt serve`, with the server's own
stage times: client-side p50 / p99 per strategy, and the p50 of each stage the server
reports (`"timings": true`).

    excerpt --index IDX serve --addr 127.0.0.1:8765 &
    scripts/query-bench.py --url http://127.0.0.1:8765 --queries QUERIES.jsonl \
        [--strategy topk --strategy auto] [--budget 1000] [--rounds 3] [--scoped] \
        [--mode dense]

The warm-up pass (each query once, with the first strategy) is reported on its own
row: each query's first run, before the memos kept across queries have seen it.

QUERIES.jsonl holds one {"query": ...} per line (an eval set's queries file will do;
with --scoped, a query's "doc" or "scope" restricts it as `excerpt eval` does). Queries
run one at a time, after one warm-up pass; the rounds are interleaved by strategy.

With --versus URL2 (a second build's server on the same index), each query goes to both
servers, one right after the other, in alternating order, and the per-query difference
(second minus first) is summed up: its median, its mean, and how many queries the second
answered faster. On a shared machine two runs of one build one after the other can
differ by a third; the paired difference of three rounds resolves about a tenth of a
millisecond (a few tenths with one round).

A query's time runs from before its connection is opened (or its request is sent, with
--keep-alive) to the last byte of the answer, read from a plain socket (the request
written at once, the answer's length taken from its Content-Length); the answer's JSON
is read after the clock stops. `--client urllib` times as the script did before
2026-11-28: through `urllib.request` (its opener, handlers and header parsing) with the JSON
read inside the clock, about a millisecond more a query on a 2-core machine, all of it
the client's."""
import argparse, json, socket, statistics, time, urllib.parse, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--versus", metavar="URL2",
                help="a second server to compare with, query by query (see above)")
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
ap.add_argument("--client", choices=["socket", "urllib"], default="socket",
                help="how a query is sent and timed (see above; default: socket)")
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


servers = [a.url] + ([a.versus] if a.versus else [])


def address(u):
    split = urllib.parse.urlsplit(u)
    return split.hostname, split.port or 80


def connect(u):
    sock = socket.create_connection(address(u))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


conns = {u: connect(u) for u in servers} if a.keep_alive else {}


def exchange(sock, request):
    """Writes `request` and reads one answer: (status, body bytes)."""
    sock.sendall(request)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("the server closed the connection before its answer")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = next((int(l.split(b":", 1)[1]) for l in lines[1:]
                   if l.lower().startswith(b"content-length:")), None)
    if length is None:
        raise SystemExit("an answer without Content-Length: try --client urllib")
    while len(body) < length:
        chunk = sock.recv(max(65536, length - len(body)))
        if not chunk:
            raise SystemExit("the server closed the connection mid-answer")
        body += chunk
    return status, body


def post(body, server=a.url):
    data = json.dumps(body).encode()
    if a.client == "urllib":
        start = time.perf_counter()
        req = urllib.request.Request(server.rstrip("/") + "/v1/query", data,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            out = json.load(r)
        return (time.perf_counter() - start) * 1000, out.get("timings", {})
    host, port = address(server)
    path = urllib.parse.urlsplit(server).path.rstrip("/") + "/v1/query"
    kept = server in conns
    request = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
               + ("" if kept else "Connection: close\r\n") + "\r\n").encode() + data
    start = time.perf_counter()
    sock = conns[server] if kept else connect(server)
    status, raw = exchange(sock, request)
    elapsed = (time.perf_counter() - start) * 1000
    if not kept:
        sock.close()
    out = json.loads(raw)
    if status != 200:
        raise SystemExit(f"HTTP {status}: {out}")
    return elapsed, out.get("timings", {})


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# Warm-up: model, caches, page cache. Its times are kept: each query's first run, before
# any memo kept across queries has seen it (the first query also loads the model).
first = {u: {} for u in servers}
for body in queries:
    for server in servers:
        ms, t = post(dict(body, strategy=strategies[0]), server)
        first[server].setdefault("wall", []).append(ms)
        for k, v in t.items():
            first[server].setdefault(k, []).append(v)
# Rows: a strategy, or with --versus a strategy on one of the two servers.
rows = [(s, u) for s in strategies for u in servers]
wall = {r: [] for r in rows}
stages = {r: {} for r in rows}
slow = {}
for n in range(a.rounds):
    for s in strategies:
        for i, body in enumerate(queries):
            order = servers if (n + i) % 2 == 0 else servers[::-1]
            for server in order:
                ms, t = post(dict(body, strategy=s), server)
                r = (s, server)
                wall[r].append(ms)
                slow.setdefault(r, []).append((ms, len(body["query"].split()), t))
                for k, v in t.items():
                    stages[r].setdefault(k, []).append(v)
conn_kind = "one kept-alive connection" if conns else "a connection each"
print(f"{len(queries)} queries x {a.rounds} rounds, budget {a.budget}, one at a time, {conn_kind}")
names = ["embed_ms", "lexical_ms", "dense_ms", "fusion_ms", "feedback_ms", "assembly_ms", "total_ms"]
label = (lambda r: f"`{r[0]}` {'A' if r[1] == a.url else 'B'}") if a.versus else (lambda r: f"`{r[0]}`")
print("| strategy | HTTP p50 | HTTP p99 | " + " | ".join(n[:-3] + " p50" for n in names) + " |")
print("|---" * (3 + len(names)) + "|")
for r in rows:
    cells = [f"{pct(wall[r], 50):.1f}", f"{pct(wall[r], 99):.1f}"]
    cells += [f"{statistics.median(stages[r][n]):.2f}" if n in stages[r] else "" for n in names]
    print(f"| {label(r)} | " + " | ".join(cells) + " |")
for u in servers:
    f = first[u]
    cells = [f"{statistics.median(f['wall']):.1f}", ""]
    cells += [f"{statistics.median(f[n]):.2f}" if n in f else "" for n in names]
    who = f" {'A' if u == a.url else 'B'}" if a.versus else ""
    print(f"| `{strategies[0]}`{who}, first run of each query | " + " | ".join(cells) + " |")
if a.versus:
    print(f"\nA: {a.url}, B: {a.versus}; B minus A, query by query (HTTP):")
    for s in strategies:
        d = [y - x for x, y in zip(wall[(s, a.url)], wall[(s, a.versus)])]
        print(f"  `{s}`: median {statistics.median(d):+.2f} ms, mean {statistics.mean(d):+.2f} ms, "
              f"p90 of A {pct(wall[(s, a.url)], 90):.1f} against B {pct(wall[(s, a.versus)], 90):.1f}; "
              f"B faster in {sum(x < 0 for x in d)} of {len(d)}")
if a.slowest:
    for r in rows:
        print(f"\n{label(r)}, the {a.slowest} slowest: HTTP ms, words, then each stage's ms")
        for ms, words, t in sorted(slow[r], key=lambda x: -x[0])[: a.slowest]:
            print(f"  {ms:7.1f} {words:4d}w  " + "  ".join(
                f"{n[:-3]} {t[n]:.1f}" for n in names if n in t))
