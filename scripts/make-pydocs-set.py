#!/usr/bin/env python3
"""Builds the `pydocs-dev`, `pydocs-long` and `pydocs-nav` development sets: technical
documentation with corpus-wide questions, a third shape beside QMSum (meetings) and
ContractNLI (contracts).

The documents are pages of the Python 3.11 library reference from Debian's
`python3.11-doc` package (installed by this script when missing), converted to Markdown
text (headings, paragraphs, fenced code, list items, definition terms). No page text is
kept in this repository: the question files hold our own questions, each with its evidence
as (page, index of a Markdown block), and a SHA-256 prefix of the block's text, so a
different package version is refused instead of silently scored.

- `pydocs-dev`: `data/pydocs-dev/questions.jsonl`, one paragraph (rarely two) of evidence
  per question, one span per block.
- `pydocs-long`: `data/pydocs-dev/long-questions.jsonl`, same 25 pages, questions whose
  answer is a whole explanation: consecutive blocks (merged into one span per run), and
  about one question in six with evidence in two separate places. Starting points were
  drawn with `--draw` (seed 29) and extended by hand to the end of the explanation.
- `pydocs-nav`: the same pages with website chrome as a scraper captures it (navigation
  and a list of links to every page of the set at the top, a footer at the bottom, the
  same or nearly the same on every page), and the questions of both sets above with
  their evidence offsets shifted; it measures whether repeated blocks outrank the text
  that answers.

    scripts/make-pydocs-set.py OUT_DIR            # writes OUT_DIR/pydocs-{dev,long,nav}/{corpus,queries}.jsonl
    scripts/make-pydocs-set.py OUT_DIR --sets long   # only some of the sets (comma-separated)
    scripts/make-pydocs-set.py OUT_DIR --blocks PAGE   # lists a page's blocks (to write questions)
    scripts/make-pydocs-set.py OUT_DIR --draw 80       # the seeded (page, block) starting points

Questions are unscoped (the whole corpus is searched), as a user asks documentation.
"""

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
from html.parser import HTMLParser

HTML_DIR = "/usr/share/doc/python3.11/html/library"
HERE = os.path.dirname(os.path.abspath(__file__))
QUESTIONS = os.path.join(HERE, "..", "data", "pydocs-dev", "questions.jsonl")
LONG_QUESTIONS = os.path.join(HERE, "..", "data", "pydocs-dev", "long-questions.jsonl")
DRAW_SEED = 29  # the seed of the draw that chose pydocs-long's starting points
SETS = ("dev", "long", "nav")
MAX_SHIFT = 5  # how far (in blocks) a run of evidence blocks is looked for when not in place

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


def locate(qid, run, docs):
    """Block indices of one run of consecutive evidence blocks of one page. The SHA-256
    prefixes name the text; the indices are where it was when the question was written.
    When the text is not there, the run is looked for a few blocks away (all its blocks at
    the same shift), so a block added or removed elsewhere on the page does not void it;
    text that changed is refused."""
    page = run[0]["page"]
    text, spans = docs[page]

    def fits(d):
        for ev in run:
            i = ev["block"] + d
            if not 0 <= i < len(spans) or digest(text[spans[i][0]:spans[i][1]]) != ev["sha"]:
                return False
        return True

    for d in sorted(range(-MAX_SHIFT, MAX_SHIFT + 1), key=abs):
        if fits(d):
            if d:
                print(f"note: {qid}: {page}[{run[0]['block']}..{run[-1]['block']}] found {d:+d} blocks away", file=sys.stderr)
            return [ev["block"] + d for ev in run]
    sys.exit(f"{qid}: block {page}[{run[0]['block']}] (or one after it) differs from the one the question was written for (another python3.11-doc version?)")


def load_questions(path, docs, merge):
    """Questions of one file as (id, query, [(page, start, end)]), every evidence block
    checked against its SHA-256 prefix. With `merge`, consecutive blocks of one page
    become one span (the separators between them included); otherwise one span a block."""
    out = []
    with open(path, encoding="utf-8") as q:
        for line in q:
            if not line.strip():
                continue
            item = json.loads(line)
            runs = []
            for ev in item["evidence"]:
                if runs and runs[-1][-1]["page"] == ev["page"] and runs[-1][-1]["block"] + 1 == ev["block"]:
                    runs[-1].append(ev)
                else:
                    runs.append([ev])
            spans = []
            for run in runs:
                page = run[0]["page"]
                bounds = docs[page][1]
                idx = locate(item["id"], run, docs)
                if merge:
                    spans.append((page, bounds[idx[0]][0], bounds[idx[-1]][1]))
                else:
                    spans.extend((page, *bounds[i]) for i in idx)
            out.append((item["id"], item["query"], spans))
    return out


def page_title(page):
    return f"{page} (Python 3.11 library reference)"


def chrome(page, headings):
    """Website chrome around one page, as a scraper keeps it: (header, footer). Only the
    next/previous links and the page's own name differ from page to page."""
    i = PAGES.index(page)
    nxt, prv = PAGES[(i + 1) % len(PAGES)], PAGES[i - 1]
    nav = "\n".join([
        '- [index](../genindex.html "General Index")',
        '- [modules](../py-modindex.html "Python Module Index") |',
        f'- [next]({nxt}.html "{headings[nxt]}") |',
        f'- [previous]({prv}.html "{headings[prv]}") |',
        "- [Python](https://www.python.org/) »",
        "- [3.11 Documentation](../index.html) »",
        "- [The Python Standard Library](index.html) »",
    ])
    links = "\n".join(f"- [{headings[p]}]({p}.html)" for p in PAGES)
    header = (
        "Python 3.11 documentation\n\n"
        "### Navigation\n\n" + nav + "\n\n"
        "Theme: Auto | Light | Dark\n\n"
        "Quick search: Go\n\n"
        "### Pages in this part of the library reference\n\n" + links + "\n\n"
        f"You are here: Python » 3.11 Documentation » The Python Standard Library » {headings[page]}"
    )
    footer = (
        "### This Page\n\n"
        "- [Report a Bug](../bugs.html)\n"
        f"- [Show Source](https://github.com/python/cpython/blob/3.11/Doc/library/{page}.rst)\n\n"
        "### Navigation\n\n" + nav + "\n\n"
        "© Copyright 2001-2023, Python Software Foundation. This page is licensed under the "
        "Python Software Foundation License Version 2; its examples and code snippets are "
        "also licensed under the Zero Clause BSD License. See History and License for details.\n\n"
        "The Python Software Foundation is a non-profit corporation. Please donate.\n\n"
        "Last updated on Sep 12, 2023. Found a bug? Tell us on the issue tracker.\n\n"
        "Created using Sphinx 5.3.0. Theme: python-docs-theme (switch to Auto, Light or Dark)."
    )
    return header, footer


def write_set(out, name, corpus, questions):
    """corpus: [(page, text)]; questions: [(id, query, [(page, start, end)])]."""
    os.makedirs(os.path.join(out, name), exist_ok=True)
    with open(os.path.join(out, name, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for page, text in corpus:
            f.write(json.dumps({"id": page, "title": page_title(page), "text": text}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, name, "queries.jsonl"), "w", encoding="utf-8") as f:
        for qid, query, spans in questions:
            evidence = [{"doc_id": p, "start": s, "end": e} for p, s, e in spans]
            f.write(json.dumps({"id": qid, "query": query, "evidence": evidence}) + "\n")


def summary(name, questions):
    chars = sorted(sum(e - s for _, s, e in spans) for _, _, spans in questions)
    nspans = [len(spans) for _, _, spans in questions]
    pages = {p for _, _, spans in questions for p, _, _ in spans}
    two = sum(1 for n in nspans if n > 1)
    print(f"{name}: {len(questions)} questions, evidence characters min {chars[0]} / median "
          f"{statistics.median(chars):.0f} / max {chars[-1]}, spans per question "
          f"{min(nspans)}-{max(nspans)} ({two} with more than one), {len(pages)} pages", file=sys.stderr)


def draw(n, docs):
    """The seeded starting points: a page uniformly, then a block of it uniformly."""
    rng = random.Random(DRAW_SEED)
    for i in range(n):
        page = rng.choice(PAGES)
        text, spans = docs[page]
        b = rng.randrange(len(spans))
        s, e = spans[b]
        print(f"{i} {page} [{b}] {text[s:e][:100]!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--blocks", help="list the blocks of one page and exit")
    ap.add_argument("--draw", type=int, metavar="N", help="print the first N seeded starting points and exit")
    ap.add_argument("--sets", default=",".join(SETS), help="which sets to write (default: %(default)s)")
    args = ap.parse_args()
    ensure_docs()
    if args.blocks:
        text, spans = render(page_blocks(args.blocks))
        for i, (s, e) in enumerate(spans):
            print(f"[{i}] {digest(text[s:e])} {text[s:e][:300]!r}")
        return
    sets = [x for x in args.sets.split(",") if x]
    for x in sets:
        if x not in SETS:
            sys.exit(f"unknown set {x!r} (known: {', '.join(SETS)})")
    docs, headings = {}, {}
    for page in PAGES:
        blocks = page_blocks(page)
        docs[page] = render(blocks)
        headings[page] = blocks[0][1]
    if args.draw:
        draw(args.draw, docs)
        return
    dev = load_questions(QUESTIONS, docs, merge=False)
    long = load_questions(LONG_QUESTIONS, docs, merge=True)
    if "dev" in sets:
        write_set(args.out, "pydocs-dev", [(p, docs[p][0]) for p in PAGES], dev)
        summary("pydocs-dev", dev)
    if "long" in sets:
        write_set(args.out, "pydocs-long", [(p, docs[p][0]) for p in PAGES], long)
        summary("pydocs-long", long)
    if "nav" in sets:
        corpus, shift = [], {}
        for p in PAGES:
            header, footer = chrome(p, headings)
            shift[p] = len(header) + 2
            corpus.append((p, header + "\n\n" + docs[p][0] + "\n" + footer + "\n"))
        nav = [(qid, query, [(p, s + shift[p], e + shift[p]) for p, s, e in spans]) for qid, query, spans in dev + long]
        write_set(args.out, "pydocs-nav", corpus, nav)
        summary("pydocs-nav", nav)
    print(f"{', '.join('pydocs-' + x for x in sets)}: {len(PAGES)} pages each, in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
