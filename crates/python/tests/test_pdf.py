"""PDFs from Python: in process, and through the binary's caged worker."""

import os
import shutil
from pathlib import Path

import pytest

import excerpt

# The binary of this checkout, for the worker (scripts/test-python.sh sets it).
BINARY = os.environ.get("EXCERPT_BIN") or shutil.which("excerpt")
PDFIUM = Path(
    os.environ.get("EXCERPT_HOME")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "excerpt"
) / "pdfium" / "libpdfium.so"


def pdf(pages):
    """A PDF with one line of Helvetica text per entry of `pages`, offsets computed."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        content = len(objects) + 1
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        page = len(objects) + 1
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            % content
        )
        kids.append(page)
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


PAGES = [
    "The lighthouse keeper lit the lamp at dusk every evening.",
    "Ships passing the cape signalled with three short blasts.",
]

needs_pdfium = pytest.mark.skipif(
    not PDFIUM.is_file() and not os.environ.get("EXCERPT_PDFIUM"),
    reason="PDFium is not installed (excerpt pdfium fetch, or scripts/fetch-pdfium.sh)",
)


@needs_pdfium
@pytest.mark.parametrize("caged", [False, True])
def test_a_pdf_ingests_with_its_pages(tmp_path, caged):
    if caged and not BINARY:
        pytest.skip("no excerpt binary (set EXCERPT_BIN)")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "light.pdf").write_bytes(pdf(PAGES))
    engine = excerpt.Engine(tmp_path / "idx")
    report = engine.ingest(tmp_path / "docs", pdf_worker=BINARY if caged else None)
    assert report["added"] == 1, report
    ctx = engine.query("which signal did ships give at the cape?", budget=200)
    top = ctx.pieces[0]
    assert "three short blasts" in top.text
    assert top.page_end == 2 and top.page_start in (1, 2), (top.page_start, top.page_end)
    assert engine.document_text(top.doc_id)[top.start : top.end] == top.text


def test_a_pdf_worker_that_cannot_run_skips_the_pdf_with_the_reason(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "light.pdf").write_bytes(pdf(PAGES))
    (tmp_path / "docs" / "note.txt").write_text("A plain note about lighthouses.\n")
    engine = excerpt.Engine(tmp_path / "idx")
    report = engine.ingest(tmp_path / "docs", pdf_worker=tmp_path / "no-such-binary")
    assert report["added"] == 1, report
    problems = report["skipped"] + report["failed"]
    assert any(p["path"].endswith("light.pdf") and "no-such-binary" in p["reason"] for p in problems), problems
