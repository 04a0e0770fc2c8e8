from __future__ import annotations

import re
from pathlib import Path

import pytest
from datatrove.data import Document

from assay.stages.web.extract import (ExtractTooDeep, HtmlExtractor, extract_html, extract_html_detailed,
                                      mathml_to_latex)


@pytest.fixture(scope="module")
def tutorial_text(tutorial_html: str) -> str:
    return extract_html(tutorial_html)


def test_code_block_is_fenced_verbatim_with_language(tutorial_text: str):
    block = ("```python\n"
             "def f(xs):\n"
             "    if not xs:\n"
             "        return []\n"
             "    return sorted(xs, key=lambda x: -x)\n"
             "```")
    assert block in tutorial_text


def test_inline_code_stays_inline(tutorial_text: str):
    assert "Use `sorted(xs)` for a new list." in tutorial_text


def test_math_forms_become_latex(tutorial_text: str):
    assert "$O(n \\log n)$" in tutorial_text  # MathML with x-tex annotation
    assert "$$\\frac{1}{\\sqrt{2\\pi}}e^{-x^2}$$" in tutorial_text  # MathML converted, display
    assert "$a^2+b^2=c^2$" in tutorial_text  # MathJax script
    assert "$$\\int_0^1 x\\,dx$$" in tutorial_text  # MathJax display script
    assert "$\\sqrt{x}$" in tutorial_text  # KaTeX annotation
    assert "√x" not in tutorial_text  # KaTeX's rendered duplicate is gone
    assert "$E=mc^2$" in tutorial_text  # <img alt> formula


def test_table_and_boilerplate(tutorial_text: str):
    assert "| n | time |\n|---|---|\n| 10 | 1 ms |\n| 100 | 3 ms |" in tutorial_text
    assert "cookies" not in tutorial_text
    assert "All rights reserved" not in tutorial_text
    assert "Contact" not in tutorial_text


def test_counts(tutorial_html: str):
    _, st = extract_html_detailed(tutorial_html)
    assert st["n_code_blocks_kept"] == 1
    assert st["n_math_kept"] == 6
    assert st["n_tables"] == 1
    assert st["n_inline_code"] == 1


def test_code_edge_cases():
    html = """<html><body><article><p>Some words that make this an article worth reading, and a few more words.</p>
    <pre class="brush: cpp">int main() {<br>    return 0;<br>}</pre>
    <div class="highlight"><pre><span class="k">for</span> i <span class="ow">in</span> x:
\tprint(i)   </pre></div>
    <pre><code class="lang-js">const a = "```";</code></pre>
    <pre>   </pre>
    <p>And a closing paragraph with enough words to count as real content here.</p></article></body></html>"""
    text = extract_html(html)
    assert "```cpp\nint main() {\n    return 0;\n}\n```" in text
    assert "```\nfor i in x:\n\tprint(i)\n```" in text  # tab kept, trailing spaces dropped
    assert '````javascript\nconst a = "```";\n````' in text  # fence longer than the content's backticks


def test_mathml_conversion_units():
    from resiliparse.parse.html import HTMLTree

    def conv(mml: str) -> str:
        tree = HTMLTree.parse(f"<p><math>{mml}</math></p>")
        return mathml_to_latex(tree.body.query_selector("math"))

    assert conv("<msubsup><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow><mi>n</mi></msubsup>"
                "<msub><mi>x</mi><mi>i</mi></msub>") == "\\sum_{i=1}^n x_i"
    assert conv("<mover><mi>x</mi><mo>^</mo></mover>") == "\\hat{x}"
    assert conv("<mroot><mi>x</mi><mn>3</mn></mroot>") == "\\sqrt[3]{x}"
    assert conv("<mi>sin</mi><mi>θ</mi>") == "\\sin\\theta"
    assert conv("<mfenced><mi>a</mi><mi>b</mi></mfenced>") == "\\left(a,b\\right)"
    assert conv("<mtable><mtr><mtd><mn>1</mn></mtd><mtd><mn>0</mn></mtd></mtr>"
                "<mtr><mtd><mn>0</mn></mtd><mtd><mn>1</mn></mtd></mtr></mtable>") == \
        "\\begin{matrix}1 & 0 \\\\ 0 & 1\\end{matrix}"


def test_wikipedia_math_markup():
    html = """<html><body><div id="content"><p>The identity
    <span class="mwe-math-element"><span class="mwe-math-mathml-inline mwe-math-mathml-a11y" style="display: none;">
    <math xmlns="http://www.w3.org/1998/Math/MathML" alttext="{\\displaystyle e^{i\\pi }+1=0}"><semantics><mrow>
    <msup><mi>e</mi><mrow><mi>i</mi><mi>π</mi></mrow></msup><mo>+</mo><mn>1</mn><mo>=</mo><mn>0</mn></mrow>
    <annotation encoding="application/x-tex">{\\displaystyle e^{i\\pi }+1=0}</annotation></semantics></math></span>
    <img src="https://wikimedia.org/api/rest_v1/media/math/render/svg/abc" class="mwe-math-fallback-image-inline"
    alt="{\\displaystyle e^{i\\pi }+1=0}"></span> is due to Euler and it is one of the most quoted formulas of all time.</p>
    </div></body></html>"""
    text = extract_html(html)
    assert "$e^{i\\pi }+1=0$" in text
    assert text.count("e^{i") == 1  # MathML and fallback image are not both kept


def test_bytes_input_and_empty_input():
    html = "<html><head><meta charset='iso-8859-7'></head><body><article><p>" + "Καλημέρα κόσμε, αυτό είναι ένα κείμενο. " * 5 + "</p></article></body></html>"
    assert "Καλημέρα" in extract_html(html.encode("iso-8859-7"))
    assert extract_html("") == ""
    assert extract_html(b"") == ""
    assert extract_html("<html><body></body></html>") == ""
    # placeholder characters coming from the page itself cannot inject blocks
    from assay.stages.web.extract import _PH_CLOSE, _PH_OPEN

    evil = extract_html(f"<p>evil {_PH_OPEN}0{_PH_CLOSE} text that is long enough to be kept as content</p>")
    assert _PH_OPEN not in evil and "evil 0 text" in evil
    # icon-font private-use characters are ordinary page text
    assert "\ue000" in extract_html("<p>icon \ue000 text that is long enough to be kept as the content</p>")


def test_step_signals_and_reasons(tutorial_html: str):
    docs = [
        Document(text=tutorial_html, id="a", metadata={"source": "web", "content_type": "text/html"}),
        Document(text="<html><body><nav></nav></body></html>", id="b", metadata={"source": "web", "content_type": "text/html"}),
        Document(text="plain WET text", id="c", metadata={"source": "web", "content_type": "text/plain"}),
        Document(text="", id="d", metadata={"source": "web", "reject_reason": "warc_corrupt_gzip"}),
    ]
    step = HtmlExtractor()
    out = list(step.run(iter(docs)))
    assert [d.id for d in out] == ["a", "b", "c", "d"]  # never drops
    a, b, c, d = out
    assert a.metadata["extract__n_code_blocks"] == 1
    assert a.metadata["extract__n_math"] == 6
    assert a.metadata["extract__chars"] == len(a.text) > 0
    assert a.metadata["extract__backend"] == "resiliparse"
    assert "reject_reason" not in a.metadata
    assert b.metadata["reject_reason"] == "web_empty_extraction" and b.text == ""
    assert c.text == "plain WET text" and "extract__chars" not in c.metadata
    assert d.metadata["reject_reason"] == "warc_corrupt_gzip"
    assert step.stats["reject/web_empty_extraction"].total == 1


def test_trafilatura_backend_runs(tutorial_html: str):
    out = list(HtmlExtractor(backend="trafilatura").run(iter([
        Document(text=tutorial_html, id="a", metadata={"source": "web", "content_type": "text/html"})])))
    assert "sorted function" in out[0].text
    assert out[0].metadata["extract__backend"] == "trafilatura"
    with pytest.raises(ValueError):
        HtmlExtractor(backend="nope")


@pytest.mark.shared_data
def test_code_fidelity_on_real_pages(shared_data: Path):
    """Every non-empty <pre> line of the real test pages appears verbatim as an output line."""
    from resiliparse.parse.html import HTMLTree

    hits = total = 0
    pages = sorted((shared_data / "html/readability/readability/input").glob("*.html"))
    for p in pages:
        html = p.read_text(encoding="utf-8", errors="replace")
        if "<pre" not in html.lower():
            continue
        tree = HTMLTree.parse(html)
        ref = []
        for pre in tree.document.query_selector_all("pre").values():
            for br in pre.query_selector_all("br").values():
                br.replace_with(tree.create_text_node("\n"))
            ref += [ln.rstrip() for ln in (pre.text or "").replace("\u00a0", " ").split("\n") if ln.strip()]
        out_lines = set(extract_html(html).split("\n"))
        hits += sum(ln in out_lines for ln in ref)
        total += len(ref)
    assert total > 1000
    assert hits / total >= 0.97


@pytest.mark.shared_data
def test_real_warc_pages_extract(shared_data: Path):
    """Extraction over every HTML record of the real WARC files: no crash, mostly non-empty."""
    from assay.stages.web.warc import WarcReader

    docs = list(HtmlExtractor().run(WarcReader([str(shared_data / "warc")]).run()))
    ok = [d for d in docs if not d.metadata.get("reject_reason")]
    assert len(ok) >= 0.8 * len(docs)
    math_pages = [d for d in ok if d.metadata.get("extract__n_math", 0) > 0]
    code_pages = [d for d in ok if d.metadata.get("extract__n_code_blocks", 0) > 0]
    assert code_pages  # the academic/wget crawls carry code blocks
    for d in code_pages:
        assert re.search(r"^```", d.text, re.M)
    for d in math_pages:
        assert "$" in d.text


def test_hostile_inputs_do_not_crash():
    import os

    assert isinstance(extract_html(os.urandom(20_000)), str)
    assert isinstance(extract_html(b"\x00\xff" * 5000), str)
    deep_math = "<p>x " + "<math>" + "<mrow>" * 400 + "<mi>x</mi>" + "</mrow>" * 400 + "</math> y</p>"
    assert isinstance(extract_html(deep_math), str)
    # deeper than MAX_DEPTH: a reason, not minutes of parsing (tests/web/test_extract_limits.py)
    deep_div = "<div>" * 5000 + "<p>deep text that is long enough to be content in a page</p>" + "</div>" * 5000
    with pytest.raises(ExtractTooDeep):
        extract_html_detailed(deep_div)
    assert extract_html(deep_div) == ""
    giant_line = "<html><body><article><p>" + ("word " * 400_000) + "</p></article></body></html>"
    assert len(extract_html(giant_line)) > 1_000_000
    unclosed = "<html><body><pre>def f():\n    return 1\n<p>text after an unclosed pre block"
    assert "    return 1" in extract_html(unclosed)


@pytest.mark.parametrize(
    "html,lang",
    [
        ('<div class="code-toolbar"><pre>x = 1\ny = 2</pre></div>', ""),
        ('<div class="highlight-source-go"><pre>x := 1\ny := 2</pre></div>', "go"),
        ('<pre class="hljs python">x = 1\ny = 2</pre>', "python"),
        ('<pre><code class="language-rust">let x = 1;\nlet y = 2;</code></pre>', "rust"),
        ('<pre lang="ruby">x = 1\ny = 2</pre>', "ruby"),
        ('<pre class="sourceCode haskell">x = 1\ny = 2</pre>', "haskell"),
    ],
)
def test_code_language_from_class(html: str, lang: str):
    page = "<html><body><article><p>An article with a code sample and enough words around it to count.</p>" \
           + html + "<p>Closing words for the article body, also long enough to be content.</p></article></body></html>"
    assert f"```{lang}\n" in extract_html(page)
