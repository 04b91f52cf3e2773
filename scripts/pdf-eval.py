#!/usr/bin/env python3
"""Scores Excerpt's PDF loader against Docling's Markdown ground truth.

For every `groundtruth/<name>.md` with a `pdf/<name>.pdf` beside it, the PDF is loaded by
Excerpt's loader (the `pdf_dump` example of excerpt-ingest writes each document's text
with its section headings marked `#`), then per document:

- heading precision / recall: heading texts (lines starting with `#`) compared as sets
  after normalisation (lowercase, letters and digits only);
- text word F1: words (lowercase, `\\w+`) of the whole text as multisets, Markdown
  syntax (`#`, table pipes and rules, `<!-- image -->`) removed from the ground truth.

Prints one row per document and the means. Standard library only.

    scripts/pdf-eval.py [DATA_DIR]   # default: ../shared/data/pdf-docling
    scripts/pdf-eval.py DATA_DIR --ours DIR   # score Markdown already written to DIR
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

WORD = re.compile(r"\w+", re.UNICODE)


def norm_heading(s):
    return "".join(c for c in s.lower() if c.isalnum())


def headings(md):
    out = set()
    for line in md.splitlines():
        m = re.match(r"^\s{0,3}(#{1,6})\s+(.*)$", line)
        if m:
            h = norm_heading(m.group(2))
            if h:
                out.add(h)
    return out


def plain(md):
    md = re.sub(r"<!--.*?-->", " ", md, flags=re.S)
    lines = []
    for line in md.splitlines():
        if re.match(r"^\s*\|?\s*:?-{3,}", line):
            continue  # table rule
        line = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)
        lines.append(line.replace("|", " "))
    return "\n".join(lines)


def words(text):
    return collections.Counter(w.lower() for w in WORD.findall(text))


def f1(ours, truth):
    common = sum((ours & truth).values())
    if common == 0:
        return 0.0
    p = common / sum(ours.values())
    r = common / sum(truth.values())
    return 2 * p * r / (p + r)


def pr(ours, truth):
    if not truth and not ours:
        return 1.0, 1.0
    hit = len(ours & truth)
    p = hit / len(ours) if ours else 0.0
    r = hit / len(truth) if truth else 1.0
    return p, r


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=os.path.join(here, "..", "..", "shared", "data", "pdf-docling"))
    ap.add_argument("--ours", help="directory of <name>.md already written by pdf_dump")
    args = ap.parse_args()
    gt_dir = os.path.join(args.data, "groundtruth")
    pdf_dir = os.path.join(args.data, "pdf")
    names = sorted(
        n[:-3] for n in os.listdir(gt_dir)
        if n.endswith(".md") and os.path.exists(os.path.join(pdf_dir, n[:-3] + ".pdf"))
    )
    ours_dir = args.ours
    tmp = None
    if ours_dir is None:
        tmp = tempfile.TemporaryDirectory()
        ours_dir = tmp.name
        cmd = ["cargo", "run", "-q", "-p", "excerpt-ingest", "--example", "pdf_dump", "--",
               "--markdown", ours_dir] + [os.path.join(pdf_dir, n + ".pdf") for n in names]
        subprocess.run(cmd, check=True, cwd=os.path.join(here, ".."), stdout=sys.stderr)
    rows = []
    print(f"{'document':28} {'heads':>5} {'ours':>5} {'P':>5} {'R':>5} {'text F1':>7}")
    for n in names:
        with open(os.path.join(gt_dir, n + ".md"), encoding="utf-8") as f:
            truth = f.read()
        path = os.path.join(ours_dir, n + ".md")
        if not os.path.exists(path):
            print(f"{n:28} (not loaded)")
            rows.append((0.0, 0.0, 0.0))
            continue
        with open(path, encoding="utf-8") as f:
            ours = f.read()
        th, oh = headings(truth), headings(ours)
        p, r = pr(oh, th)
        t = f1(words(plain(ours)), words(plain(truth)))
        rows.append((p, r, t))
        print(f"{n:28} {len(th):5} {len(oh):5} {p:5.2f} {r:5.2f} {t:7.3f}")
    k = len(rows) or 1
    mp, mr, mt = (sum(x[i] for x in rows) / k for i in range(3))
    print(f"{'mean of ' + str(len(rows)):28} {'':5} {'':5} {mp:5.2f} {mr:5.2f} {mt:7.3f}")


if __name__ == "__main__":
    main()
