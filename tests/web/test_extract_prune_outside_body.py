"""Pruning around a marked article body before the main-content pass (``_prune_outside_body``).

On a page with a marked article body (``itemprop=articleBody``, article-body classes and ids), the elements
around it that ``_restrict_to_article_body`` would drop are removed before resiliparse's main-content pass
(whose cost grows with the page's text): siblings of the body and of its ancestors. What stays: subtrees
holding a marked body, the first ``<h1>`` or a placeholder (code, math, tables outside the body); nothing goes
when the long paragraphs outside the body hold over 30% of their text and the body's. Short lines outside
the body that the restriction's substring match let through (a ticker list "AAPL / XLK / DJIA" whose symbols
the story names) go with them."""

from __future__ import annotations

import sys
from pathlib import Path

from resiliparse.parse.html import HTMLTree

from assay.stages.web.extract import _PH_OPEN, _prune_outside_body, _Rewriter, extract_html

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

STORY = "".join(f"<p>Paragraph {i} of the story explains one more part of the events in some detail, with "
                f"quotes and numbers that the reader needs to follow the argument.</p>\n" for i in range(8))


def _rewriter(html: str) -> _Rewriter:
    rw = _Rewriter(HTMLTree.parse(html), html)
    rw.boilerplate()
    rw.code()
    rw.tables()
    return rw


def _page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def test_prune_drops_what_lies_around_the_body_and_keeps_headline_code_and_marked_bodies():
    html = _page(
        "<nav><a href=/>Home</a> <a href=/w>World news</a></nav>"
        "<div class=\"top\"><header><h1>The headline of the story</h1></header><div class=\"share\">Share this</div>"
        "<div class=\"wrap\"><aside>Most read: another story entirely</aside>"
        f"<div class=\"article-body\">{STORY}</div>"
        "<div class=\"aside-code\"><pre>x = 1\nprint(x)</pre></div>"
        "<div class=\"article-body\"><p>A second marked part of the story, short.</p></div>"
        "<ul class=\"tickers\"><li>AAPL</li><li>XLK</li></ul></div></div>"
        "<footer>Copyright 2020 Example Inc.</footer>")
    rw = _rewriter(html)
    _prune_outside_body(rw)
    text = rw.tree.body.text
    assert "Paragraph 7 of the story" in text
    assert "The headline of the story" in text  # the <h1>'s subtree stays (``title``)
    assert "second marked part" in text  # a marked body stays (the restriction reads every one)
    assert _PH_OPEN in text.split("Paragraph 7")[1]  # the code block's placeholder outside the body stays
    for gone in ("World news", "Most read", "AAPL", "Copyright", "Share this"):
        assert gone not in text, gone


def test_prune_leaves_the_page_alone_when_the_story_is_outside_the_marked_body():
    # a marked body of 800+ characters beside more of the story's long paragraphs: the restriction would not
    # apply either
    outside = "".join(f"<p>Outside paragraph {i} continues the story at length, so that a reader who came for it "
                      f"finds the rest of the events here and not in the marked box.</p>\n" for i in range(12))
    html = _page(f"<div class=\"article-body\">{STORY}</div><div class=\"more\">{outside}</div>")
    rw = _rewriter(html)
    _prune_outside_body(rw)
    assert "Outside paragraph 11" in rw.tree.body.text


def test_prune_without_a_marked_body_changes_nothing():
    html = _page(f"<nav>Home World</nav><div class=\"content\">{STORY}</div><footer>Copyright</footer>")
    rw = _rewriter(html)
    _prune_outside_body(rw)
    assert "Home World" in rw.tree.body.text and "Copyright" in rw.tree.body.text


def test_ticker_list_outside_the_body_goes_real_page(shared_data):
    # ir_chaos train (marketwatch): a ticker list "AAPL / XLK / DJIA" beside the story, whose short lines the
    # body restriction matched as substrings of the story's text; F1 0.992 -> 0.995
    from _web_data import load_gold, token_prf

    page = next(p for p in load_gold("ir_chaos", shared_data) if p.name == "apple_6")
    text = extract_html(page.html)
    assert "\n  • XLK" not in text and text.count("XLK") == 1  # the story's own mention stays
    assert token_prf(text, page.gold)[2] > 0.994
