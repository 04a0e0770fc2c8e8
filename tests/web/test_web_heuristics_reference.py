"""Reference documentation vs the repetition rules: inline code placeholders, ``ref__*`` signals and
the code-listing exemptions, on real pages of Debian documentation packages (fetched with
``apt-get download`` into the benchmark cache, as benchmarks/bench_e2e.py does; skipped without apt).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from datatrove.data import Document

from assay.stages.decisions.rules import decide
from assay.stages.web.extract import HtmlExtractor
from assay.stages.web.heuristics import (
    WebHeuristicSignals,
    inline_code_word,
    split_prose,
    strip_label_lines,
    web_heuristic_signals,
)
from assay.stages.web.langid import LanguageId
from assay.stages.web.rules import default_web_rules


# ------------------------------------------------------------------------------ inline code defect
def test_inline_code_keeps_its_identity_in_prose():
    # an option list: one inline code span per line (extract.py writes inline code as `...`)
    opts = ["--inspect", "--inspect-brk", "--trace-warnings", "--no-deprecation", "--max-old-space-size",
            "--experimental-vm-modules", "--enable-source-maps", "--preserve-symlinks"]
    text = "Options accepted by the command line are listed below.\n\n" + "\n".join(f"`{o}`" for o in opts)
    prose, counts = split_prose(text)
    assert counts["n_inline_code"] == len(opts)
    placeholder_lines = prose.split("\n")[2:]
    assert len(set(placeholder_lines)) == len(opts)  # was: eight identical "x" lines
    s = web_heuristic_signals(text)
    assert s["prose__gopher__dup_line_frac"] == 0.0
    assert s["prose__fineweb__char_dup_ratio"] == 0.0
    # the same code twice is still the same word: real repetition stays visible
    assert inline_code_word("`--inspect`") == inline_code_word("`--inspect`") != inline_code_word("`--trace`")
    rep = web_heuristic_signals("Intro line that ends here.\n" + "\n".join(["`--inspect`"] * 8))
    assert rep["prose__gopher__dup_line_frac"] > 0.5


def test_reference_signals_equal_prose_signals_on_plain_pages():
    text = ("The river runs through the old town and the bridge is one of the oldest in the country.\n"
            "Visitors come to see it every summer, and many of them stay for the festival.\n") * 3
    s = web_heuristic_signals(text)
    assert s["web__reference_page"] is False
    for k, v in s.items():
        if k.startswith("ref__"):
            assert v == s["prose__" + k[len("ref__"):]], k
    assert s["ref__gopher__dup_line_frac"] > 0.3  # a page that repeats itself is still caught


def test_reference_page_that_repeats_its_sentences_is_still_caught():
    sentence = "This function returns the value that was stored by the previous call to the setter."
    text = ("Intro paragraph about the module and what it offers to the careful reader.\n\n"
            "```python\nimport mod\n" + "mod.get()\n" * 40 + "```\n\n" + "\n\n".join([sentence] * 20))
    s = web_heuristic_signals(text)
    assert s["web__reference_page"] is True
    assert s["ref__gopher__dup_para_frac"] > 0.3 and s["ref__gopher__dup_5gram_char_frac"] > 0.30
    assert decide(dict(s, source="web"), {"rules": default_web_rules()}).reason is not None
    ladder = {"rules": [r for r in default_web_rules() if r["name"].endswith("gram_reference")]}
    assert decide(dict(s, source="web"), ladder).reason == "web_dup_5gram_reference"


def test_strip_label_lines():
    prose = ("Examples\nBasic usage:\nReturns the number of ones.\n• options <Object>\nHistory\nRead-only.\n"
             "New in version 1.3.\nChanged in version 2.0: the default is now the empty list.\nA full sentence is here.")
    assert strip_label_lines(prose) == "Returns the number of ones.\nA full sentence is here."


# ------------------------------------------------------------------------------ real pages
@pytest.fixture(scope="module")
def doc_packages(debian_doc):
    return {name: debian_doc(name) for name in ("nodejs-doc", "python-django-doc")}


def _signals(path: Path) -> dict:
    doc = Document(text=path.read_text(encoding="utf-8", errors="replace"), id=str(path),
                   metadata={"source": "web", "content_type": "text/html"})
    out = list(LanguageId().run(WebHeuristicSignals().run(HtmlExtractor().run(iter([doc])))))
    return out[0].metadata


def _old_inline_placeholder_prose(text: str) -> str:
    """The prose-only text as it was before: every inline code span became ``x``."""
    return re.sub(r"(`+)[^`\n]+?\1", "x", text)


@pytest.mark.slow
@pytest.mark.parametrize("page, fired", [
    # API references: signature labels, "Added in" lines and parameter lists repeat per entry
    ("nodejs-doc/usr/share/doc/nodejs/api/vm.html", "gopher__dup_5gram_char_frac"),
    ("nodejs-doc/usr/share/doc/nodejs/api/stream.html", "gopher__dup_5gram_char_frac"),
])
def test_api_reference_kept(doc_packages, page, fired):
    m = _signals(doc_packages[page.split("/")[0]] / page.split("/", 1)[1])
    assert m["web__reference_page"] is True
    assert m[fired] > 0.15  # Gopher's rule (as FineWeb applies it) fires on a page with no junk
    assert m["ref__" + fired] <= 0.15
    assert decide(m, {"rules": default_web_rules()}).reason is None


@pytest.mark.slow
def test_option_list_kept(doc_packages):
    """Django's settings reference: one setting name (inline code) per heading line. With one ``x``
    per span the prose had hundreds of identical ``x`` lines and the FineWeb duplicate-character
    rule fired; the placeholders now differ, and the label lines are left out of ``ref__``."""
    from assay.stages.web.extract import extract_html
    from assay.stages.web.heuristics import classic_signals

    page = doc_packages["python-django-doc"] / "usr/share/doc/python-django-doc/html/ref/settings.html"
    m = _signals(page)
    assert m["web__n_inline_code"] >= 100
    text = extract_html(page.read_text(encoding="utf-8"))
    old = split_prose(_old_inline_placeholder_prose(text))[0]
    assert [ln.strip() for ln in old.split("\n")].count("x") >= 100  # the defect: identical placeholder lines
    assert classic_signals(old)["fineweb__char_dup_ratio"] > 0.01  # ... and the rule it tripped
    assert m["prose__fineweb__char_dup_ratio"] < classic_signals(old)["fineweb__char_dup_ratio"]
    assert m["ref__fineweb__char_dup_ratio"] <= 0.01
    assert decide(m, {"rules": default_web_rules()}).reason is None


@pytest.mark.slow
def test_table_heavy_page_kept(doc_packages):
    m = _signals(doc_packages["nodejs-doc"] / "usr/share/doc/nodejs/api/os.html")
    assert m["web__table_rows"] >= 100
    assert m["prose__gopher__dup_5gram_char_frac"] > 0.1
    assert m["ref__fineweb__char_dup_ratio"] <= 0.01 and m["ref__gopher__dup_5gram_char_frac"] <= 0.15
    assert decide(m, {"rules": default_web_rules()}).reason is None


@pytest.mark.slow
def test_code_listing_exempt_from_prose_floors(doc_packages):
    """A source listing (Sphinx ``_modules`` page): 99% code, the prose is the navigation around it.
    Its language score is below the floor and its prose has short lines; the code-share exemption
    (``unless web__code_share >= 0.25``) keeps it."""
    m = _signals(doc_packages["python-django-doc"]
                 / "usr/share/doc/python-django-doc/html/_modules/django/utils/text.html")
    assert m["web__code_char_frac"] > 0.9
    assert m["lang__score_margin"] < 0  # the language floor alone would drop it
    assert decide(m, {"rules": default_web_rules()}).reason is None
    # and the exemption is only for code-dense pages
    m2 = dict(m, web__code_share=0.1)
    assert decide(m2, {"rules": default_web_rules()}).reason in {"web_lang_score", "web_short_lines",
                                                                 "web_alpha_words", "web_line_punct",
                                                                 "web_list_ratio"}


def test_unless_exempts_code_listings_only():
    """``unless`` in a rule: the language floor and the prose-shape rules do not apply to code listings."""
    rules = [r for r in default_web_rules() if r["name"] == "lang_score"]
    assert rules and [c["signal"] for c in rules[0]["unless"]] == ["web__code_share", "lang__prose_score_margin",
                                                                   "web__identifier_share", "web__code_char_frac"]
    spec = {"rules": rules}
    low = {"source": "web", "lang__score_margin": -0.3}
    assert decide(dict(low, web__code_share=0.9), spec).reason is None
    assert decide(dict(low, web__code_share=0.1), spec).reason == "web_lang_score"
    assert decide(low, spec).reason == "web_lang_score"  # no code share stored: the rule applies
    # nor where the page's prose alone clears its language's threshold (an API page opening with its index)
    assert decide(dict(low, web__code_share=0.1, lang__prose_score_margin=0.2), spec).reason is None
    assert decide(dict(low, web__code_share=0.1, lang__prose_score_margin=-0.1), spec).reason == "web_lang_score"
    assert decide(dict(low, lang__score_margin=0.2, web__code_share=0.1), spec).reason is None


# ------------------------------------------------------------------------------ code share
def test_code_share_counts_blocks_and_inline_code():
    text = ("Use `fs.readFile(path)` to read and `fs.writeFile(path, data)` to write a file.\n\n"
            "```js\nconst fs = require('fs');\n```\n\nPlain closing sentence of the page.")
    s = web_heuristic_signals(text)
    blocks = len("```js\nconst fs = require('fs');\n```")
    inline = len("`fs.readFile(path)`") + len("`fs.writeFile(path, data)`")
    assert s["web__code_char_frac"] == round(blocks / len(text), 6)
    assert s["web__code_share"] == round((blocks + inline) / len(text), 6)
    assert web_heuristic_signals("A page of prose only. It has no code at all.")["web__code_share"] == 0.0


def _recipe_rules() -> list[dict]:
    import yaml

    root = Path(__file__).resolve().parents[2]
    return yaml.safe_load((root / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]


def test_char_dup_and_short_lines_judge_prose_not_reference_pages():
    """FineWeb's character duplication (0.01) and short-line share apply to prose pages, not to reference pages
    (code, inline code spans or table rows), which Gopher's duplicate-line rules still bound."""
    spec = {"rules": default_web_rules()}
    m = {"source": "web", "ref__fineweb__char_dup_ratio": 0.013}
    assert decide(dict(m, web__reference_page=False), spec).reason == "web_char_dup"
    assert decide(m, spec).reason == "web_char_dup"  # no flag stored: the rule applies
    assert decide(dict(m, web__reference_page=True, ref__fineweb__char_dup_ratio=0.15), spec).reason is None
    short = {"source": "web", "prose__fineweb__short_line_ratio": 0.75}
    assert decide(dict(short, web__reference_page=False), spec).reason == "web_short_lines"
    assert decide(dict(short, web__reference_page=True), spec).reason is None
    dup = {"source": "web", "web__reference_page": True, "ref__gopher__dup_line_char_frac": 0.3}
    assert decide(dup, spec).reason == "web_dup_line_char_frac"


@pytest.fixture(scope="module")
def glib_doc(debian_doc):
    return debian_doc("libglib2.0-doc") / "usr/share/gtk-doc/html"


@pytest.mark.slow
@pytest.mark.parametrize("page, fired", [("glib/glib-Byte-Arrays.html", "web_short_lines"),
                                         ("gio/GTlsPassword.html", "web_char_dup")])
def test_gtk_doc_reference_pages_kept(glib_doc, page, fired):
    """gtk-doc API pages (libglib2.0-doc; not a bench_e2e package): labels and function names make most prose
    lines short (code share 0.24, under the 0.25 of the code-listing exemption), and two setters share a
    parameter sentence (one duplicated line, 13% of a short page, over the 0.02 the rules gave pages with code).
    The rule that dropped each judges prose; read as a prose page, it still fires."""
    m = _signals(glib_doc / page)
    assert m["web__reference_page"]
    assert decide(m, {"rules": default_web_rules()}).reason is None
    rule = {"rules": [r for r in default_web_rules() if f"web_{r['name']}" == fired]}
    assert decide(m, rule).reason is None
    assert decide(dict(m, web__reference_page=False), rule).reason == fired


def test_quality_floor_does_not_judge_code_pages():
    """The default recipe's web quality floor (a prose-trained order) does not apply to pages whose
    code share (blocks + inline code) is at least 0.05; on prose pages it still does."""
    rules = [r for r in _recipe_rules() if r["name"] == "web_quality_floor"]
    assert rules and rules[0]["unless"][0] == {"signal": "web__code_share", "op": ">=", "value": 0.05}
    spec = {"rules": rules}
    low = {"source": "web", "quality__web_pct": 0.001, "web__identifier_share": 0.0}
    assert decide(dict(low, web__code_share=0.2), spec).reason is None
    assert decide(dict(low, web__code_share=0.01), spec).reason == "web_web_quality_floor"
    assert decide(dict(low, quality__web_pct=0.5, web__code_share=0.01), spec).reason is None


def test_recipe_web_rules_match_the_web_family_rules():
    """pipeline/recipes/default.yaml carries stages/web/default_rules.yaml's rules unchanged."""
    by_name = {r["name"]: r for r in _recipe_rules()}
    for r in default_web_rules():
        assert by_name.get(r["name"]) == r, r["name"]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["fs.html", "http2.html", "cli.html"])
def test_api_pages_with_sync_and_async_variants_kept(doc_packages, page):
    """Node's fs/http2/cli references describe each function in its sync, callback and promise
    variants (or each option for the CLI and the environment), so some sentences repeat by design:
    FineWeb's character duplication over 0.01 on the reference-aware prose. FineWeb's rule judges prose, not
    reference pages, and the page is kept."""
    m = _signals(doc_packages["nodejs-doc"] / "usr/share/doc/nodejs/api" / page)
    assert 0.01 < m["ref__fineweb__char_dup_ratio"] <= 0.02
    assert m["web__reference_page"]
    assert decide(m, {"rules": default_web_rules()}).reason is None
    assert decide(dict(m, web__reference_page=False), {"rules": default_web_rules()}).reason == "web_char_dup"


@pytest.fixture(scope="module")
def rust_doc(debian_doc):
    return debian_doc("rust-doc") / "usr/share/doc/rust-doc/html"


@pytest.mark.slow
@pytest.mark.parametrize("page", ["core/arch/x86_64/constant._MM_PERM_DDDA.html",
                                  "core/arch/aarch64/fn.vshlq_n_u8.html"])
def test_short_api_entries_kept(rust_doc, page):
    """One intrinsic or constant per page: a signature, a sentence, a link: 20 to 50 words, most of
    them code. The word floor is 50 on prose pages and 20 on code-dense ones (code share >= 0.25, or a code block
    of 5% of the page)."""
    m = _signals(rust_doc / page)
    assert 20 <= m["gopher__n_words"] < 50 and m["web__code_share"] >= 0.25
    assert decide(m, {"rules": default_web_rules()}).reason is None
    assert decide(dict(m, web__code_share=0.1, web__code_char_frac=0.0),
                  {"rules": default_web_rules()}).reason == "web_min_words"
    assert decide(dict(m, gopher__n_words=12), {"rules": default_web_rules()}).reason == "web_min_words_code"


@pytest.mark.slow
def test_hyperlinked_source_pages_kept(debian_doc):
    """Haddock's hyperlinked module sources (ghc-doc; not a bench_e2e package) are one ``<pre>`` of code with
    no prose, whose prose mean word length is therefore 0: the Gopher word-length floor, which judges prose,
    dropped 3,236 of the 3,416 ``<pre>`` lines of 45 sampled ghc-doc pages. It does not apply to pages with a
    code share of at least 0.25; on prose it still fires."""
    src = debian_doc("ghc-doc") / "usr/share/doc/ghc-doc/html/libraries/ghc-9.0.2/src/GHC-Types-Unique.html"
    m = _signals(src)
    assert m["web__code_share"] >= 0.25 and m["prose__gopher__mean_word_length"] < 3
    assert decide(m, {"rules": default_web_rules()}).reason is None
    floor = {"rules": [r for r in default_web_rules() if r["name"] == "mean_word_length_min"]}
    assert decide(m, floor).reason is None
    assert decide(dict(m, web__code_share=0.0), floor).reason == "web_mean_word_length_min"


@pytest.mark.slow
@pytest.mark.parametrize("package, page, as_prose", [
    ("scala-doc", "usr/share/doc/scala-2.11/api/library/scala/collection/mutable/MutableList.html", "web_dup_5gram"),
    # its signatures are code blocks (dt.sig-object): half the page, so its reference measure (over the whole page)
    # is 0.11; read as prose FineWeb's character duplication fires first
    ("python-lxml-doc", "usr/share/doc/python-lxml/html/apidoc/lxml.etree.html", "web_char_dup"),
])
def test_reference_pages_may_repeat_twice_what_prose_may(debian_doc, package, page, as_prose):
    """Scaladoc and Sphinx autodoc pages (not bench_e2e packages) repeat their members' phrases by design
    (aliased and inherited members, "This member is added by an implicit conversion from ..."): duplicated
    5-grams of their prose over Gopher's 0.15, the reference measure under the 0.30 of the reference ladder. Read as
    prose, the page is dropped."""
    m = _signals(debian_doc(package) / page)
    assert m["web__reference_page"] and 0.15 < m["prose__gopher__dup_5gram_char_frac"]
    assert m["ref__gopher__dup_5gram_char_frac"] <= 0.30
    assert decide(m, {"rules": default_web_rules()}).reason is None
    # read as prose: neither a reference page nor names in tables (web__identifier_share, which exempts as well)
    prose = dict(m, web__reference_page=False, web__identifier_share=0.0)
    assert decide(prose, {"rules": default_web_rules()}).reason == as_prose
