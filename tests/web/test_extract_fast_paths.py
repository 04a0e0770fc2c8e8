"""The extraction's shortcuts give what the plain definitions give, on real pages of ../shared/data
(ir_chaos, scrapinghub and readability): a table's rows read in one query of "tr, td, th" per table (``_Rewriter._table_rows``
with ``flat``) equal the rows read by one cell query per ``<tr>``, on the DOM as the table pass sees it (after the
widget, math and code rewrites); the first teaser heading at or after a line (``_teaser_heading_at``) is the
first line the heading test (``_TEASER_HEADING_RE`` on a short line) accepts there."""

from __future__ import annotations


import pytest

from assay.stages.web import extract as X



def test_flat_table_rows_equal_rows_read_per_tr(gold_corpus_pages):
    from resiliparse.parse.html import HTMLTree

    n_tables = n_flat = n_rows = 0
    for page in gold_corpus_pages:
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


def test_teaser_heading_at_is_the_first_heading_from_start(gold_corpus_pages, shared_data):
    from resiliparse.extract.html2text import extract_plain_text

    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in gold]
    # whole pages as text, menus and teaser lists included
    texts += [extract_plain_text(p, main_content=False, list_bullets=True) for p in gold_corpus_pages[::2]]
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


def _shortcut_pages(gold_corpus_pages) -> list[str]:
    """Pages with code blocks (the block loop's shortcuts) and every fifth other page (the linked-teaser index)."""
    pages = gold_corpus_pages
    return [p for i, p in enumerate(pages) if "<pre" in p.lower() or i % 5 == 0]


def test_block_and_link_shortcuts_give_the_plain_results(gold_corpus_pages, monkeypatch):
    """With every shortcut on (one query per page for the blocks' <br>/gutters/<code>/<figure>, the index of link
    texts for the linked teasers) and with none, each page's text and counters are the same."""
    pages = _shortcut_pages(gold_corpus_pages)
    monkeypatch.setattr(X, "_PRE_QUERY_MIN", 1)
    monkeypatch.setattr(X, "_LINK_START_INDEX_MIN", 1)
    fast = [X.extract_html_detailed(p) for p in pages]
    monkeypatch.setattr(X, "_PRE_QUERY_MIN", 10**9)
    monkeypatch.setattr(X, "_LINK_START_INDEX_MIN", 10**9)
    plain = [X.extract_html_detailed(p) for p in pages]
    assert fast == plain
    assert sum(st["n_code_blocks"] for _, st in plain) >= 20, "the comparison saw code blocks"


def test_link_text_index_never_rules_out_a_link_text(gold_corpus_pages):
    """``_may_be_link_text`` is False only where ``_link_text_at`` finds nothing, for every line of four words or more
    of the main text of real pages, searched from the page's start and from the line's own first occurrence."""
    n_links = n_ruled_out = 0
    for page in _shortcut_pages(gold_corpus_pages)[:150]:
        raw = X._extract_raw(page, True)
        if raw is None:
            continue
        out, rw = raw
        html = rw.html
        index = {}
        for line in {ln.strip() for ln in out.split("\n")}:
            if line.count(" ") < 3 or X._PH_OPEN in line:
                continue
            first = html.find(line[:20])
            for start in (0, max(0, first)):
                if start not in index:
                    index[start] = X._link_text_starts(html, start)
                at = X._link_text_at(html, line, start)
                ok = X._may_be_link_text(html, line, start, index[start])
                assert ok or at < 0, (line, start, at)
                n_links += at >= 0
                n_ruled_out += not ok
    assert n_links >= 50 and n_ruled_out >= 500, (n_links, n_ruled_out)


@pytest.mark.parametrize("line", [
    "Tags: python, sorting", "Read more: the sequel", "© 2020 Example", "Copyright 2019 Example Inc.", "(c) 2021 Example",
    "COPYRIGHT EXAMPLE, ALL RIGHTS RESERVED", "4 min read", "12 Minute Read", "Photo credit: AP", "Tagged with: x",
    "ſee alſo: the long s", "Copyrıght 2019 (a dotless i)", "Żółć – 3 min read",
])
def test_metadata_line_prefilter_keeps_every_match(line):
    assert X._META_LINE_RE.match(line) and X._may_be_meta_line(line)


@pytest.mark.parametrize("line", [
    "Sign up now for our daily digest", "Subscribe to our weekly mail", "We're on Twitter", "We're also on Facebook",
    "Like Truthdig on Facebook", "Join our Facebook page", "Download the Example app", "Forgot your password?",
    "This article was originally published on The Conversation.", "Visit CNN.com/sport for more news",
    "Get the latest stock price here.", "Quotes delayed by 15 minutes", "Have you found an error? Tell us.",
    "FOLLOW US on Instagram", "Sıgn up now (a dotless i: the regex's case folding, not str.lower)",
    "“Like us on Facebook” – Straße", "Privacy Policy · Terms of Service",
])
def test_call_to_action_prefilter_keeps_every_match(line):
    assert X._CTA_RE.search(line) and X._may_be_cta_line(line)


def test_line_prefilters_keep_every_match_on_real_lines(gold_corpus_pages):
    """Every line of the full-page text of real pages that ``_META_LINE_RE`` or ``_CTA_RE`` matches passes its
    prefilter (``_may_be_meta_line``, ``_may_be_cta_line``), and the prefilters rule out most lines."""
    n_lines = n_meta = n_cta = n_skipped = 0
    for page in gold_corpus_pages[::3]:
        raw = X._extract_raw(page, False)
        if raw is None:
            continue
        for line in raw[0].split("\n"):
            key = line.strip()
            if not key:
                continue
            n_lines += 1
            if X._META_LINE_RE.match(key):
                n_meta += 1
                assert X._may_be_meta_line(key), key
            if X._CTA_RE.search(line):
                n_cta += 1
                assert X._may_be_cta_line(line), line
            n_skipped += not X._may_be_cta_line(line)
    assert n_meta >= 20 and n_cta >= 20 and n_skipped >= n_lines // 2, (n_lines, n_meta, n_cta, n_skipped)


def test_node_caches_give_the_extraction_of_resiliparses_own_cache(gold_corpus_pages, monkeypatch):
    """``_WeakNodeCache`` in place of resiliparse's ``WeakValueDictionary`` node cache, and the per-extraction
    ``_PageNodeCache`` (the default): the same text and counts on every page (the cache only decides whether a
    node already has a Python object); after each extraction the process-wide cache is back and the page's
    cache is empty."""
    import weakref

    import resiliparse.parse.html.node as rnode

    pages = gold_corpus_pages[::3]
    monkeypatch.setattr(X, "_NODE_CACHE_SET", [True])  # this test installs each cache itself
    with_page_cache, without = X._extract_raw, X._extract_raw_page
    out = {}
    for name, make in (("resiliparse", weakref.WeakValueDictionary), ("weak", X._WeakNodeCache),
                       ("page", X._WeakNodeCache)):
        cache = make()
        monkeypatch.setattr(rnode, "_node_cache", cache)
        # the first two extract on the process-wide cache alone
        monkeypatch.setattr(X, "_extract_raw", with_page_cache if name == "page" else without)
        res = []
        for page in pages:
            try:
                res.append(X.extract_html_detailed(page, None, main_content=True, time_limit_s=None))
            except X.ExtractLimitError as e:
                res.append(repr(e))
        out[name] = res
        if name == "weak":
            assert len(cache.data) > 0
        assert rnode._node_cache is cache  # put back after every extraction
    assert len(pages) >= 40 and sum(bool(r[0]) for r in out["page"] if isinstance(r, tuple)) >= 30
    assert out["weak"] == out["resiliparse"]
    assert out["page"] == out["resiliparse"]


def test_page_node_cache_is_in_place_during_an_extraction_only(gold_corpus_pages, monkeypatch):
    import resiliparse.parse.html.node as rnode

    page = gold_corpus_pages[0]
    X.extract_html(page)  # installs the process-wide cache
    before = rnode._node_cache
    assert isinstance(before, X._WeakNodeCache)
    during = []
    orig = X._extract_raw_page

    def spy(*a, **k):
        during.append(rnode._node_cache)
        r = orig(*a, **k)
        during.append(len(rnode._node_cache))
        return r

    monkeypatch.setattr(X, "_extract_raw_page", spy)
    assert X.extract_html(page)
    assert type(during[0]) is X._PageNodeCache and during[1] > 0  # node objects of the page were cached
    assert len(during[0]) == 0  # and let go when the extraction ended
    assert rnode._node_cache is before
    # an extraction that fails puts the process-wide cache back too
    monkeypatch.setattr(X, "_extract_raw_page", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        X._extract_raw(page, True)
    assert rnode._node_cache is before


def test_weak_node_cache_answers_as_a_weak_value_dictionary():
    import gc
    import weakref

    class Obj:
        pass

    fast, ref = X._WeakNodeCache(), weakref.WeakValueDictionary()
    live = {}
    for i in range(3 * X._NODE_CACHE_MIN):
        o = Obj()
        fast[(1, i)] = o
        ref[(1, i)] = o
        if i % 7 == 0:
            live[(1, i)] = o
        del o
    gc.collect()
    assert len(fast.data) < 3 * X._NODE_CACHE_MIN  # dead entries were dropped on the way
    for i in range(3 * X._NODE_CACHE_MIN):
        assert fast.get((1, i)) is ref.get((1, i)) is live.get((1, i))
        assert ((1, i) in fast) == ((1, i) in ref)
    assert fast.get((2, 0), "dflt") == "dflt" and len(fast) == len(ref) == len(live)
    with pytest.raises(KeyError):
        fast[(2, 0)]
    o = Obj()
    fast[(1, 0)] = o  # a key taken again by a new object
    assert fast[(1, 0)] is o
    # installing keeps the live entries of the cache in place
    import resiliparse.parse.html.node as rnode

    saved = rnode._node_cache
    try:
        rnode._node_cache = ref
        X._install_node_cache()
        assert isinstance(rnode._node_cache, X._WeakNodeCache)
        assert all(rnode._node_cache.get(k) is v for k, v in live.items())
    finally:
        rnode._node_cache = saved


def test_resiliparse_modules_get_a_spec_that_is_not_initializing(gold_corpus_pages, monkeypatch):
    """``_give_resiliparse_modules_specs``: after an extraction every loaded ``resiliparse.*`` module has a spec
    that is not initializing (what CPython's import check reads at each node object resiliparse makes), and it
    is a pure speed change: with the specs put back to None the extraction is the same."""
    import sys

    pages = gold_corpus_pages[::10]
    with_specs = [X.extract_html(p) for p in pages]
    mods = [m for n, m in sys.modules.items() if n.startswith("resiliparse.") and m is not None]
    assert any(n == "resiliparse.parse.html.node" for n in sys.modules)
    assert all(getattr(m, "__spec__", None) is not None and not getattr(m.__spec__, "_initializing", False)
               for m in mods)
    for m in mods:
        if m.__spec__.loader is None:  # the ones given here
            monkeypatch.setattr(m, "__spec__", None)
    assert [X.extract_html(p) for p in pages] == with_specs
