from __future__ import annotations

import operator
from pathlib import Path

import pytest

from assay.stages.web.extract import HtmlExtractor
from assay.stages.web.heuristics import WebHeuristicSignals, web_heuristic_signals
from assay.stages.web.langid import LanguageId
from assay.stages.web.rules import default_web_rules
from assay.stages.web.warc import WarcReader

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
        "!=": operator.ne}


def _first_failing(signals: dict, rules: list[dict]) -> str | None:
    """Minimal CONTRACT rule semantics (first rule whose condition is false), for testing the list."""
    for r in rules:
        v = signals.get(r["signal"])
        if v is None:
            if r.get("when_missing", "keep") == "reject":
                return r["name"]
            continue
        op = r["op"]
        ok = bool(v) if op == "is_true" else (not v) if op == "is_false" else _OPS[op](v, r["value"])
        if not ok:
            return r["name"]
    return None


def _all_failing(signals: dict, rules: list[dict]) -> set[str]:
    return {r["name"] for r in rules if _first_failing(signals, [r]) is not None}


def _classic(rules: list[dict]) -> list[dict]:
    # classic = full text and datatrove's token-based alpha ratio
    out = [dict(r, signal=r["signal"].removeprefix("prose__").replace("alpha_ws_words", "alpha_words"))
           for r in rules]
    # the classic C4 rule that the default list leaves out on purpose
    out.append({"name": "curly_bracket", "source": "web", "signal": "c4__has_curly_bracket", "op": "is_false"})
    return out


def test_rules_are_well_formed_and_use_produced_signals():
    rules = default_web_rules()
    names = [r["name"] for r in rules]
    assert len(names) == len(set(names))
    produced = set(web_heuristic_signals("Some text. With two lines.\n\nAnd a paragraph.")) | {
        "lang__score_margin", "lang__score", "lang__code"}
    for r in rules:
        assert r["source"] == "web"
        assert r["signal"] in produced, r["signal"]
        assert r["op"] in (">=", ">", "<=", "<", "==", "!=", "in", "not in", "is_true", "is_false")
        assert r["signal"] != "c4__has_curly_bracket"


def test_tutorial_kept_by_prose_rules_dropped_by_classic(tutorial_html: str):
    from datatrove.data import Document

    doc = Document(text=tutorial_html, id="t", metadata={"source": "web", "content_type": "text/html"})
    (doc,) = list(WebHeuristicSignals().run(LanguageId().run(HtmlExtractor().run(iter([doc])))))
    rules = [r for r in default_web_rules() if r["name"] != "min_words"]  # the sample page is short
    assert _first_failing(doc.metadata, rules) is None
    assert _first_failing(doc.metadata, _classic(rules)) is not None


@pytest.mark.shared_data
def test_real_code_page_survives_default_rules(shared_data: Path):
    reader = WarcReader([str(shared_data / "warc/node-warc/parseMe.warc.gz")])
    docs = list(WebHeuristicSignals().run(LanguageId().run(HtmlExtractor().run(reader.run()))))
    page = next(d for d in docs if d.metadata["url"] == "http://stringjs.com/")
    assert page.metadata["extract__n_code_blocks"] >= 50
    assert page.metadata["lang__code"] == "en"
    prose_fail = _all_failing(page.metadata, default_web_rules())
    classic_fail = _all_failing(page.metadata, _classic(default_web_rules()))
    # classic rules drop this API documentation page on several counts (curly brackets in code,
    # token alpha ratio, lines without punctuation); on prose only FineWeb's strict char_dup (0.01)
    # can still fire, on its repeated "Example:" labels
    assert {"curly_bracket", "alpha_words"} <= classic_fail
    assert prose_fail <= {"char_dup"}
    assert prose_fail < classic_fail
