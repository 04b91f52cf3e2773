#!/usr/bin/env python3
"""Builds the `pydocs-dev` development set: technical documentation with corpus-wide
questions, a third shape beside QMSum (meetings) and ContractNLI (contracts).

The documents are pages of the Python 3.11 library reference from Debian's
`python3.11-doc` package (installed by this script when missing), converted to Markdown
text (headings, paragraphs, fenced code, list items, definition terms). No page text is
kept in this repository: `data/pydocs-dev/questions.jsonl` holds our own questions, each
with its evidence as (page, index of a Markdown block), and a SHA-256 prefix of the
block's text, so a different package version is refused instead of silently scored.

    scripts/make-pydocs-set.py OUT_DIR            # writes OUT_DIR/pydocs-dev/{corpus,queries}.jsonl
    scripts/make-pydocs-set.py OUT_DIR --blocks PAGE   # lists a page's blocks (to write questions)

Questions are unscoped (the whole corpus is searched), as a user asks documentation.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
from html.parser import HTMLParser

HTML_DIR = "/usr/share/doc/python3.11/html/library"
HERE = os.path.dirname(os.path.abspath(__file__))
QUESTIONS = os.path.join(HERE, "..", "data", "pydocs-dev", "questions.jsonl")

# The pages of the set: varied modules, from one-function pages to long references.
PAGES = [
    "json", "pathlib", "argparse", "logging", "sqlite3", "asyncio-task", "re",
    "datetime", "subprocess", "collections", "functools", "itertools", "csv",
    "unittest", "threading", "shutil", "tempfile", "dataclasses", "typing",
    "os.path", "hashlib", "zipfile", "urllib.request", "socket", "venv",
]

# Elements that hold one block of text each (table rows and cells are handled apart).
BLOCK_TAGS = {"p", "li", "dt", "h1", "h2", "h3", "h4", "h5", "caption"}


class Converter(HTMLParser):
    """Sphinx HTML body to Markdown blocks: a list of (kind, text)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # depth inside the main body div, 0 = outside
        self.blocks = []
        self.cur = None  # (kind, [parts])
        self.skip = 0  # inside a headerlink anchor
        self.pre = 0
        self.row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.depth == 0:
            if tag == "div" and a.get("role") == "main":
                self.depth = 1
            return
        if tag == "div":
            self.depth += 1
        if tag == "a" and "headerlink" in (a.get("class") or ""):
            self.skip += 1
            return
        if tag == "pre":
            self.flush()
            self.pre += 1
            self.cur = ("pre", [])
        elif tag == "tr":
            self.flush()
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cur = ("cell", [])
        elif tag in BLOCK_TAGS and not self.pre:
            self.flush()
            self.cur = (tag, [])
        elif tag == "br" and self.cur:
            self.cur[1].append(" ")

    def handle_endtag(self, tag):
        if self.depth == 0:
            return
        if tag == "div":
            self.depth -= 1
            if self.depth == 0:
                self.flush()
            return
        if tag == "a" and self.skip:
            self.skip -= 1
            return
        if tag == "pre":
            self.pre -= 1
            self.flush()
        elif tag in ("td", "th") and self.row is not None and self.cur:
            self.row.append(" ".join("".join(self.cur[1]).split()))
            self.cur = None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.blocks.append(("row", "| " + " | ".join(self.row) + " |"))
            self.row = None
        elif tag in BLOCK_TAGS and not self.pre:
            self.flush()

    def handle_data(self, data):
        if self.depth == 0 or self.skip:
            return
        if self.cur is None:
            if data.strip() and not self.pre and self.row is None:
                self.cur = ("p", [])
            else:
                return
        self.cur[1].append(data)

    def flush(self):
        if self.cur is None:
            return
        kind, parts = self.cur
        self.cur = None
        text = "".join(parts)
        if kind == "pre":
            text = text.strip("\n")
        else:
            text = " ".join(text.split())
        if text:
            self.blocks.append((kind, text))


def page_blocks(page):
    path = os.path.join(HTML_DIR, page + ".html")
    with open(path, encoding="utf-8") as f:
        c = Converter()
        c.feed(f.read())
        c.close()
    return c.blocks


def render(blocks):
    """Markdown text and each block's (start, end) character offsets in it."""
    out, spans, at = [], [], 0
    prev = None
    for kind, text in blocks:
        if kind.startswith("h") and kind[1:].isdigit():
            prefix, suffix = "#" * int(kind[1:]) + " ", ""
        elif kind == "pre":
            prefix, suffix = "```\n", "\n```"
        elif kind == "li":
            prefix, suffix = "- ", ""
        else:
            prefix, suffix = "", ""
        # List items and table rows stay on consecutive lines; other blocks are
        # separated by a blank line.
        sep = "\n" if (kind in ("li", "row") and prev == kind) else "\n\n"
        if out:
            out.append(sep)
            at += len(sep)
        spans.append((at + len(prefix), at + len(prefix) + len(text)))
        block = prefix + text + suffix
        out.append(block)
        at += len(block)
        prev = kind
    return "".join(out) + "\n", spans


def digest(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def ensure_docs():
    if os.path.isdir(HTML_DIR):
        return
    print("installing python3.11-doc (Debian) ...", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-qq", "python3.11-doc"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--blocks", help="list the blocks of one page and exit")
    args = ap.parse_args()
    ensure_docs()
    if args.blocks:
        text, spans = render(page_blocks(args.blocks))
        for i, (s, e) in enumerate(spans):
            print(f"[{i}] {digest(text[s:e])} {text[s:e][:300]!r}")
        return
    docs = {}
    for page in PAGES:
        text, spans = render(page_blocks(page))
        docs[page] = (text, spans)
    os.makedirs(os.path.join(args.out, "pydocs-dev"), exist_ok=True)
    with open(os.path.join(args.out, "pydocs-dev", "corpus.jsonl"), "w", encoding="utf-8") as f:
        for page in PAGES:
            f.write(json.dumps({"id": page, "title": f"{page} (Python 3.11 library reference)", "text": docs[page][0]}, ensure_ascii=False) + "\n")
    n = 0
    with open(QUESTIONS, encoding="utf-8") as q, open(
        os.path.join(args.out, "pydocs-dev", "queries.jsonl"), "w", encoding="utf-8"
    ) as f:
        for line in q:
            if not line.strip():
                continue
            item = json.loads(line)
            evidence = []
            for ev in item["evidence"]:
                text, spans = docs[ev["page"]]
                if ev["block"] >= len(spans):
                    sys.exit(f"{item['id']}: page {ev['page']} has {len(spans)} blocks, not {ev['block'] + 1} (another python3.11-doc version?)")
                s, e = spans[ev["block"]]
                if digest(text[s:e]) != ev["sha"]:
                    sys.exit(f"{item['id']}: block {ev['page']}[{ev['block']}] differs from the one the question was written for (another python3.11-doc version?)")
                evidence.append({"doc_id": ev["page"], "start": s, "end": e})
            f.write(json.dumps({"id": item["id"], "query": item["query"], "evidence": evidence}) + "\n")
            n += 1
    print(f"pydocs-dev: {len(PAGES)} pages, {n} questions in {args.out}/pydocs-dev", file=sys.stderr)


if __name__ == "__main__":
    main()
