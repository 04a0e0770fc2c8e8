"""Pages longer than the heuristics step's measuring limit (``WebHeuristicSignals(max_chars=...)``, 300,000
characters by default): the step measures the first ``max_chars`` characters, and a fenced block (a ``<pre>``)
still open at that cut is code up to the cut, not prose. Before, the cut took the block's closing fence with
it, ``split_prose`` found no block, and a page that is one page-wide ``<pre>`` (vim's help pages, RFC-style
text, a module's hyperlinked source) was measured as prose: code share near 0, so the web quality floor and
the prose rules judged it as running text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from datatrove.data import Document

from assay.stages.decisions.rules import decide
from assay.stages.web.extract import extract_html
from assay.stages.web.heuristics import _FENCE_RE as _FENCE
from assay.stages.web.heuristics import WebHeuristicSignals, split_prose, web_heuristic_signals
from assay.stages.web.rules import default_web_rules

# the default recipe's web quality floor (a percentile floor, unless web__code_share >= 0.05)
_FLOOR = next(r for r in yaml.safe_load((Path(__file__).resolve().parents[2] / "pipeline/recipes/default.yaml")
                                        .read_text())["decisions"]["rules"] if r["name"] == "web_quality_floor")


def _measure(text: str, max_chars: int) -> dict:
    doc = Document(text=text, id="t", metadata={"source": "web"})
    return next(iter(WebHeuristicSignals(max_chars=max_chars).run(iter([doc])))).metadata


@pytest.fixture(scope="module")
def rfc_page(shared_data) -> str:
    """readability's ``ietf-1``: an Internet-Draft as rfcmarkup renders it, 22 ``<pre>`` blocks of hard-wrapped,
    column-aligned prose (one per page of the draft) under a line of navigation links."""
    html = (shared_data / "html/readability/readability/input/ietf-1.html").read_bytes()
    return extract_html(html)


def test_block_open_at_the_cut_is_code(rfc_page):
    first = _FENCE.search(rfc_page)
    assert first is not None and first.start() < 200  # the navigation line, then the draft's first page
    whole = web_heuristic_signals(rfc_page)
    assert whole["web__code_share"] > 0.95
    cut = (first.start() + first.end()) // 2  # inside the first page of the draft
    m = _measure(rfc_page, cut)
    assert m["web__measured_chars"] == cut and m["web__n_code_blocks"] == 1
    assert m["web__code_share"] > 0.9 and m["web__reference_page"]
    # what the step measured before: the prefix as prose (the defect)
    old = web_heuristic_signals(rfc_page[:cut])
    assert old["web__n_code_blocks"] == 0 and old["web__code_share"] < 0.01
    # the prose-only values are those of the prose before the block (the navigation line)
    prose, _ = split_prose(rfc_page[:first.start()])
    assert m["prose__gopher__n_words"] == web_heuristic_signals(prose)["gopher__n_words"]
    # the classic full-text values are still the prefix's own, with no fence added
    assert all(m[k] == old[k] for k in old if k.startswith(("gopher__", "c4__", "fineweb__")))


def test_quality_floor_judges_the_cut_page_as_what_it_is(rfc_page):
    """The decision follows the code share: a low web percentile does not drop the preformatted page once the
    cut block counts as code; measured as prose (before), the floor dropped it."""
    first = _FENCE.search(rfc_page)
    cut = (first.start() + first.end()) // 2
    low = {"source": "web", "quality__web_pct": 0.01}
    spec = {"rules": [_FLOOR]}
    assert decide(dict(_measure(rfc_page, cut), **low), spec).reason is None
    assert decide(dict(web_heuristic_signals(rfc_page[:cut]), **low), spec).reason == "web_web_quality_floor"


def test_cut_outside_a_block_changes_nothing(rfc_page):
    """Where the cut falls after a closed block (or the page is not cut at all), the values are the prefix's
    as before."""
    blocks = list(_FENCE.finditer(rfc_page))
    for cut in (blocks[2].end(), blocks[2].end() + 1):
        assert rfc_page[blocks[2].end():cut].strip() == ""
        m = _measure(rfc_page, cut)
        old = web_heuristic_signals(rfc_page[:cut])
        assert {k: m[k] for k in old} == old and m["web__n_code_blocks"] == 3
    assert {k: v for k, v in _measure(rfc_page, len(rfc_page)).items()
            if k not in ("source", "web__measured_chars")} == web_heuristic_signals(rfc_page)


@pytest.mark.slow
def test_hyperlinked_source_longer_than_the_limit_kept(debian_doc):
    """Haddock's hyperlinked source of GHC's parser (ghc-doc, a package rules were designed on): one ``<pre>``
    of 1.29 M characters, cut by the step's default limit of 300,000 inside it. Measured as code it passes
    every default web rule and the quality floor; measured as prose (before) a prose rule dropped it."""
    page = debian_doc("ghc-doc") / "usr/share/doc/ghc-doc/html/libraries/ghc-9.0.2/src/GHC-Parser.html"
    text = extract_html(page.read_bytes())
    assert len(text) > 1_000_000
    m = _measure(text, 300_000)
    assert m["web__measured_chars"] == 300_000 and m["web__code_share"] > 0.99
    rules = {"rules": [*default_web_rules(), _FLOOR]}
    low = {"quality__web_pct": 0.01}
    assert decide(dict(m, **low), rules).reason is None
    old = dict(web_heuristic_signals(text[:300_000]), source="web")
    # its type signatures on lines of their own count as code (Haddock's declarations), far from the whole listing
    assert old["web__code_share"] < 0.25
    assert decide(dict(old, **low), rules).reason is not None
