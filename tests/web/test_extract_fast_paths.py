"""The extraction's shortcuts give what the plain definitions give, on real pages of ../shared/data
(ir_chaos, scrapinghub and readability): a table's rows read in one query of "tr, td, th" per table (``_Rewriter._table_rows``
with ``flat``) equal the rows read by one cell query per ``<tr>``, on the DOM as the table pass sees it (after the
widget, math and code rewrites); the first teaser heading at or after a line (``_teaser_heading_at``) is the
first line the heading test (``_TEASER_HEADING_RE`` on a short line) accepts there."""

from __future__ import annotations

import gzip

import pytest

from assay.stages.web import extract as X


def _pages(shared_data) -> list[str]:
    root = shared_data / "html"
    paths = sorted((root / "ir_chaos/html").glob("*.htm.gz")) + sorted((root / "scrapinghub/html").glob("*.html.gz"))
    pages = [gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace") for p in paths]
    pages += [p.read_text(encoding="utf-8", errors="replace")
              for p in sorted((root / "readability/readability/input").glob("*.html"))]
    if not pages:
        pytest.skip("no ir_chaos/scrapinghub/readability pages under ../shared/data/html")
    return pages


def test_flat_table_rows_equal_rows_read_per_tr(shared_data):
    from resiliparse.parse.html import HTMLTree

    n_tables = n_flat = n_rows = 0
    for page in _pages(shared_data):
        text = X._drop_scripts(X._from_body(page))
        rw = X._Rewriter(HTMLTree.parse(text), text)
        rw.boilerplate()
        rw.math()
        rw.code()
        doc = rw.tree.document
        for t in rw._walk()[2]:
            if t.parent is None or not doc.contains(t) or t.query_selector(X._TABLE_LAYOUT):
                continue
            n_tables += 1
            per_tr = X._Rewriter._table_rows(t, False)
            if t.query_selector(X._TABLE_LAYOUT_OR_FOREIGN) is None:
                n_flat += 1
                assert X._Rewriter._table_rows(t, True) == per_tr
                n_rows += len(per_tr or [])
    assert n_flat >= 60 and n_rows >= 250, (n_tables, n_flat, n_rows)  # the comparison saw real tables


def test_flat_table_rows_are_not_used_on_tables_with_foreign_content():
    from resiliparse.parse.html import HTMLTree

    # an <svg> or <math> element (any case in the source) may hold elements named "td" outside any <tr>
    for html in ('<table><tr><td>a</td><td>b</td></tr><caption><svg><td>z</td></svg></caption></table>',
                 '<table><tr><td>a</td><td><SVG><TD>z</TD></SVG></td></tr></table>',
                 '<table><tr><td>a</td><td><math><mi>x</mi><td>q</td></math></td></tr></table>'):
        t = HTMLTree.parse(html).document.query_selector("table")
        assert t.query_selector(X._TABLE_LAYOUT) is None
        assert t.query_selector(X._TABLE_LAYOUT_OR_FOREIGN) is not None  # the table pass reads it per <tr>
        if "caption" in html:  # a td outside any tr: what the one query would get wrong
            assert X._Rewriter._table_rows(t, True) == [["a", "b", "z"]]
            assert X._Rewriter._table_rows(t, False) == [["a", "b"]]
    # the table pass on such a table: the per-<tr> rows
    rw = X._Rewriter(HTMLTree.parse('<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr>'
                                    '<caption><svg><td>z</td></svg></caption></table>'))
    rw.tables()
    assert rw.blocks == ["| a | b |\n|---|---|\n| c | d |"]


def test_teaser_heading_at_is_the_first_heading_from_start(shared_data):
    from resiliparse.extract.html2text import extract_plain_text

    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in gold]
    # whole pages as text, menus and teaser lists included
    texts += [extract_plain_text(p, main_content=False, list_bullets=True) for p in _pages(shared_data)[::2]]
    hits = 0
    for text in texts:
        lines = X._drop_galleries(text.split("\n"))
        heads = [i for i, ln in enumerate(lines) if 0 < len(ln) <= 2 * X._TEASER_HEADING_MAX
                 and len(s := ln.strip()) <= X._TEASER_HEADING_MAX and s
                 and X._TEASER_HEADING_RE.fullmatch(s.strip(X._CHROME_STRIP))]
        prose = [len(ln) if X._is_prose(ln) else 0 for ln in lines]
        total = sum(prose)
        starts = {0, len(lines) // 2, len(lines)} | ({X._story_end(prose, total)} if total else set())
        starts |= {h for h in heads} | {h + 1 for h in heads}
        for start in starts:
            want = next((h for h in heads if h >= start), None)
            assert X._teaser_heading_at(lines, start) == want
            hits += want is not None
    assert hits >= 20, hits  # pages with teaser headings were compared
