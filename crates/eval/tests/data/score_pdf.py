# Copied verbatim (apart from this header) from shared/eval/score_pdf.py, the project's
# independent, standard-library reference scorer for page-evidence query sets
# (financebench-dev). The excerpt-eval tests run it as the oracle the native page
# metrics must agree with; keep it in sync with the shared copy.
"""Scores contexts for PDF questions whose evidence is annotators' text and page numbers (FinanceBench),
independent of how a system extracted the PDF's text.
usage: score_pdf.py --queries Q.jsonl --results R.jsonl [--budget-chars N] [--max-pieces K]
results: one line per query {"id", "pieces": [{"doc_id", "text", "page_start"?, "page_end"?}]} in order;
pieces are cut at the character budget in order; with --max-pieces only the first K count.
text_recall: share of the evidence's word 4-grams (lower-cased, alphanumerics only) found in the context;
page_hit: some piece's page range covers a gold evidence page (0 when pieces carry no pages);
pieces: mean pieces counted; tiny: share of counted pieces under 80 characters."""
import argparse, json, re, statistics

ap = argparse.ArgumentParser()
ap.add_argument("--queries", required=True); ap.add_argument("--results", required=True)
ap.add_argument("--budget-chars", type=int, default=0); ap.add_argument("--max-pieces", type=int, default=0)
a = ap.parse_args()
words = lambda s: re.findall(r"[a-z0-9]+", s.lower())
grams = lambda w: {tuple(w[i:i + 4]) for i in range(max(0, len(w) - 3))} or ({tuple(w)} if w else set())
qs = {json.loads(l)["id"]: json.loads(l) for l in open(a.queries)}
res = {json.loads(l)["id"]: json.loads(l) for l in open(a.results)}
tr, ph, chars, npieces, tiny = [], [], [], [], []
for qid, q in qs.items():
    ps = res.get(qid, {}).get("pieces", [])
    left, ctx, pages = a.budget_chars or 10**12, [], []
    for p in ps:
        if a.max_pieces and len(ctx) >= a.max_pieces: break
        t = p.get("text", "")[:left]
        if not t: break
        left -= len(t); ctx.append(t)
        if "page_start" in p: pages.append((p["page_start"], p.get("page_end", p["page_start"])))
    have = grams(words(" ".join(ctx)))
    gold = set().union(*[grams(words(e["text"])) for e in q["evidence"]]) if q["evidence"] else set()
    tr.append(len(gold & have) / len(gold) if gold else 0.0)
    ph.append(1.0 if any(s <= e["page"] <= t for e in q["evidence"] for s, t in pages) else 0.0)
    chars.append(sum(map(len, ctx))); npieces.append(len(ctx)); tiny += [len(t) < 80 for t in ctx]
print(json.dumps({"queries": len(qs), "missing": sum(1 for q in qs if q not in res), "text_recall": round(statistics.mean(tr), 4),
                  "page_hit": round(statistics.mean(ph), 4), "chars": round(statistics.mean(chars), 1),
                  "pieces": round(statistics.mean(npieces), 2), "tiny": round(sum(tiny) / len(tiny), 4) if tiny else 0.0}))
