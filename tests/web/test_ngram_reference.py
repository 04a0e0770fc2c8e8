"""Gopher's n-gram repetition rules and API reference (issue 17, item 3).

Reference pages repeat a sentence per variant by design (pandoc's Writers.HTML: "Convert Pandoc document to Html 4
structure." for each writer; Eigen's TensorEvaluator: "Eigen::TensorEvaluator< ..., Device >" for each derived
evaluator). The top n-gram ladder (top_2gram .. top_4gram) and the duplicated n-gram ladder (dup_5gram ..
dup_10gram) do not apply to a reference page (``web__reference_page``) nor to one whose names sit in tables and
prose (``web__identifier_share >= 0.15``); those pages are bound by the reference ceilings (twice Gopher's values)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
LADDER = [r for r in RULES if r["name"].startswith(("top_", "dup_")) and "gram" in r["name"]]
# the ladders as they were (548c3ec): the top n-grams for every page, the duplicated n-grams unless a reference page
REFERENCE = {"signal": "web__reference_page", "op": "is_true"}
TOP = ("top_2gram", "top_3gram", "top_4gram")
DUP = tuple(f"dup_{n}gram" for n in range(5, 11))
OLD_RULES = [{k: v for k, v in r.items() if k != "unless"} if r["name"] in TOP
             else dict(r, unless=REFERENCE) if r["name"] in DUP else r
             for r in RULES if r["name"] not in {f"{n}_reference" for n in TOP}]


def test_ngram_ladders_exempt_reference_and_identifier_dense_pages():
    page = {"source": "web", "web__reference_page": False, "web__identifier_share": 0.0,
            "ref__gopher__top_3gram_char_frac": 0.25}
    spec = {"rules": LADDER}
    assert decide(page, spec).reason == "web_top_3gram"  # prose that repeats itself
    assert decide(dict(page, web__identifier_share=0.2), spec).reason is None
    assert decide(dict(page, web__reference_page=True), spec).reason is None
    assert decide(dict(page, web__identifier_share=0.14), spec).reason == "web_top_3gram"
    # the ceiling binds every page
    over = dict(page, web__identifier_share=0.5, ref__gopher__top_3gram_char_frac=0.4)
    assert decide(over, spec).reason == "web_top_3gram_reference"
    dup = {"source": "web", "web__reference_page": False, "web__identifier_share": 0.2, "ref__gopher__dup_7gram_char_frac": 0.2}
    assert decide(dup, spec).reason is None
    assert decide(dict(dup, web__identifier_share=0.0), spec).reason == "web_dup_7gram"


@pytest.mark.slow
@pytest.mark.parametrize("package, page, old_reason", [
    # Haddock: ten writers, each "Convert Pandoc document to ..." (a reference page: code blocks)
    ("libghc-pandoc-doc", "usr/share/doc/libghc-pandoc-doc/html/Text-Pandoc-Writers-HTML.html", "web_top_4gram"),
    # Doxygen: a class description and its derived evaluators (no code or table: the identifier share)
    ("libeigen3-doc", "usr/share/doc/libeigen3-dev/html/unsupported/structEigen_1_1TensorEvaluator.html",
     "web_top_3gram"),
])
def test_reference_variants_kept(debian_doc, page_signals, package, page, old_reason):
    m = page_signals((debian_doc(package) / page).read_text(encoding="utf-8", errors="replace"))
    assert m["web__reference_page"] or m["web__identifier_share"] >= 0.15
    assert decide(m, {"rules": OLD_RULES}).reason == old_reason
    assert decide(m, {"rules": RULES}).reason is None
