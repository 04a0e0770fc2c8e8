from __future__ import annotations

import json

import pytest

from assay.stages.pdf._pdfdoc import page_texts
from assay.stages.pdf.reader import PdfReader
from assay.stages.pdf.textlayer import PdfTextLayer


def _run(paths, **kw):
    return list(PdfTextLayer(**kw).run(PdfReader(paths).run()))


def test_two_column_reading_order(tmp_path, pf):
    left = [f"Left paragraph {i}. " + pf.LOREM for i in range(3)]
    right = [f"Right paragraph {i}. " + pf.LOREM for i in range(3)]
    p = pf.two_column_pdf(tmp_path / "cols.pdf", left, right)
    t = _run([p])[0].text
    order = [t.index(f"Left paragraph {i}") for i in range(3)] + [t.index(f"Right paragraph {i}") for i in range(3)]
    assert t.index("A Title Spanning") < order[0]
    assert order == sorted(order)  # whole left column, then whole right column


def test_features_and_signals(tmp_path, pf):
    born = pf.text_pdf(tmp_path / "born.pdf", [pf.page_text(0), pf.page_text(1)])
    scan = pf.scanned_pdf(tmp_path / "scan.pdf", [pf.page_text(0)], blank_pages=1)
    ocrd = pf.scanned_pdf(tmp_path / "ocrd.pdf", [pf.page_text(0)], invisible_layer=[pf.page_text(0)])
    docs = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in _run([born, scan, ocrd])}

    b = docs["born.pdf"].metadata
    assert b["pdf__n_pages"] == 2 and b["pdf__image_coverage"] == 0.0
    assert b["pdf__text_coverage"] > 0.05 and b["pdf__invisible_text"] == 0.0
    assert b["pdf__replacement_chars"] == 0 and b["pdf__font_problems"] == 0
    pages = json.loads(b["pdf__pages"])
    assert len(pages) == 2 and pages[0]["chars"] > 300
    assert pages[0]["ink"] is None  # text-rich page: no ink probe (see INK_MAX_CHARS)
    assert "Page marker 1" in page_texts(docs["born.pdf"])[0]
    assert "Page marker 2" in docs["born.pdf"].text

    s = docs["scan.pdf"].metadata
    sp = json.loads(s["pdf__pages"])
    assert sp[0]["chars"] == 0 and sp[0]["icov"] > 0.95 and sp[0]["ink"] > 0.01
    assert sp[1]["chars"] == 0 and sp[1]["icov"] == 0 and sp[1]["ink"] < 0.0005  # blank page
    assert docs["scan.pdf"].text == ""

    o = docs["ocrd.pdf"].metadata
    assert o["pdf__invisible_text"] == 1.0 and json.loads(o["pdf__pages"])[0]["inv_ratio"] == 1.0
    assert "Page marker 1" in docs["ocrd.pdf"].text

    for m in (b, s, o):
        for k in ("pdf__producer", "pdf__scanner_hint", "pdf__garbled_share", "pdf__text_chars"):
            assert k in m
        assert all(isinstance(v, (int, float, str, bool, type(None))) for k, v in m.items() if k.startswith("pdf__"))


def test_rejected_docs_pass_through_and_timeouts(tmp_path, pf):
    enc = pf.encrypted_pdf(tmp_path / "enc.pdf")
    good = pf.text_pdf(tmp_path / "good.pdf", [pf.page_text(0)])
    docs = _run([enc, good], timeout_s=1e-6)
    by = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in docs}
    assert by["enc.pdf"].metadata["reject_reason"] == "pdf_encrypted"
    assert by["good.pdf"].metadata["reject_reason"] == "pdf_timeout"


def test_tables_option(tmp_path, pf):
    import pymupdf

    d = pymupdf.open()
    p = d.new_page()
    x0, y0, w, h = 72, 100, 120, 24
    cells = [["name", "value"], ["alpha", "1"], ["beta", "2"], ["gamma", "3"]]
    for r, row in enumerate(cells):
        for c, val in enumerate(row):
            rect = pymupdf.Rect(x0 + c * w, y0 + r * h, x0 + (c + 1) * w, y0 + (r + 1) * h)
            p.draw_rect(rect, color=(0, 0, 0), width=1)
            p.insert_text((rect.x0 + 4, rect.y1 - 7), val, fontsize=10)
    path = tmp_path / "table.pdf"
    d.save(str(path))
    doc = _run([str(path)], tables=True)[0]
    assert json.loads(doc.metadata["pdf__pages"])[0]["tables"] == 1
    assert "|" in doc.text and "gamma" in doc.text


@pytest.mark.shared_data
def test_shared_bad_layers(shared_data):
    base = shared_data / "pdf"
    docs = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in _run([
        str(base / "olmocr_gnarly" / "dolma-page-1.pdf"),
        str(base / "ocrmypdf_scanned" / "graph_ocred.pdf"),
        str(base / "ocrmypdf_scanned" / "skew.pdf"),
        str(base / "arxiv_fullpapers" / "dolma-v0_1-20230819.pdf"),
    ])}
    assert docs["dolma-page-1.pdf"].metadata["pdf__font_problems"] == 1  # shifted glyph map
    assert docs["dolma-page-1.pdf"].metadata["pdf__garbled_share"] > 0.2
    assert docs["graph_ocred.pdf"].metadata["pdf__invisible_text"] == 1.0
    assert docs["skew.pdf"].metadata["pdf__scanner_hint"] is True  # libtiff / tiff2pdf
    assert docs["skew.pdf"].metadata["pdf__image_coverage"] == 1.0
    paper = docs["dolma-v0_1-20230819.pdf"].metadata
    assert paper["pdf__n_pages"] == 12 and paper["pdf__garbled_share"] < 0.05
    assert paper["pdf__scanner_hint"] is False and "pdfTeX" in paper["pdf__producer"]
