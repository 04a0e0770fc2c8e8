"""FineWeb's line-punctuation rule and API reference in tables (issue 17).

``line_punct`` (``prose__fineweb__line_punct_ratio >= 0.12``) judges prose lines; it does not apply to code-dense
pages nor to API reference whose names sit in tables (``web__identifier_share >= 0.15``, as ``lang_score``): a
Javadoc class-use page is its tables of signatures under "Uses of X in p" headings, and those headings are the only
lines left to judge."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
LINE_PUNCT = next(r for r in RULES if r["name"] == "line_punct")
OLD_RULES = [dict(r, unless=r["unless"][0]) if r is LINE_PUNCT else r for r in RULES]


def test_line_punct_exempts_identifier_dense_pages():
    assert LINE_PUNCT["unless"][-1] == {"signal": "web__identifier_share", "op": ">=", "value": 0.15}
    page = {"source": "web", "prose__fineweb__line_punct_ratio": 0.0, "web__code_share": 0.2}
    spec = {"rules": [LINE_PUNCT]}
    assert decide(dict(page, web__identifier_share=0.2), spec).reason is None
    assert decide(dict(page, web__identifier_share=0.1), spec).reason == "web_line_punct"
    assert decide(page, spec).reason == "web_line_punct"  # no share stored: the rule applies


@pytest.mark.slow
def test_javadoc_class_use_page_kept(debian_doc, page_signals):
    """junit4's Ordering.Context class-use page: two tables (the package, two create(...) methods) under headings."""
    page = debian_doc("junit4-doc") / "usr/share/doc/junit4/api/org/junit/runner/manipulation/class-use/Ordering.Context.html"
    m = page_signals(page.read_text(encoding="utf-8"))
    assert m["web__code_share"] < 0.25 and m["web__identifier_share"] >= 0.15
    assert decide(m, {"rules": OLD_RULES}).reason == "web_line_punct"
    assert decide(m, {"rules": RULES}).reason is None
