from __future__ import annotations

import json

import pytest

from assay.stages.pdf import route_pages
from assay.stages.pdf.reader import PdfReader
from assay.stages.pdf.routing import DEFAULT_MODEL, FEATURE_NAMES, PdfRouter, RouterModel
from assay.stages.pdf.textlayer import PdfTextLayer


def test_shipped_model_matches_features():
    m = RouterModel.load(DEFAULT_MODEL)
    assert len(m.weights) == len(m.mean) == len(m.std) == len(FEATURE_NAMES)
    cv = m.meta["grouped_cv"]["all"]
    assert cv["recall"] >= 0.95 and cv["precision"] >= 0.8  # held-out numbers recorded at training time


def test_route_pages_on_built_pdfs(tmp_path, pf):
    import pymupdf

    born = pf.text_pdf(tmp_path / "born.pdf", [pf.page_text(i) for i in range(3)])
    scan = pf.scanned_pdf(tmp_path / "scan.pdf", [pf.page_text(0), pf.page_text(1)], blank_pages=1)
    ocrd = pf.scanned_pdf(tmp_path / "ocrd.pdf", [pf.page_text(0)], invisible_layer=[pf.page_text(0)])
    shifted = "".join(chr(ord(c) - 1) if c.isascii() and c.isalpha() else c for c in pf.page_text(0) * 2)
    glyph = pf.text_pdf(tmp_path / "shift.pdf", [shifted])
    assert route_pages(born) == ["text", "text", "text"]
    assert route_pages(scan) == ["ocr", "ocr", "text"]  # the blank page has nothing to OCR
    assert route_pages(ocrd) == ["ocr"]
    assert route_pages(glyph) == ["ocr"]
    d = pymupdf.open()
    d.new_page().insert_text((72, 72), "Short form label")  # little text, no image: nothing for OCR
    d.save(str(tmp_path / "short.pdf"))
    assert route_pages(str(tmp_path / "short.pdf")) == ["text"]


def test_router_step(tmp_path, pf):
    born = pf.text_pdf(tmp_path / "born.pdf", [pf.page_text(0)])
    scan = pf.scanned_pdf(tmp_path / "scan.pdf", [pf.page_text(0), pf.page_text(1)])
    enc = pf.encrypted_pdf(tmp_path / "enc.pdf")
    step = PdfRouter()
    docs = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in step.run(PdfTextLayer().run(PdfReader([born, scan, enc]).run()))}
    assert json.loads(docs["born.pdf"].metadata["pdf__route"]) == ["text"]
    assert docs["born.pdf"].metadata["pdf__ocr_pages"] == 0 and docs["born.pdf"].metadata["pdf__ocr_share"] == 0.0
    assert docs["scan.pdf"].metadata["pdf__ocr_pages"] == 2 and docs["scan.pdf"].metadata["pdf__ocr_share"] == 1.0
    assert len(json.loads(docs["scan.pdf"].metadata["pdf__route_scores"])) == 2
    assert "pdf__route" not in docs["enc.pdf"].metadata
    assert step.stats["pages/ocr"].total == 2 and step.stats["pages/text"].total == 1
    # a threshold override moves the decision
    strict = PdfRouter(threshold=1.0)
    out = list(strict.run(iter([docs["scan.pdf"]])))
    assert out[0].metadata["pdf__ocr_pages"] == 0


def test_training_pipeline_small(tmp_path, pf):
    from assay.stages.pdf import train_router as tr

    data = tmp_path / "data"
    data.mkdir()
    pf.text_pdf(data / "born.pdf", [pf.page_text(i) for i in range(4)])
    pf.scanned_pdf(data / "scan.pdf", [pf.page_text(i) for i in range(3)])
    pf.text_pdf(data / "born2.pdf", [pf.page_text(i + 4) for i in range(3)])
    (data / "PDF_INVENTORY.tsv").write_text(
        "file\tbytes\tpages\tproducer\ttext_chars\tchars_per_page\timages\tkind_guess\n"
        "./born.pdf\t0\t4\t\t0\t0\t0\tborn-digital/has-text\n"
        "./scan.pdf\t0\t3\t\t0\t0\t3\timage-only\n"
        "./born2.pdf\t0\t3\t\t0\t0\t0\tborn-digital/has-text\n")
    out = tmp_path / "router.json"
    meta = tr.train(str(data), str(out), folds=2, verbose=False)
    kinds = meta["kinds"]
    assert kinds["real"] == 10 and sum(v for k, v in kinds.items() if k != "real") > 0
    m = RouterModel.load(str(out))
    assert meta["train"]["recall"] == 1.0
    assert route_pages(str(data / "scan.pdf"), model_path=str(out)) == ["ocr"] * 3


@pytest.mark.shared_data
def test_shared_pdfs(shared_data):
    base = shared_data / "pdf"
    assert route_pages(str(base / "ocrmypdf_scanned" / "skew.pdf")) == ["ocr"]
    assert route_pages(str(base / "docling_ocr" / "nemotron_multipage.pdf")) == ["ocr"] * 4
    assert route_pages(str(base / "olmocr_gnarly" / "dolma-page-1.pdf")) == ["ocr"]  # shifted glyph map
    assert route_pages(str(base / "ocrmypdf_scanned" / "graph_ocred.pdf")) == ["ocr"]  # OCR layer over a scan
    paper = route_pages(str(base / "arxiv_fullpapers" / "dolma-v0_1-20230819.pdf"))
    assert len(paper) == 12 and paper.count("text") >= 11
    assert route_pages(str(base / "docling" / "normal_4pages.pdf")) == ["text"] * 4
