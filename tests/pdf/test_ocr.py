"""PdfOcr against a real local HTTP server with scripted answers and injected failures."""

from __future__ import annotations

import json
import socket

import pytest

from assay.stages.pdf.ocr import PdfOcr, parse_olmocr_output, render_page_image
from assay.stages.pdf.reader import PdfReader
from assay.stages.pdf.textlayer import PdfTextLayer

MAX_SIDE = 640  # small renders keep the tests fast
ALLOWED = {"text", "ocr", "fallback", "pdf_ocr_failed", "pdf_ocr_unavailable"}


def _prepare(paths, routes: dict[str, list[str]]):
    docs = list(PdfTextLayer().run(PdfReader(paths).run()))
    for d in docs:
        name = d.id.rsplit("/", 1)[-1].removeprefix("pdf:")
        if name in routes:
            d.metadata["pdf__route"] = json.dumps(routes[name])
    return docs


def _img(doc, i, rotate=0):
    icov = json.loads(doc.metadata["pdf__pages"])[i]["icov"]
    return render_page_image(doc.metadata["path"], i, max_side=MAX_SIDE, rotate=rotate, image_coverage=icov)[0]


def _ocr(srv, docs, **kw):
    params = dict(server="endpoint", endpoint=srv.url, model="olmocr-test", max_side=MAX_SIDE, http_backoff_s=0.01,
                  request_timeout_s=5.0, render_workers=0)
    params.update(kw)
    step = PdfOcr(**params)
    out = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in step.run(iter(docs))}
    return step, out


def _status(doc):
    return json.loads(doc.metadata["pdf__page_status"])


def test_parse_front_matter(fake_openai):
    fm, body = parse_olmocr_output(fake_openai.olmocr_answer("Body **text**", rotation_valid=False, correction=90))
    assert fm["is_rotation_valid"] is False and fm["rotation_correction"] == 90 and fm["primary_language"] == "en"
    assert body == "Body **text**"
    assert parse_olmocr_output("no front matter") == ({}, "no front matter")


def test_content_retries_ladder_and_failure_without_layer(tmp_path, pf, ocr_server, fake_openai):
    A = fake_openai.olmocr_answer
    scan = pf.scanned_pdf(tmp_path / "scan.pdf", [pf.page_text(i) for i in range(3)])
    docs = _prepare([scan], {"scan.pdf": ["ocr", "ocr", "ocr"]})
    d = docs[0]
    good = [A(pf.page_text(i)) for i in range(3)]
    loop = A(pf.page_text(1) + " and so on" * 40)
    k0 = ocr_server.script(_img(d, 0), [{"text": good[0]}])
    k1 = ocr_server.script(_img(d, 1), [{"text": loop}, {"text": loop}, {"text": good[1]}])
    k2 = ocr_server.script(_img(d, 2), [{"text": good[2][: len(good[2]) // 2], "finish_reason": "length"}])
    step, out = _ocr(ocr_server, docs, max_attempts=4)
    doc = out["scan.pdf"]
    assert _status(doc) == ["ocr", "ocr", "pdf_ocr_failed"]
    assert ocr_server.temperatures(k0) == [0.1]
    assert ocr_server.temperatures(k1) == [0.1, 0.2, 0.4]  # rising ladder on tail loops
    assert ocr_server.temperatures(k2) == [0.1, 0.2, 0.4, 0.6]  # truncated every time -> gives up
    assert "Page marker 1" in doc.text and "Page marker 2" in doc.text and "Page marker 3" not in doc.text
    md = doc.metadata
    assert md["pdf__ocr_ok_pages"] == 2 and md["pdf__ocr_failed_pages"] == 1 and md["pdf__ocr_retried_pages"] == 2
    assert md["pdf__failed_page_share"] == round(1 / 3, 4) and md["pdf__ocr_requests"] == 8
    assert md["pdf__ocr_backend"] == "endpoint" and md["pdf__ocr_languages"] == "en"
    assert step.stats["pages/failed"].total == 1


def test_http_errors_timeouts_wrong_page_and_fallback(tmp_path, pf, ocr_server, fake_openai):
    A = fake_openai.olmocr_answer
    born = pf.text_pdf(tmp_path / "born.pdf", [pf.page_text(i) for i in range(4)])
    docs = _prepare([born], {"born.pdf": ["ocr", "ocr", "ocr", "ocr"]})
    d = docs[0]
    wrong = A("Completely unrelated page about the history of astronomy, telescopes, comets and planets "
              "observed by many careful people over the centuries in various countries and climates.")
    k0 = ocr_server.script(_img(d, 0), [{"text": wrong}, {"text": A(pf.page_text(0))}])
    k1 = ocr_server.script(_img(d, 1), [{"status": 500}, {"status": 503}, {"text": A(pf.page_text(1))}])
    k2 = ocr_server.script(_img(d, 2), [{"sleep": 3.0, "text": A(pf.page_text(2))}, {"text": A(pf.page_text(2))}])
    k3 = ocr_server.script(_img(d, 3), [{"status": 500}])
    step, out = _ocr(ocr_server, docs, request_timeout_s=1.0, http_retries=2, max_attempts=2)
    doc = out["born.pdf"]
    assert _status(doc) == ["ocr", "ocr", "ocr", "fallback"]
    assert ocr_server.temperatures(k0) == [0.1, 0.2]  # wrong page caught by the text-layer check
    assert len(ocr_server.temperatures(k1)) == 3 and ocr_server.temperatures(k1)[-1] == 0.1  # transport retry, same T
    assert len(ocr_server.temperatures(k2)) == 2
    assert len(ocr_server.temperatures(k3)) == 2 * 3  # 2 content attempts x (1 + 2 http retries)
    assert "Page marker 4" in doc.text  # text-layer fallback kept the page
    assert doc.metadata["pdf__ocr_fallback_pages"] == 1 and doc.metadata["pdf__failed_page_share"] == 0.25
    assert step.stats["http/http_5xx"].total >= 2 + 6 and step.stats["http/timeout"].total == 1
    assert "reject_reason" not in doc.metadata
    ocr_pages = doc.media[0].metadata["ocr_pages"]
    assert ocr_pages[0]["history"][0]["artifacts"] == ["text_layer_disagreement"]


def test_rotation_correction(tmp_path, pf, ocr_server, fake_openai):
    A = fake_openai.olmocr_answer
    scan = pf.scanned_pdf(tmp_path / "rot.pdf", [pf.page_text(0)])
    docs = _prepare([scan], {"rot.pdf": ["ocr"]})
    k = ocr_server.script(_img(docs[0], 0), [{"text": A("nonsense sideways", rotation_valid=False, correction=90)}])
    kr = ocr_server.script(_img(docs[0], 0, rotate=90), [{"text": A(pf.page_text(0))}])
    _, out = _ocr(ocr_server, docs)
    doc = out["rot.pdf"]
    assert _status(doc) == ["ocr"] and "Page marker 1" in doc.text
    assert ocr_server.temperatures(k) == [0.1] and ocr_server.temperatures(kr) == [0.1]
    assert doc.metadata["pdf__ocr_rotated_pages"] == 1


def test_dropped_connection_is_retried_and_missing_routes_are_computed(tmp_path, pf, ocr_server, fake_openai):
    scan = pf.scanned_pdf(tmp_path / "drop.pdf", [pf.page_text(0)])
    docs = _prepare([scan], {})  # no PdfRouter ran: the OCR step routes the pages itself
    assert "pdf__route" not in docs[0].metadata
    k = ocr_server.script(_img(docs[0], 0), [{"close": True}, {"text": fake_openai.olmocr_answer(pf.page_text(0))}])
    step, out = _ocr(ocr_server, docs)
    assert _status(out["drop.pdf"]) == ["ocr"] and out["drop.pdf"].metadata["pdf__ocr_pages"] == 1
    assert ocr_server.temperatures(k) == [0.1, 0.1]  # transport retry keeps the temperature
    assert step.stats["http/http_5xx"].total + step.stats["http/connection"].total == 1


def test_mixed_routes_bounded_concurrency_and_rejects(tmp_path, pf, ocr_server, fake_openai):
    ocr_server.default = {"text": fake_openai.olmocr_answer("A plain OCR answer with enough words to be a page.")}
    paths = [pf.scanned_pdf(tmp_path / f"s{i}.pdf", [pf.page_text(i), pf.page_text(i + 1)]) for i in range(5)]
    paths.append(pf.text_pdf(tmp_path / "born.pdf", [pf.page_text(0)]))
    paths.append(pf.encrypted_pdf(tmp_path / "enc.pdf"))
    routes = {f"s{i}.pdf": ["ocr", "ocr"] for i in range(5)}
    routes["born.pdf"] = ["text"]
    docs = _prepare(paths, routes)
    step, out = _ocr(ocr_server, docs, max_docs_in_flight=2, max_requests_in_flight=2, render_workers=2)  # process pool
    assert len(out) == 7  # nothing dropped
    assert out["enc.pdf"].metadata["reject_reason"] == "pdf_encrypted"
    assert _status(out["born.pdf"]) == ["text"] and "Page marker 1" in out["born.pdf"].text
    for i in range(5):
        assert _status(out[f"s{i}.pdf"]) == ["ocr", "ocr"]
    assert ocr_server.max_active <= 2
    assert len(ocr_server.requests) == 10


def test_no_backend_fallback_and_unavailable(tmp_path, pf):
    scan = pf.scanned_pdf(tmp_path / "scan.pdf", [pf.page_text(0)])
    ocrd = pf.scanned_pdf(tmp_path / "ocrd.pdf", [pf.page_text(0)], invisible_layer=[pf.page_text(0)])
    docs = _prepare([scan, ocrd], {"scan.pdf": ["ocr"], "ocrd.pdf": ["ocr"]})
    step = PdfOcr()
    out = {d.id.rsplit("/", 1)[-1].removeprefix("pdf:"): d for d in step.run(iter(docs))}
    assert _status(out["scan.pdf"]) == ["pdf_ocr_unavailable"]
    assert out["scan.pdf"].metadata["reject_reason"] == "pdf_no_text"
    assert _status(out["ocrd.pdf"]) == ["fallback"] and "Page marker 1" in out["ocrd.pdf"].text
    assert out["ocrd.pdf"].metadata["pdf__failed_page_share"] == 1.0
    assert step.stats["ocr_backend_unavailable"].total == 2
    assert out["scan.pdf"].metadata["pdf__ocr_backend"] == "none"


def test_unreachable_endpoint_falls_back_without_crashing(tmp_path, pf):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ocrd = pf.scanned_pdf(tmp_path / "ocrd.pdf", [pf.page_text(0)], invisible_layer=[pf.page_text(0)])
    docs = _prepare([ocrd], {"ocrd.pdf": ["ocr"]})
    step = PdfOcr(server="endpoint", endpoint=f"http://127.0.0.1:{port}", max_side=MAX_SIDE, http_backoff_s=0.01,
                  endpoint_ready_timeout_s=2)
    out = list(step.run(iter(docs)))
    assert _status(out[0]) == ["fallback"]
    assert step.stats["http/server_down"].total >= 1


def test_vllm_needs_extra_and_params_validated():
    with pytest.raises(ValueError):
        PdfOcr(server="endpoint")
    with pytest.raises(ValueError):
        PdfOcr(server="vllm")
    with pytest.raises(ValueError):
        PdfOcr(server="sglang")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"\[ocr\]"):
            list(PdfOcr(server="vllm", model="allenai/olmOCR-2-7B-1025-FP8").run(iter([])))
