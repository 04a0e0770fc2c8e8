"""Fixtures shared by the web tests."""

import pytest

TUTORIAL_HTML = """<html><head><title>Sorting</title></head><body>
<nav><a href=/>Home</a> <a href=/a>About</a> <a href=/b>Blog</a> <a href=/c>Contact</a></nav>
<div id="cookie-banner">We use cookies to improve your experience. Accept all cookies?</div>
<article><h1>Sorting in Python</h1>
<p>Python's sorted function is very flexible and this tutorial explains the basics in some detail, with examples below. Use <code>sorted(xs)</code> for a new list.</p>
<pre class="language-python"><code>def f(xs):
    if not xs:
        return []
    return sorted(xs, key=lambda x: -x)
</code></pre>
<p>The expected cost is <math><semantics><mrow><mi>O</mi><mo>(</mo><mi>n</mi><mi>log</mi><mi>n</mi><mo>)</mo></mrow><annotation encoding="application/x-tex">O(n \\log n)</annotation></semantics></math> comparisons and
<math display="block"><mfrac><mn>1</mn><msqrt><mn>2</mn><mi>π</mi></msqrt></mfrac><msup><mi>e</mi><mrow><mo>-</mo><msup><mi>x</mi><mn>2</mn></msup></mrow></msup></math></p>
<p>MathJax: <script type="math/tex">a^2+b^2=c^2</script> and <script type="math/tex; mode=display">\\int_0^1 x\\,dx</script></p>
<p>KaTeX: <span class="katex"><span class="katex-mathml"><math><semantics><mrow><mi>x</mi></mrow><annotation encoding="application/x-tex">\\sqrt{x}</annotation></semantics></math></span><span class="katex-html" aria-hidden="true">√x</span></span> done.</p>
<p>Image: <img src="https://latex.codecogs.com/gif.latex?E=mc^2" alt="E=mc^2"> ok.</p>
<table><tr><th>n</th><th>time</th></tr><tr><td>10</td><td>1 ms</td></tr><tr><td>100</td><td>3 ms</td></tr></table>
<p>More prose text so that the article has enough words to be the main content of this page, naturally.</p>
</article>
<footer>Copyright 2024 Example Inc. All rights reserved. Privacy policy.</footer></body></html>"""


@pytest.fixture(scope="session")
def tutorial_html() -> str:
    return TUTORIAL_HTML


@pytest.fixture(scope="session")
def page_signals():
    """``page_signals(html)``: the stored signals of one page as the default recipe's web steps write them
    (extraction, heuristics, language ID), with its web quality percentile."""
    from datatrove.data import Document

    from assay.stages.web.extract import HtmlExtractor
    from assay.stages.web.heuristics import WebHeuristicSignals
    from assay.stages.web.langid import LanguageId
    from assay.stages.web.quality import quality_percentile, quality_score

    def signals(html: str) -> dict:
        doc = Document(text=html, id="page", metadata={"source": "web", "content_type": "text/html"})
        out = list(LanguageId().run(WebHeuristicSignals().run(HtmlExtractor().run(iter([doc])))))[0]
        m = dict(out.metadata)
        m["quality__web_pct"] = float(quality_percentile(quality_score([out.text]))[0])
        return m

    return signals


@pytest.fixture(scope="module")
def warc_pages(shared_data):
    """The WARC sample pages of ``../shared/data`` (benchmarks/_e2e_corpus.py) by URL, with their split."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import _e2e_corpus

    return {p.url: p for p in _e2e_corpus.warc_sample_pages(shared_data / "warc")}


@pytest.fixture(scope="session")
def gold_corpus_pages(shared_data) -> list[str]:
    """Every page of the three gold corpora under ``../shared/data/html`` (ir_chaos, scrapinghub, readability) as
    text, read once per session: the pages the extraction's shortcut tests compare on."""
    import gzip

    root = shared_data / "html"
    paths = sorted((root / "ir_chaos/html").glob("*.htm*.gz")) + sorted((root / "scrapinghub/html").glob("*.html.gz"))
    pages = [gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace") for p in paths]
    pages += [p.read_text(encoding="utf-8", errors="replace")
              for p in sorted((root / "readability/readability/input").glob("*.html"))]
    if len(pages) < 100:
        pytest.skip("no ir_chaos/scrapinghub/readability pages under ../shared/data/html")
    return pages


@pytest.fixture(scope="session")
def shared_html_pages(shared_data) -> list[str]:
    """The HTML pages of ``../shared/data/html`` that benchmarks/_web_data.py's ``html_pages`` reads (the code
    fidelity set), as text, read once per session."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    pages = [html for _, html in html_pages(shared_data)]
    if not pages:
        pytest.skip("no scrapinghub/readability pages under ../shared/data/html")
    return pages
