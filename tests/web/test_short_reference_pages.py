"""Short API reference pages that prose rules took (issue 17): gi-docgen function pages and Doxygen class, struct
and file pages without a ``<pre>``.

* gi-docgen (libjson-glib-doc): a heading, the declaration in a ``<pre>``, one sentence and a parameter/return
  table: 30-100 words, code shares 0.17-0.25 (just under the 0.25 of "code-dense"), identifier shares 0.03-0.23
  (PascalCase types), so ``min_words``, ``list_ratio`` and ``lang_score`` applied. Exempt where a code block holds
  5% of the page or more (``web__code_char_frac``, blocks only).
* Doxygen (open3d-doc): member declarations sit in table cells (``| void | SetTitle (const std::string &title) |``),
  code share near 0, identifier share 0.32-0.58: ``alpha_words`` and ``line_punct`` applied. Exempt at identifier
  share 0.15, as ``lang_score``, ``mean_word_length_max`` and ``list_ratio`` are.

Real pages of the Debian packages (benchmark cache, ``apt-get download``; skipped without apt).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide
from assay.stages.web.extract import extract_html

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
JSON_GLIB = "usr/share/doc/json-glib-1.0"
OPEN3D = "usr/share/doc/open3d-doc/cpp/html"
BLOCK = {"signal": "web__code_char_frac", "op": ">=", "value": 0.05}
IDENT = {"signal": "web__identifier_share", "op": ">=", "value": 0.15}
CODE_DENSE = {"signal": "web__code_share", "op": ">=", "value": 0.25}


def _rule(name: str) -> dict:
    return next(r for r in RULES if r["name"] == name)


def _without(rule: dict, cond: dict) -> dict:
    unless = rule["unless"] if isinstance(rule["unless"], list) else [rule["unless"]]
    unless = [c for c in unless if c != cond]
    return dict(rule, unless=unless)


# the rules as they were (d2cd3b7): no block exemption, alpha_words and line_punct on code share alone
OLD_RULES = [_without(r, BLOCK) if r["name"] in ("lang_score", "min_words", "list_ratio")
             else _without(r, IDENT) if r["name"] in ("alpha_words", "line_punct") else r for r in RULES]


def test_exemptions():
    """The block exemption on the word floor, the newline ratio and the language score; the identifier exemption
    on the alphabetic-word and line-punctuation rules; neither where it would keep a stub or a non-code page."""
    assert BLOCK in _rule("lang_score")["unless"] and BLOCK in _rule("list_ratio")["unless"]
    assert _rule("min_words")["unless"] == [CODE_DENSE, BLOCK]  # identifier share alone: Doxygen file stubs
    assert _rule("alpha_words")["unless"] == [CODE_DENSE, IDENT]  # not the block: archive.org error pages
    assert _rule("line_punct")["unless"] == [CODE_DENSE, IDENT]
    spec = {"rules": [_rule("min_words"), _rule("min_words_code")]}
    page = {"source": "web", "gopher__n_words": 35, "web__code_share": 0.2, "web__identifier_share": 0.3}
    assert decide(dict(page, web__code_char_frac=0.0), spec).reason == "web_min_words"
    assert decide(dict(page, web__code_char_frac=0.04), spec).reason == "web_min_words"
    assert decide(dict(page, web__code_char_frac=0.1), spec).reason is None
    assert decide(dict(page, web__code_char_frac=0.1, gopher__n_words=15), spec).reason == "web_min_words_code"
    spec = {"rules": [_rule("alpha_words")]}
    page = {"source": "web", "prose__gopher__alpha_ws_words_ratio": 0.7, "web__code_share": 0.13,
            "web__code_char_frac": 0.13, "web__identifier_share": 0.0}
    assert decide(page, spec).reason == "web_alpha_words"
    assert decide(dict(page, web__identifier_share=0.13), spec).reason == "web_alpha_words"
    assert decide(dict(page, web__identifier_share=0.3), spec).reason is None


@pytest.mark.slow
@pytest.mark.parametrize("page, rule, declaration", [
    # 49 words (get_int_value, 31 words, was the example: without its "[src]" links its code share is 0.26, code-dense)
    ("method.Reader.get_string_value.html", "min_words", "json_reader_get_string_value ("),
    ("method.Generator.to_data.html", "list_ratio", "json_generator_to_data ("),  # 100 words, newline ratio 0.38
    ("func.ENCODE_VERSION.html", "lang_score", "#define JSON_ENCODE_VERSION ("),  # code share 0.24
])
def test_gidocgen_function_pages_kept(debian_doc, page_signals, page, rule, declaration):
    """gi-docgen function pages: the declaration is in the text; the old rules dropped the page; no rule of the
    default recipe does now."""
    html = (debian_doc("libjson-glib-doc") / JSON_GLIB / page).read_text(encoding="utf-8")
    assert declaration in extract_html(html)
    m = page_signals(html)
    assert m["web__n_code_blocks"] == 1 and 0.05 <= m["web__code_char_frac"] and m["web__code_share"] < 0.25
    # the named old rule drops it (another old rule earlier in the list may drop it first)
    assert decide(m, {"rules": [r for r in OLD_RULES if r["name"] == rule]}).reason == f"web_{rule}"
    assert decide(m, {"rules": RULES}).reason is None


@pytest.mark.slow
@pytest.mark.parametrize("page, rule", [
    # member tables and declarations, three one-sentence descriptions
    ("classopen3d_1_1visualization_1_1_gui_visualizer.html", "alpha_words"),
    ("structopen3d_1_1t_1_1io_1_1_p_c_d_header.html", "line_punct"),  # 11 field declarations
])
def test_doxygen_class_pages_kept(debian_doc, page_signals, page, rule):
    """Doxygen class and struct pages whose declarations sit in tables (no code block): kept now."""
    m = page_signals((debian_doc("open3d-doc") / OPEN3D / page).read_text(encoding="utf-8"))
    assert m["web__code_share"] < 0.05 and m["web__identifier_share"] >= 0.15
    assert decide(m, {"rules": OLD_RULES}).reason == f"web_{rule}"
    assert decide(m, {"rules": RULES}).reason is None


@pytest.mark.slow
def test_doxygen_file_stub_still_excluded(debian_doc, page_signals):
    """A Doxygen file page of an #include line and lists of one class and three namespaces (34 words, identifier
    share 0.26, no code block): a stub, still under the word floor."""
    m = page_signals((debian_doc("open3d-doc") / OPEN3D / "_color_8h.html").read_text(encoding="utf-8"))
    assert m["web__identifier_share"] >= 0.15 and m["web__code_char_frac"] == 0
    assert decide(m, {"rules": RULES}).reason == "web_min_words"


@pytest.mark.slow
def test_general_web_error_page_with_code_block_still_excluded(warc_pages, page_signals):
    """archive.org's "item cannot be found" page (WARC samples, train split): its error message is a code block
    (13% of the page) among navigation links; alpha_words still excludes it (no identifier exemption applies)."""
    url = "http://www.archive.org/details/ShockwaveFlash.ShockwaveFlash.6"
    if url not in warc_pages:
        pytest.skip(f"{url} is not among the WARC samples of ../shared/data")
    m = page_signals(warc_pages[url].body.decode("utf-8", errors="replace"))
    assert m["web__code_char_frac"] >= 0.05 and m["web__identifier_share"] < 0.15
    assert decide(m, {"rules": RULES}).reason == "web_alpha_words"
