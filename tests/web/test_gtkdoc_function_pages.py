"""gtk-doc function pages of a sparsely documented library (issue 17: pluma-doc, set R).

Each function is a heading (``pluma_window_close_tabs ()``), its signature in a ``<pre>``, one sentence and a
parameter table. Real pages of the Debian package (fetched with ``apt-get download`` into the benchmark cache, as
benchmarks/bench_e2e.py does; skipped without apt).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide
from assay.stages.web.extract import extract_html

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
PLUMA = "usr/share/doc/pluma/html"


def _rule(name: str) -> dict:
    return next(r for r in RULES if r["name"] == name)


def test_nbsp_cell_leaves_no_white_space_line():
    """A one-row parameter table whose annotation cell is ``&nbsp;`` (gtk-doc): no line of white space alone."""
    row = ('<h4>Parameters</h4><table class="informaltable"><tbody><tr><td class="parameter_name"><p>window</p></td>'
           '<td class="parameter_description"><p>a PlumaWindow</p></td><td class="parameter_annotations">&nbsp; </td>'
           '</tr></tbody></table>')
    body = "".join(f"<h3>f{i}\u00a0()</h3><pre>void f{i} (PlumaWindow *window);</pre><p>Closes tab number {i} of "
                   f"the window and everything in it, for good.</p>{row}" for i in range(6))
    text = extract_html(f"<html><body><main><h1>PlumaWindow</h1>{body}</main></body></html>")
    assert "a PlumaWindow" in text
    assert [ln for ln in text.split("\n") if ln and not ln.strip()] == []


@pytest.mark.slow
def test_window_page_not_a_duplicate_paragraph_page(debian_doc, page_signals):
    """pluma-pluma-window.html: 14 one-row parameter tables each left a paragraph "\\t\\t\\xa0", counted as one
    paragraph repeated (ref__gopher__dup_para_frac 0.325 > 0.3): the page went to dup_para_frac."""
    html = (debian_doc("pluma-doc") / PLUMA / "pluma-pluma-window.html").read_text(encoding="utf-8")
    text = extract_html(html)
    assert "pluma_window_close_all_tabs (PlumaWindow *window);" in text
    assert not any(ln and not ln.strip() for ln in text.split("\n"))
    m = page_signals(html)
    assert m["ref__gopher__dup_para_frac"] <= 0.1
    assert decide(m, {"rules": [_rule("dup_para_frac")]}).reason is None


# the two rules as they were (548c3ec): the word-length ceiling on every page, the newline ratio on pages under
# a code share of 0.25
OLD_RULES = [dict(r, unless={"signal": "web__code_share", "op": ">=", "value": 0.25}) if r["name"] == "list_ratio"
             else {k: v for k, v in r.items() if k != "unless"} if r["name"] == "mean_word_length_max" else r
             for r in RULES]
API_REFERENCE = [{"signal": "web__code_share", "op": ">=", "value": 0.25},
                 {"signal": "web__identifier_share", "op": ">=", "value": 0.15}]


@pytest.mark.parametrize("name, signal, value", [("mean_word_length_max", "prose__gopher__mean_word_length", 12.0),
                                                 ("list_ratio", "prose__fineweb__list_ratio", 0.6)])
def test_prose_shape_rules_exempt_api_reference(name, signal, value):
    """The word-length ceiling and FineWeb's newline ratio judge prose: not on API reference (the lang_score
    exemptions: code share 0.25, identifier share 0.15); on other pages they apply as before."""
    rule = _rule(name)
    assert rule["unless"][:2] == API_REFERENCE  # (list_ratio: and a code block, tests/web/test_short_reference_pages.py)
    page = {"source": "web", signal: value, "web__code_share": 0.0, "web__identifier_share": 0.0}
    spec = {"rules": [rule]}
    assert decide(page, spec).reason == f"web_{name}"
    assert decide(dict(page, web__identifier_share=0.13), spec).reason == f"web_{name}"
    assert decide(dict(page, web__code_share=0.2), spec).reason == f"web_{name}"
    assert decide(dict(page, web__identifier_share=0.2), spec).reason is None
    assert decide(dict(page, web__code_share=0.3), spec).reason is None
    assert decide({"source": "web", signal: value}, spec).reason == f"web_{name}"  # no shares stored: it applies


@pytest.mark.slow
@pytest.mark.parametrize("page, rule", [
    # prose = the function-name headings ("pluma_statusbar_set_cursor_position ()") and a sentence or two
    ("pluma-pluma-statusbar.html", "mean_word_length_max"),
    ("pluma-pluma-file-chooser-dialog.html", "mean_word_length_max"),  # identifier share 0.13, code share 0.48
    # code share 0.245, identifier share 0.25: headings, labels and one-sentence descriptions
    ("pluma-pluma-tab.html", "list_ratio"),
])
def test_function_pages_kept(debian_doc, page_signals, page, rule):
    """Real gtk-doc function pages: the old rules dropped them (their <pre> signatures with them); every rule of
    the default recipe passes them now."""
    m = page_signals((debian_doc("pluma-doc") / PLUMA / page).read_text(encoding="utf-8"))
    assert m["web__reference_page"] and m["web__n_code_blocks"] >= 5
    assert decide(m, {"rules": OLD_RULES}).reason == f"web_{rule}"
    assert decide(m, {"rules": RULES}).reason is None


@pytest.mark.slow
def test_general_web_product_list_still_a_list(warc_pages, page_signals):
    """A Chinese product list (WARC samples, train split; SKU codes WJ-BJB_1 ... read as snake_case): the
    general-web page with the most identifier characters among those list_ratio excludes stays under 0.15."""
    url = "http://0615235.com/02mjqjo%7Bibotij2.btq?odmbtt=106&tdmbtt=121"
    if url not in warc_pages:
        pytest.skip(f"{url} is not among the WARC samples of ../shared/data")
    m = page_signals(warc_pages[url].body.decode("utf-8", errors="replace"))
    assert m["prose__fineweb__list_ratio"] > 0.3 and 0.10 <= m["web__identifier_share"] < 0.15
    assert decide(m, {"rules": [_rule("list_ratio")]}).reason == "web_list_ratio"
