"""The widget layer's shortcuts give what the plain definitions give.

``_boilerplate_selector`` groups a page's widget words per attribute (``[class]:is([class*="share"], ...)``):
lexbor then tests the attribute's presence once per element instead of once per word; it selects the elements
the plain list of words selects, in the same order. ``_has_sentence_breaks`` answers "at least n sentence ends"
reading only as far as the n-th. ``_spare_doc_comments`` skips its query on pages without code. ``_widget_word``
matches ASCII keys lower-cased, without re.I. Checked on the real pages of ../shared/data against the plain
definitions."""

from __future__ import annotations

import re

from assay.stages.web import extract as X


def _plain_selector(sel: str) -> str:
    """The grouped selector as the plain list of its words: ``[class]:is(A, B), C`` -> ``A, B, C``."""
    return re.sub(r"\[(?:class|id)\]:is\(([^()]*)\)", r"\1", sel)


_WIDGETS = ('<html><body><div class="site-header Share"><p id="Read-More">a</p></div>'
            '<div class="COMMENTS">b</div><span class="comments-area">c</span><p class="imageCaption">d</p>'
            '<p class="caption">e</p><div id="social-bar" class="x">f</div><div id="sidebar">g</div>'
            "<article><p>Text.</p></article></body></html>")


def _selector_of(page: str):
    """(the page's document as the widget layer sees it, its widget selector)."""
    from resiliparse.parse.html import HTMLTree

    text = X._drop_scripts(X._from_body(page))
    rw = X._Rewriter(HTMLTree.parse(text), text)
    return rw.tree.document, X._boilerplate_selector(rw.class_tokens, rw.attr_values[1], rw.attr_text)


def test_grouped_widget_selector_selects_what_its_words_select(shared_html_pages):
    n_grouped = n_selected = 0
    for page in shared_html_pages + [_WIDGETS]:
        doc, sel = _selector_of(page)
        if not sel or doc is None:
            continue
        plain = _plain_selector(sel)
        assert ":is(" not in plain
        n_grouped += plain != sel
        got = doc.query_selector_all(sel).values()
        assert got == doc.query_selector_all(plain).values()
        n_selected += len(got)
    assert n_grouped >= 100 and n_selected >= 5000, (n_grouped, n_selected)


def test_grouped_widget_selector_keeps_case_rules():
    doc, sel = _selector_of(_WIDGETS)
    # words spelled in capitals only are asked case-insensitively ("Share", "Read-More"), "caption" also as
    # "imageCaption"; a word the page also spells in lower case is asked as spelled ("COMMENTS" is not selected)
    assert sel == ('[class]:is([class*="caption" i], [class*="comments"], [class*="header"], [class*="share" i]), '
                   '[id]:is([id*="read-more" i], [id*="sidebar"], [id*="social"])')
    got = {(e.tag, e.text) for e in doc.query_selector_all(sel).values()}
    assert got == {("div", "a"), ("p", "a"), ("span", "c"), ("p", "d"), ("p", "e"), ("div", "f"), ("div", "g")}
    assert got == {(e.tag, e.text) for e in doc.query_selector_all(_plain_selector(sel)).values()}


def _count_sentence_breaks(text: str) -> int:
    """The definition: every sentence end counted."""
    return sum(text.count(end) for end in X._SENTENCE_ENDS)


def test_sentence_break_threshold_is_the_count_reaching_it(shared_html_pages):
    texts = ["", ".", ". ", "a. b", "Dr.Who", "e.g. this. That? Yes! No.\nEnd", "。？！", "完了。次？", "a.\n\n. .",
             "x" * 50 + ". " * 3, "’Quoted.’ Then. ", "no ends here", "?!", "! ? . "]
    from resiliparse.parse.html import HTMLTree

    for page in shared_html_pages[:60]:
        doc = HTMLTree.parse(page).document
        texts += [el.text or "" for el in doc.query_selector_all("p, li, div").values()[:40]]
    n_reaching = 0
    for t in texts:
        count = _count_sentence_breaks(t)
        for n in (1, 2, 5, 6):
            assert X._has_sentence_breaks(t, n) == (count >= n), (t[:80], n, count)
        n_reaching += count >= 5
    assert X._has_sentence_breaks("One. Two.") and not X._has_sentence_breaks("One")
    assert n_reaching >= 50


def test_doc_comment_pass_without_code_on_the_page_skips_nothing_it_would_spare(shared_html_pages, monkeypatch):
    """The pass skipped on pages without ``<pre>``/``<code>`` (``_has_code_elements``) spares nothing there: the
    extraction of every page is the one the pass run on every page gives."""
    pages = shared_html_pages + [
        '<div class="comment"><p>Note on the API, in prose with no code at all here.</p></div>'
        '<div class="doc-comment"><p>Returns the value.</p><pre>f x = x</pre></div>']
    fast = [X.extract_html(p) for p in pages]
    monkeypatch.setattr(X._Rewriter, "_has_code_elements", lambda self: True)
    assert [X.extract_html(p) for p in pages] == fast
    assert "f x = x" in fast[-1] and "Returns the value." in fast[-1]


def _plain_widget_word(key: str) -> str:
    """The definition: ``_BOILERPLATE_CLASS_RE`` (re.I) on the key, negated tokens left out, camelCase parts split."""
    if "no" in key:
        key = X._NEGATED_TOKEN_RE.sub(" ", key)
    m = X._BOILERPLATE_CLASS_RE.search(X._camel_split(key))
    return m.group(1).lower() if m is not None else ""


def test_widget_word_of_a_key_is_the_case_folded_match(shared_html_pages):
    keys = ["share", "Share-Bar x", "no-share comments", "imageCaption", "photoCaptionText", "site-HEADER ",
            "x advertisement_box", "read-more-stories", "BACK-TO-TOP", "sharebutton", " social", "\u017fhare",
            "boo\u212a comment", "k\u00e9y-share", "No-Share", "navheader", "comment\u0130 bio", ""]
    for page in shared_html_pages:
        doc, sel = _selector_of(page)
        if sel and doc is not None:
            keys += [(el.getattr("class") or "") + " " + (el.getattr("id") or "")
                     for el in doc.query_selector_all(sel).values()]
    words = [X._widget_word(k) for k in keys]
    assert words == [_plain_widget_word(k) for k in keys]
    assert X._widget_word("\u017fhare") == "\u017fhare" and X._widget_word("No-Share") == "share"
    assert X._widget_word("photoCaptionText") == "" and X._widget_word("imageCaption") == "caption"
    assert len(keys) >= 5000 and sum(map(bool, words)) >= 3000


def test_generator_word_rules_out_only_pages_without_a_mark(shared_html_pages):
    """``generated_by`` searches a page for the word all of a generator's marks hold first; it answers what a
    search for each mark answers."""
    from resiliparse.parse.html import HTMLTree

    pages = shared_html_pages + ['<meta name="generator" content="javadoc/ClassWriterImpl"><p>x</p>',
                                 "<!-- Generated by javadoc (17) --><p>x</p>", "<p>javadoc, Javadoc</p>"]
    hits = []
    for page in pages:
        rw = X._Rewriter(HTMLTree.parse(page), page)
        for marks in (X._JAVADOC_MARKS, X._DOXYGEN_MARKS, X._HADDOCK_MARKS):
            hits.append(rw.generated_by(marks))
            assert hits[-1] == any(m in page for m in marks)
    assert hits[-9] and hits[-6] and not hits[-3]


def test_folding_a_prefix_decides_only_what_folding_all_decides(shared_html_pages):
    """``_folds_over(text, limit)``: True only where the whole text folded is over ``limit``."""
    from resiliparse.parse.html import HTMLTree

    texts = ["", " " * 5000, "a " * 450, "a" + " " * 900 + "b" * 401, "\u00a0x\u3000y\n" * 300, "word " * 200]
    for page in shared_html_pages[:60]:
        doc = HTMLTree.parse(page).document
        texts += [el.text or "" for el in doc.query_selector_all("td, div, body").values()[:40]]
    n_decided = 0
    for t in texts:
        for limit in (10, 400, 4000):
            if X._folds_over(t, limit):
                n_decided += 1
                assert len(" ".join(t.split())) > limit, (t[:80], limit)
    assert not X._folds_over("a" + " " * 900 + "b" * 401, 400) and X._folds_over("a " * 450, 400)
    assert n_decided >= 300, n_decided


def test_id_values_found_from_their_equals_sign_are_the_plain_pattern_s(shared_html_pages):
    """``_attr_values`` finds id values from their '="' (``_ID_VALUE_FROM_EQ_RE``); the plain pattern
    ``id="([^"]{0,300})`` finds the same ones, a value cut at 300 characters next to an id included."""
    rc, ri = X._ATTR_VALUE_RES
    cut = "x" * 298
    pages = shared_html_pages + [
        f'<p id="{cut}id="y">a</p>', f'<p id="{cut}i" d="z">', 'x id="a" pid="b" id="" grid="c" id=="d"',
        'id="', '="id="q"', 'id="a id="b"', "<p class=\"k\" id='single'>", '<p id="日本" class="x">']
    n_ids = 0
    for page in pages:
        got = X._attr_values(page)
        assert got == (set(rc.findall(page)), set(ri.findall(page))), page[:80]
        n_ids += len(got[1])
    assert X._attr_values(pages[-8])[1] == {cut + "id"}
    assert n_ids >= 5000, n_ids
