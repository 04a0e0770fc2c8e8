"""Code blocks weigh what their code weighs while the main content is chosen (issue 17, set M).

resiliparse's main-content pass weighs a block by its text. With a <pre> rewritten to a bare placeholder, a
listing followed by two links ("Full program listing", "Simple encryption template file": gtk-doc's examples)
read as a link list and was dropped with its code (libxmlsec1-doc: 516 of 3,236 <pre> lines). Where that pass
returns too little and the densest prose region of the full page is taken instead, a placeholder scored its
own few characters, so an API page's examples split the region ("Plots", a listing, "Basic examples", a
listing ...): python-mpmath-doc's bessel page kept one function's section of 36 (411 of 1,195 <pre> lines).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.stages.web.extract import _PH_PAD, extract_html, extract_html_detailed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _web_data import code_fidelity, pre_lines  # noqa: E402

_CODE = "\n".join(f"    status = step_{i}(ctx, data, size);" for i in range(12))
# the markup of a gtk-doc (DocBook) example: a titled listing followed by two links to the full sources
_GTKDOC_EXAMPLE = f"""<html><body>
<div class="sect1"><h2 class="title">Encrypting data.</h2>
<p>The typical encryption process includes following steps and a few more words here.</p>
<div class="example"><p class="title"><b>Example 11. Encrypting binary data with a template.</b></p>
<div class="example-contents"><pre class="programlisting">int
encrypt_file(const char* tmpl_file) {{
{_CODE}
}}</pre>
<p><a class="link" href="encrypt1.html">Full program listing</a></p>
<p><a class="link" href="encrypt1-tmpl.html">Simple encryption template file</a></p>
</div></div></div></body></html>"""


def test_listing_followed_by_links_kept_minimal_page():
    out = extract_html(_GTKDOC_EXAMPLE)
    hits, total = code_fidelity(pre_lines(_GTKDOC_EXAMPLE), out)
    assert (hits, total) == (total, 15)
    assert "The typical encryption process" in out
    assert _PH_PAD not in out


def test_padding_never_reaches_the_output_or_the_counts():
    out, stats = extract_html_detailed(_GTKDOC_EXAMPLE)
    assert _PH_PAD not in out
    assert stats["n_code_blocks"] == stats["n_code_blocks_kept"] == 1
    # the listing comes out once, fenced and verbatim
    assert out.count("encrypt_file(const char* tmpl_file) {") == 1
    assert "```\nint\nencrypt_file" in out


def test_page_without_code_unchanged_by_padding():
    html = "<html><body><article><h1>Title</h1><p>" + "A plain sentence of prose here. " * 30 + "</p></article></body></html>"
    out = extract_html(html)
    assert out.startswith("Title") and _PH_PAD not in out and "```" not in out


@pytest.mark.parametrize("page,n_lines", [
    ("xmlsec-notes-encrypt.html", 69),  # was 0: the example dropped by the main-content pass
    ("xmlsec-notes-custom-keys-store.html", 128),  # was 0
    ("xmlsec-notes-dynamic-encryption-templates.html", 109),  # was 20
])
def test_gtkdoc_examples_kept_real_pages(debian_doc, page, n_lines):
    html = (debian_doc("libxmlsec1-doc") / "usr/share/doc/libxmlsec1-dev/html/api" / page).read_text(encoding="utf-8")
    assert code_fidelity(pre_lines(html), extract_html(html)) == (n_lines, n_lines)


def test_api_page_examples_join_the_prose_region_real_page(debian_doc):
    """bessel.html: resiliparse's main-content pass returns nothing, so the densest prose region of the full
    page is taken; with each listing weighed by its code the region spans every function, not one."""
    html = (debian_doc("python-mpmath-doc") / "usr/share/doc/python-mpmath-doc/html/functions/bessel.html"
            ).read_text(encoding="utf-8")
    out = extract_html(html)
    assert code_fidelity(pre_lines(html), out) == (1195, 1195)
    for name in ("besselj", "airybi", "pcfw"):  # the first, a middle and the last function
        assert f"mpmath.{name}(" in out
    assert "Quick search" not in out and "Navigation" not in out
