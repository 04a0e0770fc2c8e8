"""Issue 15 item 11: deeply nested HTML must not hang extraction; a per-document time limit."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest
from datatrove.data import Document

from assay.stages.web.extract import (MAX_DEPTH, ExtractTimeout, ExtractTooDeep, HtmlExtractor, extract_html,
                                      extract_html_detailed, nesting_depth_exceeds)


def _nested(n: int, tag: str = "div") -> str:
    return f"<html><body><p>Intro.</p>{f'<{tag}>' * n}deep text here{f'</{tag}>' * n}</body></html>"


def test_hundred_thousand_nested_divs_are_rejected_quickly():
    html = _nested(100_000)
    assert len(gzip.compress(html.encode())) < 10_000  # the 10 KB gzipped bomb
    t0 = time.monotonic()
    docs = list(HtmlExtractor().run(iter([Document(text=html, id="bomb", metadata={"url": "http://x/"})])))
    elapsed = time.monotonic() - t0
    assert docs[0].metadata["reject_reason"] == "web_extract_too_deep"
    assert docs[0].text == ""
    assert elapsed < 2.0, elapsed  # lexbor alone needs ~50 s on this input


@pytest.mark.parametrize("tag", ["div", "span", "b", "table"])
def test_depth_limit_any_tag(tag: str):
    with pytest.raises(ExtractTooDeep):
        extract_html_detailed(_nested(4500, tag))
    assert extract_html(_nested(4500, tag)) == ""
    assert "deep text here" in extract_html(_nested(50, tag))


def test_depth_check_ignores_void_elements_and_balanced_pages():
    flat = "<html><body>" + "<p>line<br><img src=x><input>" * 5000 + "</body></html>"
    assert not nesting_depth_exceeds(flat)
    balanced = "<html><body>" + "<div><span>a</span></div>" * 5000 + "</body></html>"
    assert not nesting_depth_exceeds(balanced)
    assert nesting_depth_exceeds("<p>x</p>" * 4000 + _nested(MAX_DEPTH + 1))
    assert not nesting_depth_exceeds("<p>x</p>" * 4000 + _nested(MAX_DEPTH - 10))
    # small pages are never flagged: they cannot be slow whatever their depth
    assert not nesting_depth_exceeds(_nested(1990))
    t0 = time.monotonic()
    assert "deep text here" in extract_html(_nested(1990))
    assert time.monotonic() - t0 < 5.0


def test_time_limit_gives_reason(tutorial_html: str):
    with pytest.raises(ExtractTimeout):
        extract_html_detailed(tutorial_html, time_limit_s=1e-9)
    step = HtmlExtractor(time_limit_s=1e-9)
    doc = next(iter(step.run(iter([Document(text=tutorial_html, id="t", metadata={})]))))
    assert doc.metadata["reject_reason"] == "web_extract_timeout"
    ok = next(iter(HtmlExtractor().run(iter([Document(text=tutorial_html, id="t", metadata={})]))))
    assert "reject_reason" not in ok.metadata and "Sorting" in ok.text


@pytest.mark.shared_data
def test_no_real_page_is_too_deep(shared_data: Path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages, load_ir_chaos

    pages = [h for _, h in html_pages(shared_data)] + [p.html for p in load_ir_chaos(shared_data)]
    assert len(pages) > 400
    assert not [i for i, h in enumerate(pages) if nesting_depth_exceeds(h)]
