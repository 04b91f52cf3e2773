#!/usr/bin/env python3
"""Derives a development set with headings from ContractNLI: the same contracts and
questions, with every clause title line made a Markdown ATX heading (`## `), evidence
offsets moved by the characters inserted. It stands in for the documents with heading
structure (manuals, documentation, headed contracts) that the `auto` planner sends to
`section`, which neither development set has.

A clause title line: a line of at most 10 words that opens with a clause number
(`3.`, `3.2`, `11)`, `IV.`, `A.`) followed by a capitalised word, or a line of at most
8 words in capitals; a numbered line whose title ends with a full stop before more text
on the same line ("3. Limitations. The term ...") gets the heading on its own line (the
rest of the line after a newline inserted).

    scripts/make-headed-contracts.py SRC_DIR DEST_DIR
"""
import json
import os
import re
import sys

NUMBERED = re.compile(r"^(\s*)((?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-Z]\.|\d{1,2}\))\s+)([A-Z][^\n]*)$")
CAPS = re.compile(r"^\s*[A-Z][A-Z0-9 ,&'()\-]{2,}$")


def edits(text):
    """(position, inserted string) pairs, in order."""
    out = []
    pos = 0
    for line in text.split("\n"):
        m = NUMBERED.match(line)
        if m:
            title = m.group(3)
            head = re.match(r"^((?:[A-Z][\w’'\-]*|of|and|the|to|for|in|on|or|by|a|an)(?:\s+(?:[A-Z][\w’'\-]*|of|and|the|to|for|in|on|or|by|a|an)){0,7})([.:])\s+(?=\S)", title)
            if len(line.split()) <= 10 and not re.search(r"[.;,]\s*\S", title.rstrip(".:")):
                out.append((pos + len(m.group(1)), "## "))
            elif head:
                out.append((pos + len(m.group(1)), "## "))
                cut = pos + len(m.group(1)) + len(m.group(2)) + head.end()
                out.append((cut, "\n"))
        elif CAPS.match(line) and len(line.split()) <= 8:
            out.append((pos + len(line) - len(line.lstrip()), "## "))
        pos += len(line) + 1
    return out


def shift(edits_, offset):
    return offset + sum(len(s) for p, s in edits_ if p <= offset)


def main():
    src, dest = sys.argv[1], sys.argv[2]
    os.makedirs(dest, exist_ok=True)
    moves = {}
    n_heads = 0
    with open(os.path.join(src, "corpus.jsonl"), encoding="utf-8") as f, \
            open(os.path.join(dest, "corpus.jsonl"), "w", encoding="utf-8") as g:
        for line in f:
            d = json.loads(line)
            e = edits(d["text"])
            text = d["text"]
            for p, s in reversed(e):
                text = text[:p] + s + text[p:]
            moves[d["id"]] = e
            n_heads += sum(1 for _, s in e if s == "## ")
            d["text"] = text
            g.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(os.path.join(src, "queries.jsonl"), encoding="utf-8") as f, \
            open(os.path.join(dest, "queries.jsonl"), "w", encoding="utf-8") as g:
        for line in f:
            q = json.loads(line)
            for ev in q["evidence"]:
                e = moves[ev["doc_id"]]
                # A start at an insertion point stays before it; an end moves past it.
                ev["start"] = ev["start"] + sum(len(s) for p, s in e if p < ev["start"])
                ev["end"] = ev["end"] + sum(len(s) for p, s in e if p < ev["end"])
            g.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(moves)} documents, {n_heads} headings", file=sys.stderr)


if __name__ == "__main__":
    main()
