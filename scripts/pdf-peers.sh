#!/usr/bin/env bash
# Measures the PDF extractors Excerpt's loader was chosen against, on the same data:
# pdf_oxide (pure Rust, through its PyPI wheel, which wraps the Rust crate), plain
# pypdfium2 (the PDFium build Excerpt loads) and pdfplumber (pdfminer.six).
#
#   scripts/pdf-peers.sh [DOCLING_DIR] [LONG_PDF]
#
# 1. pdf_oxide's Markdown (headings detected) of every Docling test PDF, scored by
#    scripts/pdf-eval.py --ours exactly like Excerpt's loader;
# 2. pages per second of each extractor on LONG_PDF (default: the 619-page file of
#    ../shared/data/pdf-unstructured), text only, three runs (pdfplumber one).
# The packages go into a virtual environment under the cache ($EXCERPT_HOME/pdf-peers);
# nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
docling="${1:-../shared/data/pdf-docling}"
long="${2:-../shared/data/pdf-unstructured/DA-619p.pdf}"
home="${EXCERPT_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/excerpt}"
venv="$home/pdf-peers"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pdf_oxide==0.3.78 pypdfium2==5.15.2 pdfplumber==0.11.10
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$venv/bin/python" - "$out" "$docling"/pdf/*.pdf <<'PY' 2>/dev/null
import os, sys
import pdf_oxide
dest = sys.argv[1]
for path in sys.argv[2:]:
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        doc = pdf_oxide.PdfDocument(path)
        pages = [doc[i].markdown(detect_headings=True) for i in range(doc.page_count())]
    except Exception as e:  # a file pdf_oxide refuses is reported, not fatal
        print(f"{name}: {e}", file=sys.stderr)
        continue
    with open(os.path.join(dest, name + ".md"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(pages))
PY
echo "## pdf_oxide against Docling's ground truth"
python3 scripts/pdf-eval.py "$docling" --ours "$out"

echo
echo "## Pages per second on $(basename "$long")"
"$venv/bin/python" - "$long" <<'PY' 2>/dev/null
import sys, time
import pdf_oxide, pypdfium2, pdfplumber
path = sys.argv[1]

def oxide():
    doc = pdf_oxide.PdfDocument(path)
    n = doc.page_count()
    return n, sum(len(doc.extract_text(i)) for i in range(n))

def pdfium():
    doc = pypdfium2.PdfDocument(path)
    return len(doc), sum(len(p.get_textpage().get_text_range()) for p in doc)

def plumber():
    with pdfplumber.open(path) as doc:
        return len(doc.pages), sum(len(p.extract_text() or "") for p in doc.pages)

for name, run, reps in (("pdf_oxide", oxide, 3), ("pypdfium2", pdfium, 3), ("pdfplumber", plumber, 1)):
    for _ in range(reps):
        t = time.perf_counter()
        pages, chars = run()
        dt = time.perf_counter() - t
        print(f"{name:10} {pages} pages {chars:>9} chars {dt:7.2f} s {pages / dt:7.1f} pages/s")
PY
