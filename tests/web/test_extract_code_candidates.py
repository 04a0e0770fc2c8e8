"""The widget pass's shortcuts for candidates inside code give what the plain definitions give.

``_InCode`` answers ``el.closest("pre, code, math") is not None`` for the widget candidates of a page, learning
every candidate of a ``pre``/``code``/``math`` element by one query once two were found inside it (a hyperlinked
source listing, Haddock's ``<span class="hs-comment">`` in one ``<pre>``: thousands a page); the doc-comment pass
asks only for the tags it can spare (``_DOC_COMMENT_QUERY``) instead of every "omment" class and a tag test.
Checked on real pages of ../shared/data, on Haddock's own source pages (libghc-aeson-doc) and on source listings
built like them, against the plain
definitions (one ``closest`` per candidate, every "omment" element)."""

from __future__ import annotations

import pytest

from assay.stages.web import extract as X


class _PlainInCode:
    """The definition: one ``closest`` per candidate."""

    def __init__(self, sel: str):
        self.known: set = set()

    def __call__(self, el) -> bool:
        return el.closest("pre, code, math") is not None



def _haddock_sources(debian_doc, n: int = 12) -> list[str]:
    """Hyperlinked source pages of a Haddock package (libghc-aeson-doc; its pages were read to profile speed)."""
    root = debian_doc("libghc-aeson-doc") / "usr/share/doc/libghc-aeson-doc/html/src"
    pages = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("*.html"))[:n]]
    if not pages:
        pytest.skip(f"no Haddock source pages under {root}")
    return pages


def _listing(n: int, seed: int = 0) -> str:
    """A hyperlinked source page as Haddock writes one: a ``<pre>`` of highlighted lines, comments as
    ``<span class="hs-comment">`` (some holding spans of their own), a widget-named block after it, another
    listing inside ``<code>``, MathML with a comment-named token, doc comments around code."""
    lines = []
    for i in range(n):
        if i % 3 == 0:
            lines.append(f'<span class="hs-comment">-- | Step {i + seed}: <span class="hs-comment">see</span> '
                         f'<a href="#v{i}">v{i}</a></span>')
        lines.append(f'<a name="line-{i}"></a><span class="hs-keyword">let</span> <span class="hs-identifier">'
                     f'x{i}</span> <span class="hs-glyph">=</span> <span class="hs-number">{i + seed}</span>')
    return ("<html><head><title>Source</title></head><body>"
            '<div id="package-header"><span class="caption">pkg-1.0: Things</span></div>'
            f'<pre>{chr(10).join(lines)}</pre><pre class="comment">note</pre>'
            '<p>The same in a block of its own: <code><span class="token comment"># one</span> x = 1 '
            '<span class="token comment"># two</span> <span class="token comment"># three</span></code></p>'
            '<p>Formula <math><mi class="comment">x</mi><mo>+</mo><mi class="comment">y</mi></math> ends.</p>'
            '<div class="doc-comment"><p>Returns the value.</p><pre>f x = x</pre></div>'
            '<DIV CLASS="comment"><p>Also documented.</p><code>g</code></DIV>'
            '<span class="doc-comment">inline <code>h</code></span>'
            '<li class="comments"><pre>k = 2</pre></li>'
            '<div class="comments"><p class="comment-author">Ann</p><p>Nice post, thanks for sharing it with us!'
            '</p></div>'
            '<div class="share-buttons"><a href="#">Share</a></div>'
            "</body></html>")


def _extract_all(pages: list[str]) -> list:
    out = []
    for page in pages:
        try:
            out.append(X.extract_html_detailed(page, None, main_content=True, time_limit_s=None))
        except X.ExtractLimitError as e:
            out.append(repr(e))
    return out


def test_code_candidate_shortcuts_give_the_plain_extraction(shared_html_pages, monkeypatch):
    pages = shared_html_pages + [_listing(n, seed) for n, seed in ((2, 0), (5, 1), (40, 2), (400, 3))]
    _assert_plain_extraction(pages, monkeypatch)
    # the listing's widgets went and its comments stayed, with the fast paths as without them
    text = X.extract_html(pages[-1])
    assert "-- | Step 402: see v399" in text and "# three" in text
    assert "Nice post" not in text and "Share" not in text
    assert "Returns the value." in text and "k = 2" in text


def test_code_candidate_shortcuts_give_the_plain_extraction_of_haddock_sources(debian_doc, monkeypatch):
    pages = _haddock_sources(debian_doc)
    assert sum("hs-comment" in p for p in pages) >= 6
    _assert_plain_extraction(pages, monkeypatch)


def _assert_plain_extraction(pages: list[str], monkeypatch) -> None:
    monkeypatch.setattr(X, "_IN_CODE_QUERY_AT", 2)  # (the query from the second candidate in an element on)
    early = _extract_all(pages)
    monkeypatch.undo()
    fast = _extract_all(pages)
    assert early == fast
    monkeypatch.setattr(X, "_InCode", _PlainInCode)
    monkeypatch.setattr(X, "_DOC_COMMENT_QUERY", '[class*="omment"]')
    plain = _extract_all(pages)
    monkeypatch.undo()
    assert sum(bool(r[0]) for r in plain if isinstance(r, tuple)) >= 0.9 * len(pages)
    assert fast == plain


@pytest.mark.parametrize("query_at", [2, X._IN_CODE_QUERY_AT])
def test_in_code_answers_as_closest_for_every_candidate(shared_html_pages, debian_doc, monkeypatch, query_at):
    from resiliparse.parse.html import HTMLTree

    monkeypatch.setattr(X, "_IN_CODE_QUERY_AT", query_at)

    n_known = n_inside = n_candidates = 0
    for page in shared_html_pages + _haddock_sources(debian_doc, 4) + [_listing(60), _listing(3)]:
        text = X._drop_scripts(X._from_body(page))
        rw = X._Rewriter(HTMLTree.parse(text), text)
        sel = X._boilerplate_selector(rw.class_tokens, rw.attr_values[1], rw.attr_text)
        doc = rw.tree.document
        if not sel or doc is None:
            continue
        in_code = X._InCode(sel)
        for el in doc.query_selector_all(sel).values():
            inside = el.closest("pre, code, math") is not None
            was_known = el in in_code.known
            assert in_code(el) == inside
            assert inside or not was_known
            n_candidates += 1
            n_inside += inside
            n_known += was_known
    # candidates inside code came from the one query per element
    assert n_candidates >= 1000 and n_known >= 30, (n_candidates, n_inside, n_known)


def test_in_code_knows_only_the_element_it_queried(monkeypatch):
    """Two finds inside one ``<pre>`` (the threshold set to 2) teach its candidates, not those of the page or of
    another ``<pre>``."""
    from resiliparse.parse.html import HTMLTree

    monkeypatch.setattr(X, "_IN_CODE_QUERY_AT", 2)

    doc = HTMLTree.parse('<div class="share"><pre><i class="share">a</i><b class="share">b</b><u class="share">c'
                         '<s class="share">d</s></u></pre><p class="share">e</p><pre><i class="share">f</i></pre>'
                         '<math><mi class="share">g</mi></math></div>').document
    sel = '[class*="share"]'
    els = {(e.tag, e.text): e for e in doc.query_selector_all(sel).values()}
    in_code = X._InCode(sel)
    assert not in_code(els[("div", "abcdefg")])
    assert in_code(els[("i", "a")]) and not in_code.known
    assert in_code(els[("b", "b")])
    assert {(e.tag, e.text) for e in in_code.known} == {("i", "a"), ("b", "b"), ("u", "cd"), ("s", "d")}
    assert not in_code(els[("p", "e")]) and in_code(els[("i", "f")]) and in_code(els[("mi", "g")])


def test_doc_comment_query_selects_the_spared_tags_in_document_order(shared_html_pages, debian_doc):
    from resiliparse.parse.html import HTMLTree

    n = 0
    for page in shared_html_pages + _haddock_sources(debian_doc, 4) + [_listing(30)]:
        doc = HTMLTree.parse(page).document
        if doc is None:
            continue
        plain = [el for el in doc.query_selector_all('[class*="omment"]').values() if el.tag in X._DOC_COMMENT_TAGS]
        assert doc.query_selector_all(X._DOC_COMMENT_QUERY).values() == plain
        n += len(plain)
    assert n >= 20
