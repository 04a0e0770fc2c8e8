"""Sphinx signatures in extracted text: the return-annotation arrow kept, the viewcode "[source]" link dropped.

Sphinx (4.x on) writes ``<span class="sig-return"><span class="sig-return-icon">&#x2192;</span> ...`` after a
signature's parameters; resiliparse's main-content pass drops an element whose text is a lone symbol, so
"parse(x) -> None" came out as "parse(x) None". Its viewcode extension appends a "[source]" link
(``span.viewcode-link``) to every signature: page chrome. A real page of sphinx-doc (fetched with ``apt-get
download`` into the benchmark cache, as benchmarks/bench_e2e.py does; skipped without apt) and synthetic pages.
"""

from __future__ import annotations

import pytest

from assay.stages.web.extract import extract_html

_PROSE = ("<p>The parser API lets an extension read a new source format. Each parser is registered with the "
          "application and receives the document text; this paragraph is long enough to be the main content.</p>")


def _page(signature: str) -> str:
    return (f'<html><head><title>Parser API</title></head><body><div class="body" role="main"><h1>Parser API</h1>'
            f'{_PROSE}<dl class="py method"><dt class="sig sig-object py" id="Parser.parse">{signature}</dt>'
            '<dd><p>Parse the text and return the document tree; it raises an error on malformed input.</p></dd>'
            '</dl></div></body></html>')


_SIG = ('<span class="sig-name descname"><span class="pre">parse</span></span><span class="sig-paren">(</span>'
        '<em class="sig-param"><span class="n"><span class="pre">inputstring</span></span></em>'
        '<span class="sig-paren">)</span> <span class="sig-return"><span class="sig-return-icon">&#x2192;</span> '
        '<span class="sig-return-typehint"><span class="pre">None</span></span></span>'
        '<a class="reference internal" href="../_modules/parsers.html#Parser.parse">'
        '<span class="viewcode-link"><span class="pre">[source]</span></span></a>')


def test_return_arrow_kept_and_source_link_dropped():
    out = extract_html(_page(_SIG))
    assert "parse(inputstring) -> None" in out.splitlines()
    assert "[source]" not in out


def test_other_markup_unchanged():
    """A "[source]" link and an arrow outside Sphinx's classes are left to the usual extraction."""
    sig = _SIG.replace("viewcode-link", "src-link").replace("sig-return-icon", "ret-icon")
    out = extract_html(_page(sig))
    assert "[source]" in out
    assert "parse(inputstring) None[source]" in out.splitlines()


@pytest.mark.slow
def test_sphinx_doc_parser_api_page(debian_doc):
    root = debian_doc("sphinx-doc")
    page = next(root.rglob("extdev/parserapi.html"))
    out = extract_html(page.read_bytes())
    assert "set_application(app: Sphinx) -> None" in out.splitlines()
    assert "[source]" not in out
