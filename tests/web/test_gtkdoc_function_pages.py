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
