"""Sphinx signatures in extracted text: the return-annotation arrow kept, the viewcode "[source]" link dropped.

Sphinx (4.x on) writes ``<span class="sig-return"><span class="sig-return-icon">&#x2192;</span> ...`` after a
signature's parameters; resiliparse's main-content pass drops an element whose text is a lone symbol, so
"parse(x) -> None" came out as "parse(x) None". Its viewcode extension appends a "[source]" link
(``span.viewcode-link``) to every signature: page chrome. The signature (``dt.sig-object``) is a code block; a
numpydoc parameter's name and type (``<strong>`` and docutils' ``span.classifier``, whose colon the stylesheet
draws) read "name : type". Real pages of sphinx-doc and python-mdtraj-doc (fetched with ``apt-get download`` into
the benchmark cache, as benchmarks/bench_e2e.py does; skipped without apt) and synthetic pages.
"""

from __future__ import annotations

import pytest

from assay.stages.web.extract import extract_html

_PROSE = ("<p>The parser API lets an extension read a new source format. Each parser is registered with the "
          "application and receives the document text; this paragraph is long enough to be the main content.</p>")


def _page(signature: str, dt_class: str = "sig sig-object py", field_list: str = "") -> str:
    return (f'<html><head><title>Parser API</title></head><body><div class="body" role="main"><h1>Parser API</h1>'
            f'{_PROSE}<dl class="py method"><dt class="{dt_class}" id="Parser.parse">{signature}</dt>'
            '<dd><p>Parse the text and return the document tree; it raises an error on malformed input.</p>'
            f'{field_list}</dd></dl></div></body></html>')


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
    out = extract_html(_page(sig, dt_class="sig py"))
    assert "[source]" in out
    assert "parse(inputstring) None[source]" in out.splitlines()


@pytest.mark.slow
def test_sphinx_doc_parser_api_page(debian_doc):
    root = debian_doc("sphinx-doc")
    page = next(root.rglob("extdev/parserapi.html"))
    out = extract_html(page.read_bytes())
    assert "set_application(app: Sphinx) -> None" in out.splitlines()
    assert "[source]" not in out


# numpydoc's parameter list: docutils' field list, each parameter a <dt> of its name and a classifier (its type)
_FIELDS = ('<dl class="field-list simple"><dt class="field-odd">Parameters<span class="colon">:</span></dt>'
           '<dd class="field-odd"><dl><dt><strong>inputstring</strong><span class="classifier">str</span></dt>'
           '<dd><p>The text of the document, as read from its source file.</p></dd></dl></dd></dl>')


def test_signature_is_a_code_block_and_numpydoc_parameters_unglued():
    """The signature is the entry's declaration: a fenced block of its own line. A parameter's name and type read
    "name : type" (the colon is what Sphinx's stylesheet draws before a classifier), no longer run together."""
    out = extract_html(_page(_SIG, field_list=_FIELDS))
    assert "```python\nparse(inputstring) -> None\n```" in out
    assert "inputstring : str" in out.splitlines()
    assert "inputstringstr" not in out


def test_signature_of_other_markup_stays_prose():
    out = extract_html(_page(_SIG, dt_class="sig py", field_list=_FIELDS.replace("classifier", "kind")))
    assert "```" not in out
    assert "inputstringstr" in out


@pytest.mark.slow
def test_mdtraj_api_entry(debian_doc):
    """A short numpydoc API entry of python-mdtraj-doc: its signature and parameter lines were prose ("trajTrajectory"),
    and the page fell under lang_score."""
    root = debian_doc("python-mdtraj-doc")
    page = next(root.rglob("api/generated/mdtraj.compute_angles.html"))
    out = extract_html(page.read_bytes())
    assert "```python\nmdtraj.compute_angles(traj, angle_indices, periodic=True, opt=True)\n```" in out
    assert "traj : Trajectory" in out.splitlines()
    assert "angle_indices : np.ndarray, shape=(num_angles, 3), dtype=int" in out.splitlines()
