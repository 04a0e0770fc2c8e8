"""End to end on the shared PDFs: reader -> text layer -> router -> OCR (fake endpoint) -> artifacts."""

from __future__ import annotations

import json

import pytest

from assay.stages.pdf.artifacts import PdfArtifactSignals
from assay.stages.pdf.ocr import PdfOcr
from assay.stages.pdf.reader import PdfReader
from assay.stages.pdf.routing import PdfRouter
from assay.stages.pdf.textlayer import PdfTextLayer

ALLOWED = {"text", "ocr", "fallback", "pdf_ocr_failed", "pdf_ocr_unavailable"}


@pytest.mark.shared_data
def test_shared_pdfs_end_to_end(shared_data, ocr_server, fake_openai):
    base = shared_data / "pdf"
    body = ("# Scanned page\n\nThe quick survey of the archive found letters, receipts and printed forms. "
            "Each item was catalogued with its date, author and subject.\n\n"
            "<table><tr><th>Item</th><th>Year</th></tr><tr><td>Letter</td><td>1901</td></tr></table>")
    ocr_server.default = {"text": fake_openai.olmocr_answer(body)}
    paths = [str(base / "docling"), str(base / "ocrmypdf_scanned"),
             str(base / "olmocr_gnarly" / "dolma-page-1.pdf"),
             str(base / "pypdf_sample_files" / "005-libreoffice-writer-password"),
             str(shared_data / "warc" / "aut" / "aut_example.pdf.warc.gz")]
    steps = [PdfReader(paths), PdfTextLayer(), PdfRouter(),
             PdfOcr(server="endpoint", endpoint=ocr_server.url, model="olmocr-test", max_side=512,
                    http_backoff_s=0.01, request_timeout_s=10),
             PdfArtifactSignals()]
    gen = None
    for s in steps:
        gen = s.run(gen) if gen is not None else s.run()
    docs = list(gen)
    n_files = len(steps[0].list_files())
    assert len(docs) == n_files - 1 + 2  # the WARC carries two PDFs
    statuses = []
    for d in docs:
        assert d.metadata["source"] == "pdf"
        if d.metadata.get("reject_reason"):
            continue
        st = json.loads(d.metadata["pdf__page_status"])
        assert len(st) == d.metadata["pdf__n_pages"] and set(st) <= ALLOWED
        statuses += st
        assert "pdf__artifacts" in d.metadata and "pdf__failed_page_share" in d.metadata
        assert d.text.strip()
    assert statuses.count("ocr") >= 15 and statuses.count("text") >= 10
    rejected = {d.metadata["reject_reason"] for d in docs if d.metadata.get("reject_reason")}
    assert rejected == {"pdf_encrypted"}
    assert len(ocr_server.requests) >= 15
    by = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in docs}
    assert json.loads(by["skew.pdf"].metadata["pdf__page_status"]) == ["ocr"]
    assert "quick survey of the archive" in by["skew.pdf"].text
    assert json.loads(by["normal_4pages.pdf"].metadata["pdf__page_status"]) == ["text"] * 4
