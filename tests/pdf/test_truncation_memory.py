"""Truncated PDFs (repaired by MuPDF) and memory exhaustion in the isolated parse (fault-suite bugs)."""

from __future__ import annotations

import ctypes
import io
import mmap
import os
import signal
import zlib
from functools import partial
from pathlib import Path

import pytest

from assay.stages.pdf import _isolate
from assay.stages.pdf._pdfdoc import extract_document, open_pdf, structure_signals
from assay.stages.pdf.reader import PdfReader, probe_pdf
from assay.stages.pdf.textlayer import PdfTextLayer


def _read_one(path, **kw):
    docs = list(PdfReader([str(path)], **kw).run())
    assert len(docs) == 1
    return docs[0]


# ------------------------------------------------------------------------------------- truncation
@pytest.fixture()
def three_pages(tmp_path, pf) -> Path:
    return Path(pf.text_pdf(tmp_path / "whole.pdf", [pf.page_text(i) * 3 for i in range(3)]))


def test_whole_pdf_is_not_repaired(three_pages):
    m = _read_one(three_pages).metadata
    assert "reject_reason" not in m
    assert (m["pdf__repaired"], m["pdf__missing_pages"], m["pdf__trailer_lost"]) == (False, 0, False)


@pytest.mark.parametrize("fraction", [1 / 3, 2 / 3])
def test_pdf_cut_short_is_corrupt(tmp_path, three_pages, fraction):
    data = three_pages.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: int(len(data) * fraction)])
    doc = _read_one(cut)
    m = doc.metadata
    assert m["reject_reason"] == "pdf_corrupt"
    if "pdf__repaired" in m:  # MuPDF could open (repair) it: the truncation rule rejected it
        assert m["pdf__repaired"] is True and m["pdf__trailer_lost"] is True
    # from bytes (a WARC payload) the verdict is the same
    assert probe_pdf(cut.read_bytes())[0] == "pdf_corrupt"


def test_pdf_cut_before_the_xref_loses_its_trailer_but_no_page(tmp_path, three_pages):
    data = three_pages.read_bytes()
    cut = tmp_path / "noxref.pdf"
    cut.write_bytes(data[: data.rindex(b"xref", 0, data.rindex(b"startxref"))])
    reason, sig = probe_pdf(str(cut))
    assert reason == "pdf_corrupt" and sig["pdf__repaired"] and sig["pdf__trailer_lost"]
    assert sig["pdf__missing_pages"] == 0


def test_harmless_repairs_are_kept(tmp_path, three_pages):
    """MuPDF repairs files with a wrong startxref offset or junk after %%EOF; nothing is lost, keep them."""
    data = three_pages.read_bytes()
    k = data.rindex(b"startxref")
    bad_offset = tmp_path / "bad_offset.pdf"
    bad_offset.write_bytes(data[:k] + b"startxref\n17\n%%EOF\n")
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(data + b"\n<html>" + os.urandom(4096).hex().encode() + b"</html>\n")
    for p in (bad_offset, junk):
        m = _read_one(p).metadata
        assert "reject_reason" not in m, (p.name, m)
        assert m["pdf__missing_pages"] == 0 and m["pdf__trailer_lost"] is False and m["pdf__n_pages"] == 3
    assert _read_one(bad_offset).metadata["pdf__repaired"] is True


def test_page_tree_pointing_at_missing_objects_counts_missing_pages(tmp_path, three_pages):
    data = three_pages.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 3])
    d = open_pdf(str(cut))
    try:
        sig = structure_signals(d, str(cut))
        assert sig["repaired"] and sig["missing_pages"] >= 1 and d.page_count == 3
    finally:
        d.close()


@pytest.mark.shared_data
def test_truncation_rule_keeps_the_shared_real_world_pdfs(shared_data):
    files = sorted((shared_data / "pdf").rglob("*.pdf"))
    assert files
    repaired, truncated = [], []
    for f in files:
        reason, sig = probe_pdf(str(f), timeout_s=60)
        if sig.get("pdf__repaired"):
            repaired.append(f.name)
        if sig.get("pdf__trailer_lost") or (sig.get("pdf__repaired") and sig.get("pdf__missing_pages")):
            truncated.append(f.name)
    assert truncated == [], truncated
    assert len(repaired) <= 5, repaired  # 2 of 77 at the time of writing, both harmless


# ------------------------------------------------------------------------------------------ memory
def explode_pdf(path: Path, fanout: int = 1000) -> Path:
    """~10 KB one-page PDF: nested forms draw a string fanout**3 times, so extracting the text layer
    accumulates ~10**9 characters (memory explodes) while opening the file is instant."""
    def stream(body: bytes, extra: bytes = b"") -> bytes:
        data = zlib.compress(body, 9)
        return b"<< /Length %d /Filter /FlateDecode %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"

    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> /XObject << /X2 7 0 R >> >> >>",
        stream(b"/X2 Do\n" * fanout),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        stream(b"BT /F1 1 Tf 10 10 Td (x) Tj ET\n" * fanout, form + b"/Resources << /Font << /F1 5 0 R >> >> "),
        stream(b"/X1 Do\n" * fanout, form + b"/Resources << /XObject << /X1 6 0 R >> >> "),
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    path.write_bytes(out.getvalue())
    return path


def test_pdf_that_explodes_memory_is_oversized_not_corrupt(tmp_path):
    p = explode_pdf(tmp_path / "explode.pdf")
    doc = _read_one(p, timeout_s=20)
    assert "reject_reason" not in doc.metadata  # opening it is cheap and harmless
    status, _ = _isolate.run_isolated(partial(extract_document, ink_dpi=0), str(p), timeout_s=60, max_memory_mb=256)
    assert status == _isolate.MEMORY
    out = list(PdfTextLayer(timeout_s=60, max_memory_mb=256, ink_dpi=0).run(iter([doc])))
    assert out[0].metadata["reject_reason"] == "pdf_oversized"


def _segfault():
    ctypes.string_at(0)


def _grow_then_segfault(mb: int):
    hold = bytearray(mb * 1024 * 1024)  # touched: RSS grows
    hold[::4096] = b"\x01" * len(hold[::4096])
    ctypes.string_at(0)


def _grow_then_raise(mb: int):
    hold = bytearray(mb * 1024 * 1024)
    raise RuntimeError(f"parser gave up after {len(hold)} bytes")


def test_native_crash_is_crash_unless_memory_was_near_the_cap():
    assert _isolate.run_isolated(_segfault, timeout_s=20, max_memory_mb=256)[0] == _isolate.CRASH
    assert _isolate.run_isolated(_segfault, timeout_s=20, max_memory_mb=None)[0] == _isolate.CRASH
    assert _isolate.run_isolated(_grow_then_segfault, 200, timeout_s=20, max_memory_mb=256)[0] == _isolate.MEMORY
    # an exception after the child's address space reached the budget is memory too
    assert _isolate.run_isolated(_grow_then_raise, 200, timeout_s=20, max_memory_mb=256)[0] == _isolate.MEMORY
    status, msg = _isolate.run_isolated(_grow_then_raise, 8, timeout_s=20, max_memory_mb=256)
    assert status == _isolate.ERROR and "parser gave up" in msg


def test_classify_death_rule():
    mb = 1024 * 1024
    c = _isolate._classify_death
    assert c(signal.SIGSEGV, 10 * mb, 0, 100) == _isolate.CRASH
    assert c(signal.SIGSEGV, 60 * mb, 0, 100) == _isolate.MEMORY
    assert c(signal.SIGABRT, 560 * mb, 500 * mb, 100) == _isolate.MEMORY
    assert c(signal.SIGKILL, 0, 0, 100) == _isolate.MEMORY  # OOM killer
    assert c(signal.SIGSEGV, 900 * mb, 0, None) == _isolate.CRASH  # no budget, no memory verdict
    assert c(0, 900 * mb, 0, 100) == _isolate.CRASH  # exited without a result


def _allocate(mb: int) -> int:
    b = bytearray(mb * 1024 * 1024)
    return len(b)


def test_memory_budget_is_relative_to_the_worker_footprint():
    """A worker that already maps 1 GiB (untouched) still gives the child its full budget: the cap is
    the child's address space at fork + max_memory_mb, not an absolute RLIMIT_AS."""
    big = mmap.mmap(-1, 1 << 30)
    try:
        assert _isolate._statm()[0] > 1 << 30
        assert _isolate.run_isolated(_allocate, 128, timeout_s=20, max_memory_mb=256) == (_isolate.OK, 128 << 20)
        assert _isolate.run_isolated(_allocate, 512, timeout_s=20, max_memory_mb=256)[0] == _isolate.MEMORY
    finally:
        big.close()
    assert _isolate.address_space_cap(256, 1000) == 1000 + (256 << 20)
    assert _isolate.address_space_cap(256, None) == 256 << 20
