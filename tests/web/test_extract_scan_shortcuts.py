"""Cheaper page scans give what the plain definitions give, on every page of ../shared/data/html (ir_chaos,
scrapinghub, readability) and on edge cases: ``_math_markup`` and ``_from_body`` with a regex search for their
literal (``_MATH_WORD_RE``, ``_BODY_OPEN_RE``) equal their ``str.find`` definitions; the walk's password fields
(every ``<input>``, tested by ``_is_password_input``) equal lexbor's ``input[type="password" i]``, the walk's formula
image candidates (``_IMG_MATH_SELECTOR``) are the ``img[alt]`` that ``_img_math_candidate`` takes, and the walk's
other lists equal those of the selector that asked for the password fields itself; ``_restore``'s line prefilters
(``_may_be_credit_line``: five ``in`` tests, ``_lower_folds_like_re``) answer as their former regex/``any``
definitions."""

from __future__ import annotations

import random
import re

import pytest

from assay.stages.web import extract as X



def _math_markup_by_find(html: str) -> set[str]:
    """``_math_markup`` as defined before the regex: one ``str.find`` per occurrence of "math"."""
    found: set[str] = set()
    i = html.find("math")
    n = 0
    while i != -1:
        n += 1
        if n > X._MATH_SCAN_MAX:
            return {"math/", "katex", "mjx-container", "mwe-math", "<math"}
        if html.startswith("math/", i):
            found.add("math/")
        pre = html[max(0, i - 6):i]
        if pre.endswith("<") or pre.endswith(":"):
            found.add("<math")
        elif pre.endswith("mwe-"):
            found.add("mwe-math")
        elif pre.endswith("katex-"):
            found.add("katex")
        i = html.find("math", i + 4)
    if "<math" in found and "mjx-container" in html:
        found.add("mjx-container")
    if "<math" in found and "katex" not in found and "katex" in html:
        found.add("katex")
    return found


def _from_body_by_find(html: str) -> str:
    """``_from_body`` as defined before the regex (``str.find`` for "<body")."""
    i = html.find("<body")
    if i <= 0 or html[i + 5:i + 6] not in (">", " ", "\t", "\n", "\r", "/"):
        return html
    for opener, closer in (("<script", "</script"), ("<!--", "-->")):
        j = html.rfind(opener, 0, i)
        if j != -1 and html.find(closer, j, i) == -1:
            return html
    return html[i:]


_EDGE = ["", "math", "mathmath", "mmath", "<math", "<m:math>", "x<mathmath/", "katex-mathml", "mwe-math-element",
         "<script type='math/tex'>", "<math>" + "math " * (X._MATH_SCAN_MAX + 3), "math " * X._MATH_SCAN_MAX + "<math",
         "<math> mjx-container", "<math> katex", "\u201c<math>\u201d", "\U0001f600 mwe-math <math",
         "<body>", "x<body>", "<head></head><body class=x>", "<body", "<bodyx>", "<body\n>", "a<BODY>", "<b<body>",
         "<script>document.write('<body>')</script><body>", "<!-- <body> --><body>", "<!-- x --><body>",
         "<html><head>\u00e9</head><body>x</body><body>y"]


def test_math_markup_and_from_body_equal_their_find_definitions(gold_corpus_pages):
    pages = gold_corpus_pages
    n_math = n_body = 0
    for page in pages + _EDGE:
        got = X._math_markup(page)
        assert got == _math_markup_by_find(page)
        n_math += bool(got)
        body = X._from_body(page)
        assert body == _from_body_by_find(page)
        n_body += body is not page
    assert n_math >= 10 and n_body >= 300, (n_math, n_body)  # the comparison saw both outcomes often
    rng = random.Random(7)
    alphabet = ["math", "<", "body", ">", "/", " ", ":", "mwe-", "katex-", "\u00e9", "\u4e00", "mjx-container",
                "script", "!--", "-->"]
    for _ in range(20_000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
        assert X._math_markup(s) == _math_markup_by_find(s), s
        assert X._from_body(s) == _from_body_by_find(s), s


_OLD_WALK = 'pre, code, kbd, samp, tt, table, img[alt], figcaption, input[type="password" i]'


def _walk_lists(html: str):
    """The rewriter's walk and the lists of the former selector (password fields asked of lexbor; every image with
    alt text, kept when ``_img_math_candidate`` takes it, as ``math`` did), as node lists."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    rw = X._Rewriter(tree, html)
    got = rw._walk()
    pres, inline, tables, imgs, caps, pwd = [], [], [], [], [], []
    for el in tree.document.query_selector_all(_OLD_WALK).values():
        tag = el.tag
        (pres if tag == "pre" else tables if tag == "table" else imgs if tag == "img"
         else caps if tag == "figcaption" else pwd if tag == "input" else inline).append(el)
    imgs = [e for e in imgs if X._img_math_candidate(e.getattr("src") or "", e.getattr("class") or "", e.getattr("alt"))]
    return got, (pres, inline, tables, imgs, caps, pwd)


@pytest.mark.parametrize("img,candidate", [
    ('<img alt="\\frac{a}{b}" src="x.png">', True), ('<img alt="x^{2}">', True), ('<img alt="a_{i}">', True),
    ('<img alt="x^2" src="https://latex.codecogs.com/gif.latex?x^2">', True), ('<img alt="x" src="/CodeCogs/eq.png">', True),
    ('<img alt="x" src="/TEX/a.png">', True), ('<img alt="x" src="/Math/a.png">', True), ('<img alt="x" src="/mathx/a">', False),
    ('<img alt="x" src="/a/MATH/b.png">', True), ('<img alt="x" src="chart?CHT=TX&chl=x">', True),
    ('<img alt="x" src="Equation1.gif">', True), ('<img alt="x" class="MathJax">', True), ('<img alt="x" class="TeX">', True),
    ('<img alt="x" class="text-center">', True), ('<img alt="x" class="Formula">', True), ('<img alt="x" class="equ">', False),
    ('<img alt="x" class="\u212aex">', False), ('<img alt="x" src="/equ\u0130tion.png">', False),
    ('<img alt="photo" src="/img/a.jpg" class="wp-image">', False), ('<img alt="" src="/tex.png">', True),
    ('<img src="/tex.png">', False), ('<img alt="\\" src="a.jpg">', True), ('<IMG ALT="x" SRC="/Tex.png">', True),
    ("<img alt='x' src='/latex?x'>", True), ('<img alt="x" src="/l&#97;tex.png">', True), ('<image alt="x" src="/tex">', True)])
def test_formula_image_candidates_are_those_math_took(img, candidate):
    got, want = _walk_lists(f"<html><body><p>{img}</p><img alt=photo src=a.jpg></body></html>")
    assert got == want
    assert len(got[3]) == int(candidate)


@pytest.mark.parametrize("inp,is_pwd", [
    ('<input type="password">', True), ('<INPUT TYPE="PassWord">', True), ("<input type=password>", True),
    ("<input type='PASSWORD' name=p>", True), ('<input type="&#112;assword">', True), ('<input type="password ">', False),
    ('<input type=" password">', False), ('<input type="pass">', False), ('<input type="p\u0430ssword">', False),
    ('<input type="passwords">', False), ("<input>", False), ("<input type>", False), ('<input name="password">', False),
    ('<input type="\u212aey"><input type="password" type="text">', True), ('<input type="text" type="password">', False)])
def test_password_fields_are_the_inputs_lexbor_selects(inp, is_pwd):
    got, want = _walk_lists(f"<html><body><form>{inp}<pre>x</pre><img alt=a><code>c</code></form></body></html>")
    assert [len(x) for x in got] == [len(x) for x in want]
    assert got == want
    assert bool(got[5]) == is_pwd


def test_walk_lists_equal_those_of_the_former_selector(gold_corpus_pages):
    n_pwd = n_inputs = 0
    for page in gold_corpus_pages:
        text = X._drop_scripts(X._from_body(page))
        got, want = _walk_lists(text)
        assert got == want
        n_pwd += len(got[5])
        n_inputs += text.count("<input")
    assert n_pwd >= 5 and n_inputs >= 10 * n_pwd, (n_pwd, n_inputs)  # password fields and many other inputs seen


def test_whitespace_only_pages_extract_to_nothing():
    for s in (" ", "\n\n", "\u3000\t\r\n", "\u00a0", "\x1c\x1d\x1e\x1f\x85\u2028"):
        assert not s.strip() and s.isspace()
        assert X.extract_html_detailed(s) == ("", dict(X._EMPTY_STATS))
    for c in map(chr, range(0x110000)):  # the test that replaced ``not text.strip()`` says the same of every character
        assert c.isspace() == (not c.strip())


def test_head_read_in_place_equals_head_copy(gold_corpus_pages):
    """``_head_titles`` and ``_head_descriptions`` read up to ``end`` in the whole page give what they give on the
    head copied out (``page[:end]``, as before): on every page, at its ``<body`` and at cuts through a title or a
    meta tag, where a copy ends the tag and the bound must too."""
    pages = gold_corpus_pages
    edge = ('<html><head><title>A long headline | Site</title><meta property="og:title" content="A long headline">'
            '<meta name="description" content="Three words here and more"><meta name="twitter:title" content="Tw t t">'
            '</head><body><h1>x</h1></body></html>')
    cuts = []
    for page in pages + [edge]:
        body = X._from_body(page)
        end = len(page) - len(body) if body is not page else min(len(page), 100_000)
        cuts.append((page, end))
        for key in ("<title", "og:title", "description"):
            i = page.find(key, 0, end)
            if i >= 0:
                cuts += [(page, i + d) for d in (3, len(key), len(key) + 12, len(key) + 40)]
    for page, end in cuts:
        assert X._head_titles(page, end) == X._head_titles(page[:end])
        assert X._head_descriptions(page, end) == X._head_descriptions(page[:end])


def test_drop_scripts_from_body_start_equals_drop_scripts_of_body_copy(gold_corpus_pages):
    """``_drop_scripts(page, _body_start(page))`` reads the body in place and gives what ``_drop_scripts`` gives on
    the body copied out (``_from_body``), on every page and on pages without a body tag, scripts or both."""
    edge = ["<p>no body, no scripts</p>", "<script>x</script><p>no body</p>",
            "<html><head><script>a</script></head><body><p>b</p></body></html>",
            "<html><head></head><body class=x><p>no scripts</p></body></html>",
            '<head><script>document.write("<body>")</script></head><body><script>y</script><p>z</p>']
    for page in gold_corpus_pages + edge:
        start = X._body_start(page)
        assert page[start:] == X._from_body(page)
        assert X._drop_scripts(page, start) == X._drop_scripts(X._from_body(page))


_CREDIT_KEYS_RE = re.compile("via|Via|owered by|eatured image|iled in")  # the former prefilter


@pytest.mark.parametrize("line", [
    "via GSM Arena", "(via Gizmodo)", "Conversation powered by Livefyre", "Featured image from Shutterstock.",
    "Filed in . Read more about E3", "VIA REUTERS", "trivial", "", "obvias", "Powered By X", "\u0130stanbul via x",
    "Featured Image by X", "profiled in", "\u017f via", "a" * 130 + " via"])
def test_credit_line_prefilter_equals_the_former_regex(line):
    assert X._may_be_credit_line(line) == bool(_CREDIT_KEYS_RE.search(line))


@pytest.mark.parametrize("line", ["plain ascii", "caf\u00e9", "\u0130stanbul", "\u0131", "lo\u017fe", "K\u212a", "", "\u00e9\u0130"])
def test_fold_check_equals_its_definition(line):
    assert X._lower_folds_like_re(line) == (line.isascii() or not any(c in line for c in X._FOLD_ONLY_CHARS))


def test_line_prefilters_equal_their_definitions_on_extracted_lines(gold_corpus_pages):
    """The credit-line and case-fold prefilters of ``_restore`` answer as their former definitions on every line
    the main-content pass gives on the gold pages (a seeded sample of 150 pages)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    pages = random.Random(7).sample(gold_corpus_pages, 150)
    n = 0
    for html in pages:
        for line in extract_plain_text(HTMLTree.parse(html), main_content=True).split("\n"):
            key = line.strip()
            n += 1
            assert X._may_be_credit_line(key) == bool(_CREDIT_KEYS_RE.search(key)), key
            assert X._lower_folds_like_re(key) == (key.isascii() or not any(c in key for c in X._FOLD_ONLY_CHARS)), key
    assert n > 5000
