"""The ``<pre>`` reference of bench_e2e and bench_web (benchmarks/_web_data.pre_lines) leaves line-number gutters out.

Pygments (Sphinx ``:linenos:``, MkDocs) numbers a listing inside its ``<pre>`` (``span.linenos`` before every line)
or in a gutter ``<pre>`` of its own (``td.linenos``). The numbers are not code: extraction leaves them out, so a
reference that kept them counted every numbered line as lost (open3d-doc's refine_registration tutorial: 14 of its
174 reference lines found, every code line present in the output).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _web_data import code_fidelity, pre_lines  # noqa: E402

from assay.stages.web.extract import extract_html  # noqa: E402


def test_pygments_gutters_left_out():
    inline = ('<div class="highlight"><pre><span></span><span class="linenos"> 9</span><span class="k">def</span> f():\n'
              '<span class="linenos">10</span>    <span class="k">return</span> 1\n<span class="linenos">11</span>\n</pre></div>')
    assert pre_lines(inline) == ["def f():", "    return 1"]
    table = ('<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>1\n2</pre></div></td>'
             '<td class="code"><div class="highlight"><pre>a = 1\nb = 2</pre></div></td></tr></table>')
    assert pre_lines(table) == ["a = 1", "b = 2"]
    # a listing without a gutter keeps every line, numbers of its own included
    assert pre_lines("<pre>10 PRINT 1\n20 GOTO 10</pre>") == ["10 PRINT 1", "20 GOTO 10"]


@pytest.mark.slow
def test_inline_numbered_sphinx_listing_real_page(debian_doc):
    """open3d-doc's refine_registration tutorial: literalinclude listings numbered inline from line 63, 40, 173;
    every reference line is a line of the extracted text."""
    page = (debian_doc("open3d-doc")
            / "usr/share/doc/open3d-doc/python/html/tutorial/reconstruction_system/refine_registration.html")
    html = page.read_text(encoding="utf-8", errors="replace")
    ref = pre_lines(html)
    assert ref[0] == "# examples/python/reconstruction_system/refine_registration.py"
    assert "def multiscale_icp(source," in ref and len(ref) == 162  # (174 with the 12 numbered blank lines)
    assert code_fidelity(ref, extract_html(html)) == (162, 162)
