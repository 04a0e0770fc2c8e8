"""Haddock module pages and the default recipe's prose rules and web quality floor (issue 17, item 3).

Haddock renders a module's declarations (``name :: Type -> Type``) as text lines, not ``<pre>``: ``split_prose``
counts such a line as code (``web__code_share``), so the prose rules and the web quality floor, which judge
prose, no longer read Haskell type signatures as prose. A real page of a Debian documentation package (fetched
with ``apt-get download`` into the benchmark cache, as benchmarks/bench_e2e.py does; skipped without apt), kept
now and dropped before.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide
from assay.stages.web import heuristics
from assay.stages.web.extract import extract_html
from assay.stages.web.heuristics import split_prose

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]


def test_haskell_signature_lines_are_code():
    text = ("Documentation\n\ntoText :: Key -> Text Source #\n\nConvert to Text.\n\n"
            "(<>) :: a -> a -> a\n\nHome :: About :: Contact\n\nnews :: 12 comments\n")
    prose, counts = split_prose(text)
    assert counts["n_code_blocks"] == 2
    assert counts["code_chars"] == len("toText :: Key -> Text Source #") + len("(<>) :: a -> a -> a")
    # a capitalised breadcrumb, a count after " :: ": prose
    assert "Home :: About :: Contact" in prose and "news :: 12 comments" in prose and "toText" not in prose


@pytest.mark.slow
def test_haddock_module_page_kept(debian_doc, page_signals, monkeypatch):
    """Haddock (aeson's Data.Aeson.Key): a signature line per declaration and a sentence under it. With its
    signatures read as prose (as before: the pattern matching nothing) the web quality floor dropped it;
    they are code now (code share >= 0.05) and the page passes every rule."""
    html = (debian_doc("libghc-aeson-doc") / "usr/share/doc/libghc-aeson-doc/html/Data-Aeson-Key.html").read_text(
        encoding="utf-8", errors="replace")
    m = page_signals(html)
    assert m["web__code_share"] >= 0.25 and m["quality__web_pct"] < 0.02
    assert decide(m, {"rules": RULES}).reason is None
    monkeypatch.setattr(heuristics, "_HASKELL_SIG_RE", re.compile(r"(?!)"))
    old = page_signals(html)
    assert old["web__code_share"] < 0.05
    assert decide(old, {"rules": RULES}).reason == "web_web_quality_floor"



# a declaration as Haddock 2.18+ writes it: the name, its type, then a "Source" link to the hyperlinked source and a
# "#" anchor to itself
_DECL = ('<p class="src"><a id="v:toText" class="def">toText</a> :: <a href="#t:Key">Key</a> -&gt; <a href="#t:Text">'
         'Text</a> <a href="src/Data.Key.html#toText" class="link">Source</a> <a href="#v:toText" class="selflink">#'
         '</a></p><div class="doc"><p>Convert a key to the text it holds, as it was written in the source.</p></div>')


def _decl_page(head: str) -> str:
    return (f"<html><head><title>Data.Key</title>{head}</head><body><div id=\"content\"><h1>Documentation</h1>"
            f"{_DECL}</div></body></html>")


def test_haddock_source_links_dropped_only_on_haddock_pages():
    """The "Source" link and "#" anchor that close each Haddock signature are page chrome: gone on a page that
    loads Haddock's script; a page of another site with the same "src"/"link"/"selflink" classes is unchanged."""
    haddock = extract_html(_decl_page('<script src="haddock-bundle.min.js" async="async"></script>'))
    assert "toText :: Key -> Text\n" in haddock + "\n" and "Source" not in haddock and "#" not in haddock
    other = extract_html(_decl_page('<script src="site.js"></script>'))
    assert "toText :: Key -> Text Source #" in other


@pytest.mark.slow
def test_haddock_signature_lines_end_with_their_type(debian_doc):
    """aeson's Data.Aeson module (libghc-aeson-doc, Haddock 2.25): no declaration line ends in "Source #"."""
    html = (debian_doc("libghc-aeson-doc") / "usr/share/doc/libghc-aeson-doc/html/Data-Aeson.html").read_text(
        encoding="utf-8", errors="replace")
    lines = extract_html(html).splitlines()
    assert "decode :: FromJSON a => ByteString -> Maybe a" in lines
    assert "encode :: ToJSON a => a -> ByteString" in lines
    assert not [ln for ln in lines if ln.rstrip().endswith(("Source #", "Source"))]
