#!/usr/bin/env python3
# Copied verbatim (apart from this header) from shared/eval/score_context.py, the
# project's independent, standard-library reference scorer for the context-evaluation
# format (EVAL_FORMAT.md). The excerpt-eval tests run it as the oracle the native
# metrics must agree with; keep it in sync with the shared copy.
"""Score retrieved context against gold evidence spans (see EVAL_FORMAT.md).

Reads a corpus, a query set and a results file, and prints one line of JSON
with character-level evidence coverage and cost:

  recall     mean fraction of each query's evidence characters covered
  hit        fraction of queries with any evidence character covered
  full       fraction of queries with >= 90% of their evidence covered
  precision  evidence characters returned / all characters returned
  chars      mean characters returned per query (overlaps counted once)
  pieces     mean number of pieces returned per query
  bad_text   pieces whose "text" is not the corpus text at [start, end)

How the context reads (each piece counted within the budget):
  piece_chars  mean characters per piece
  whole        share of pieces that start and end on a sentence or line boundary
               (not mid-sentence; a piece cut by the budget counts by its real end)
  tiny         share of pieces under 80 characters (a heading or a phrase alone)
  in_order     share of same-document piece pairs given in reading order
  grouped      share of contexts whose pieces of each document come together

Standard library only. usage:
  score_context.py --corpus C.jsonl --queries Q.jsonl --results R.jsonl
                   [--budget-chars N] [--max-pieces K]
With --budget-chars, pieces are taken in the order given until N characters
are used (the last one cut), so strategies can be compared at equal cost.
With --max-pieces, only the first K pieces count: recall then rewards context
that covers the evidence in a few coherent passages rather than many fragments.
"""
import argparse
import json
import sys


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def union(spans):
    out = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(xs, ys):
    i = j = total = 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0, b - a)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


SENTENCE_END = ".!?;:"
CLOSERS = "\"')]\u201d\u2019*`"


def clean_start(text, a):
    """A piece starts cleanly at a line start or after a sentence's end."""
    if a == 0:
        return True
    i = a - 1
    if text[i] == "\n":
        return True
    if not text[i].isspace():
        return False
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] == "\n":
        return True
    while i >= 0 and text[i] in CLOSERS:
        i -= 1
    return i >= 0 and text[i] in SENTENCE_END


def clean_end(text, b):
    """A piece ends cleanly at a line end or right after a sentence's end."""
    if b >= len(text) or text[b] == "\n":
        return True
    j = b - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    if j < 0 or text[j] == "\n":
        return True
    while j >= 0 and text[j] in CLOSERS:
        j -= 1
    return j >= 0 and text[j] in SENTENCE_END and (b >= len(text) or text[b].isspace() or j < b - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--budget-chars", type=int, default=0)
    ap.add_argument("--max-pieces", type=int, default=0)
    args = ap.parse_args()

    texts = {d["id"]: d["text"] for d in load_jsonl(args.corpus)}
    queries = {q["id"]: q for q in load_jsonl(args.queries)}
    results = {r["query_id"]: r for r in load_jsonl(args.results)}

    n = len(queries)
    missing = [qid for qid in queries if qid not in results]
    recall = hit = full = ev_ret = ret = pieces = bad = 0
    piece_chars = whole = tiny = pairs = ordered = grouped = contexts = 0
    for qid, q in queries.items():
        gold = {}
        for e in q["evidence"]:
            gold.setdefault(e["doc_id"], []).append((e["start"], e["end"]))
        got, used, taken = {}, 0, []
        for p in results.get(qid, {}).get("pieces", []):
            if args.max_pieces and len(taken) >= args.max_pieces:
                break
            a, b = int(p["start"]), int(p["end"])
            text = texts.get(p["doc_id"])
            if text is None or not (0 <= a <= b <= len(text)):
                bad += 1
                continue
            if "text" in p and p["text"] != text[a:b]:
                bad += 1
            if args.budget_chars:
                if used >= args.budget_chars:
                    break
                b = min(b, a + args.budget_chars - used)
                used += b - a
            pieces += 1
            piece_chars += b - a
            whole += clean_start(text, a) and clean_end(text, int(p["end"]))
            tiny += b - a < 80
            taken.append((p["doc_id"], a))
            got.setdefault(p["doc_id"], []).append((a, b))
        for i, (d1, a1) in enumerate(taken):
            for d2, a2 in taken[i + 1:]:
                if d1 == d2:
                    pairs += 1
                    ordered += a2 >= a1
        if taken:
            contexts += 1
            runs = [d for k, d in enumerate(d for d, _ in taken) if k == 0 or taken[k - 1][0] != d]
            grouped += len(runs) == len(set(runs))
        gold_chars = covered = returned = 0
        for doc, spans in gold.items():
            g = union(spans)
            gold_chars += sum(b - a for a, b in g)
            covered += overlap(g, union(got.get(doc, [])))
        for doc, spans in got.items():
            u = union(spans)
            returned += sum(b - a for a, b in u)
        frac = covered / gold_chars if gold_chars else 0.0
        recall += frac
        hit += covered > 0
        full += frac >= 0.9
        ev_ret += covered
        ret += returned
    out = {
        "queries": n,
        "missing": len(missing),
        "recall": round(recall / n, 4),
        "hit": round(hit / n, 4),
        "full": round(full / n, 4),
        "precision": round(ev_ret / ret, 4) if ret else 0.0,
        "chars": round(ret / n, 1),
        "pieces": round(pieces / n, 2),
        "bad_text": bad,
        "piece_chars": round(piece_chars / pieces, 1) if pieces else 0.0,
        "whole": round(whole / pieces, 4) if pieces else 0.0,
        "tiny": round(tiny / pieces, 4) if pieces else 0.0,
        "in_order": round(ordered / pairs, 4) if pairs else 1.0,
        "grouped": round(grouped / contexts, 4) if contexts else 1.0,
    }
    print(json.dumps(out))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
