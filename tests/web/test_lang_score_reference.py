"""API reference and the default recipe's language rule (issue 17, item 3).

``lang_score`` (``lang__score_margin >= 0``) does not apply to API reference whose names sit in tables
(``web__identifier_share >= 0.15``): Doxygen class and file pages and Javadoc class-use pages are mostly member
names and signatures, which the language model scores under its English threshold. Real pages of Debian
documentation packages (fetched with ``apt-get download`` into the benchmark cache, as benchmarks/bench_e2e.py
does; skipped without apt), kept now and dropped before, and one general-web page of the WARC samples in
``../shared/data`` (train split), still excluded by ``lang_score``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
LANG = next(r for r in RULES if r["name"] == "lang_score")
# the rule as it was (d068e68): code share or the prose's own margin
OLD_LANG = dict(LANG, unless=[{"signal": "web__code_share", "op": ">=", "value": 0.25},
                              {"signal": "lang__prose_score_margin", "op": ">=", "value": 0.0}])
OLD_RULES = [OLD_LANG if r["name"] == "lang_score" else r for r in RULES]


def test_lang_score_exempts_identifier_dense_pages():
    assert {"signal": "web__identifier_share", "op": ">=", "value": 0.15} in LANG["unless"]
    low = {"source": "web", "lang__score_margin": -0.1, "web__code_share": 0.0, "lang__prose_score_margin": None}
    spec = {"rules": [LANG]}
    assert decide(dict(low, web__identifier_share=0.3), spec).reason is None
    assert decide(dict(low, web__identifier_share=0.3), {"rules": [OLD_LANG]}).reason == "web_lang_score"
    assert decide(dict(low, web__identifier_share=0.13), spec).reason == "web_lang_score"
    assert decide(low, spec).reason == "web_lang_score"  # no share stored: the rule applies


@pytest.mark.slow
@pytest.mark.parametrize("package, page, kind", [
    # Doxygen (wxWidgets): a class page (description, then a member table of signatures and one-line
    # descriptions) and a header's file page (classes and enumerations in tables)
    ("wx3.2-doc", "usr/share/doc/wx3.2-doc/html/classwx_text_attr_dimension.html", "doxygen"),
    ("wx3.2-doc", "usr/share/doc/wx3.2-doc/html/dcsvg_8h.html", "doxygen"),
    # Javadoc (commons-lang3): a class-use page with one use, its signature and its sentence
    ("libcommons-lang3-java-doc",
     "usr/share/doc/libcommons-lang3-java/api/org/apache/commons/lang3/function/class-use/FailableIntSupplier.html",
     "javadoc"),
])
def test_table_reference_kept_by_lang_score(debian_doc, page_signals, package, page, kind):
    """Member names and signatures, a language score under English's threshold: the old rule dropped the
    page; it passes every rule now."""
    m = page_signals((debian_doc(package) / page).read_text(encoding="utf-8", errors="replace"))
    assert m["lang__code"] == "en" and m["lang__score_margin"] < 0
    assert m["web__identifier_share"] >= 0.15
    assert decide(m, {"rules": OLD_RULES}).reason == "web_lang_score"
    assert decide(m, {"rules": RULES}).reason is None


@pytest.mark.slow
def test_general_web_product_list_still_excluded(warc_pages, page_signals):
    """A Chinese product list (WARC samples, train split) whose SKU codes (WJ-BJB_1 ... WJ-BJB_20) read as
    snake_case: the general-web page with the most identifier characters among those lang_score excludes
    (0.13). It stays under the exemption's 0.15, and lang_score still excludes it."""
    url = "http://0615235.com/02mjqjo%7Bibotij2.btq?odmbtt=106&tdmbtt=121"
    if url not in warc_pages:
        pytest.skip(f"{url} is not among the WARC samples of ../shared/data")
    page = warc_pages[url]
    assert page.split == "train"
    m = page_signals(page.body.decode("utf-8", errors="replace"))
    assert m["lang__score_margin"] < 0 and m["web__code_share"] < 0.25
    assert 0.10 <= m["web__identifier_share"] < 0.15
    assert decide(m, {"rules": RULES}).reason == "web_lang_score"
