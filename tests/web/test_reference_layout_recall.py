"""API reference that resiliparse's main-content pass drops on small or list-laid-out pages (issue 17):

* javadoc 11+ class-use pages: each use's table sits in ``<ul class="blockList"><li>`` (javadoc 11) or a
  ``ul.block-list`` of summary grids (javadoc 17); the pass drops list items, and the rescue took the densest
  prose run, one table or none. Lists whose items hold a data table or inline code are read again as blocks;
* javadoc's class hierarchies (``package-tree.html``: nested ``<li class="circle">``) likewise;
* a small Haddock module: the pass drops the one signature under ``<h1>Documentation``, which then heads
  nothing; the section under it is put back from the full page when it is that small."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide
from assay.stages.web.extract import _drop_break_hints, _restore_headed_section, extract_html
from assay.stages.web.heuristics import identifier_share

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
JUNIT = "usr/share/doc/junit4/api/org/junit"
LANG3 = "usr/share/doc/libcommons-lang3-java/api/org/apache/commons/lang3"


def _text(debian_doc, package: str, page: str) -> str:
    return extract_html((debian_doc(package) / page).read_text(encoding="utf-8"))


def _class_use(uses: str) -> str:
    return ('<html><body><nav><a href="/">Overview</a> <a href="/p">Package</a></nav><main><div class="header">'
            '<h2 class="title">Uses of Class<br>org.example.Ordering.Context</h2></div><div class="classUseContainer">'
            '<ul class="blockList">' + uses + "</ul></div></main></body></html>")


_USE = ('<li class="blockList"><section><h3>Uses of <a href="../C.html">Context</a> in <a href="../p.html">'
        'org.example.p{i}</a></h3><table class="useSummary"><tr><th>Modifier and Type</th><th>Method</th></tr>'
        '<tr><td><code><a href="../O.html">Ordering</a></code></td><td><code><a href="../A.html#c">create{i}</a>'
        '(<a href="../C.html">Context</a> context)</code></td></tr></table></section></li>')


def test_class_use_tables_in_layout_lists_kept():
    text = extract_html(_class_use("".join(_USE.replace("{i}", str(i)) for i in range(3))))
    for i in range(3):
        assert f"Uses of Context in org.example.p{i}" in text
        assert f"| `Ordering` | `create{i}(Context context)` |" in text
    assert text.startswith("Uses of Class\norg.example.Ordering.Context")
    assert "Overview" not in text


def test_layout_list_reread_only_for_more_text():
    """A list of teaser links with no table, code or hierarchy is left to the main-content pass."""
    teasers = "".join(f'<li><a href="/s{i}">Story {i} headline here</a></li>' for i in range(8))
    story = "<p>" + "The council met on Tuesday and agreed to fund the new bridge over the river. " * 12 + "</p>"
    text = extract_html(f"<html><body><article><h1>Bridge</h1>{story}</article><ul>{teasers}</ul></body></html>")
    assert "fund the new bridge" in text and "Story 3" not in text


def test_headed_section_restored_only_when_small():
    kept = "Conversion of Docx type to a Pandoc document.\n\nDocumentation\n"
    full = "Conversion of Docx type to a Pandoc document.\n\nDocumentation\n\nreadDocx :: ByteString -> m Pandoc\n"
    assert _restore_headed_section(kept, full, "Documentation") == (
        "Conversion of Docx type to a Pandoc document.\n\nDocumentation\n\nreadDocx :: ByteString -> m Pandoc")
    # a heading that is not the kept text's last line, a section over the limit, no title: unchanged
    assert _restore_headed_section(kept + "x", full, "Documentation") == kept + "x"
    assert _restore_headed_section(kept, full + "y" * 400, "Documentation") == kept
    assert _restore_headed_section(kept, full, "") == kept


@pytest.mark.slow
def test_javadoc11_class_use_page_keeps_its_tables(debian_doc):
    text = _text(debian_doc, "junit4-doc", f"{JUNIT}/runner/manipulation/class-use/Ordering.Context.html")
    assert "| org.junit.runner.manipulation | Provides classes to `filter` or `sort` tests. |" in text
    assert "Uses of Ordering.Context in org.junit.runner.manipulation" in text
    assert ("| `Ordering` | Ordering.Factory.`create(Ordering.Context context)` | Creates an Ordering instance "
            "using the given context. |") in text
    assert "Skip navigation links" not in text


@pytest.mark.slow
def test_javadoc17_class_use_page_keeps_its_uses(debian_doc):
    text = _text(debian_doc, "libcommons-lang3-java-doc", f"{LANG3}/mutable/class-use/MutableInt.html")
    assert "Uses of MutableInt in org.apache.commons.lang3.mutable" in text
    # (each use's list item is led by its table's caption: the rows under it are indented)
    text = "\n".join(ln.strip() for ln in text.splitlines())
    assert "MutableInt.`compareTo(MutableInt\xa0other)`\nCompares this mutable to another in ascending order." in text


@pytest.mark.slow
def test_javadoc_package_tree_keeps_its_hierarchy(debian_doc):
    text = _text(debian_doc, "junit4-doc", f"{JUNIT}/runners/package-tree.html")
    assert ("org.junit.runners.ParentRunner<T> (implements org.junit.runner.manipulation.Filterable, "
            "org.junit.runner.manipulation.Orderable)") in text
    assert "org.junit.runners.Suite.SuiteClasses (implements java.lang.annotation.Annotation)" in text
    assert "Skip navigation links" not in text


@pytest.mark.slow
def test_small_haddock_module_keeps_its_signature(debian_doc):
    text = _text(debian_doc, "libghc-pandoc-doc",
                 "usr/share/doc/libghc-pandoc-doc/html/Text-Pandoc-Readers-Docx.html")
    assert text.startswith("Conversion of Docx type (defined in Text.Pandoc.Readers.Docx.Parse) to `Pandoc` document.")
    assert "readDocx :: PandocMonad m => ReaderOptions -> ByteString -> m Pandoc" in text


def test_code_block_inside_a_table_cell_becomes_inline_code():
    """A multi-line ``<code>`` in a table cell is a code block (a placeholder) when the table is read: it used to
    come out as the placeholder's noncharacters; now inline code on one line."""
    rows = "".join(f"<tr><td><code>Failure{i}(String message,\n   String expected)</code></td><td>Constructs failure "
                   f"{i}.</td></tr>" for i in range(3))
    html = f"<html><body><h1>Class Failure</h1><table><tr><th>Constructor</th><th>Description</th></tr>{rows}</table></body></html>"
    text = extract_html(html)
    assert "| `Failure1(String message, String expected)` | Constructs failure 1. |" in text
    assert not any(c in text for c in "\ufdd0\ufdd1\ufdd4")


@pytest.mark.slow
def test_javadoc11_constructor_table_has_no_placeholders(debian_doc):
    text = _text(debian_doc, "junit4-doc", f"{JUNIT}/ComparisonFailure.html")
    assert ("| `ComparisonFailure(java.lang.String message, java.lang.String expected, java.lang.String actual)` | "
            "Constructs a comparison failure. |") in text
    assert not any(c in text for c in "\ufdd0\ufdd1\ufdd4")


def test_javadoc_break_hint_dropped_from_code():
    assert _drop_break_hints("create\u200b(Ordering.Context context)") == "create(Ordering.Context context)"
    assert _drop_break_hints("a\u200bb (x)") == "a\u200bb (x)"  # only the hint before a parameter list
    html = "<html><body><h1>Filter</h1><p>Use <code>intersect\u200b(Filter second)</code> to combine.</p></body></html>"
    assert "`intersect(Filter second)`" in extract_html(html)


@pytest.mark.slow
def test_javadoc11_signatures_count_as_identifiers(debian_doc):
    """junit4's Filter class-use page: a signature per table row, each written ``name&#8203;(args)``; with the hint
    the calls were no identifiers (share 0.14: lang_score dropped the page once its tables were kept)."""
    text = _text(debian_doc, "junit4-doc", f"{JUNIT}/runner/manipulation/class-use/Filter.html")
    assert "\u200b" not in text and "FilterFactory.`createFilter(FilterFactoryParams params)`" in text
    assert identifier_share(text) >= 0.15


@pytest.mark.slow
def test_javadoc17_table_captions_kept(debian_doc):
    """javadoc 17 (libcommons-lang3-java-doc) heads each class-use table with a ``div.caption``: the widget layer's
    "caption" took them; on javadoc's pages they are the headings of the reference and stay."""
    lines = [ln.strip() for ln in _text(debian_doc, "libcommons-lang3-java-doc",
                                        LANG3 + "/reflect/class-use/TypeUtils.WildcardTypeBuilder.html").splitlines()]
    assert "Packages that use TypeUtils.WildcardTypeBuilder" in lines
    assert "Methods in org.apache.commons.lang3.reflect that return TypeUtils.WildcardTypeBuilder" in lines
    assert "TypeUtils.`wildcardType()`" in lines


@pytest.mark.slow
def test_javadoc17_captions_over_link_tables_keep_the_tables(debian_doc):
    """groovy-doc's api/deprecated-list.html (javadoc 17): four captions over summary grids of links, which the
    main-content pass drops; with the captions counted, its nearly empty reading (117 characters) passed the "under
    100 characters" rescue by and lost the tables (1,229 words). Captions and tables both stay."""
    lines = [ln.strip() for ln in _text(debian_doc, "groovy-doc",
                                        "usr/share/doc/groovy/api/deprecated-list.html").splitlines()]
    for caption in ("Deprecated Classes", "Deprecated Fields", "Deprecated Methods"):
        assert caption in lines
    assert "groovy.util.GroovyAssert" in lines and "groovy.sql.Sql.preCheckForNamedParams(String)" in lines


@pytest.mark.slow
def test_javadoc17_caption_restating_its_heading_stays_out(debian_doc, page_signals):
    """On a class page each summary's caption restates the heading above it ("Nested Classes" under "Nested Class
    Summary", "Optional Elements" under "Optional Element Summary"): those stay out, as before; kept, their short
    lines took groovy-doc's TypeChecked.html (and 8 other small class pages) under line_punct and short_lines."""
    page = (debian_doc("groovy-doc") / "usr/share/doc/groovy/api/groovy/transform/TypeChecked.html").read_text(
        encoding="utf-8")
    lines = [ln.strip() for ln in extract_html(page).splitlines()]
    assert "• Nested Class Summary" in lines and "Nested Classes" not in lines and "Optional Elements" not in lines
    assert decide(page_signals(page), {"rules": RULES}).keep


def _captioned(head: str) -> str:
    rows = "".join(f'<div class="col-first"><code>static int</code></div><div class="col-last"><code>'
                   f'<a href="../A.html#m{i}">measure{i}</a>(Context c)</code></div>' for i in range(3))
    return (f'<html><head><title>Uses of Context</title>{head}</head><body><main><h1>Uses of Class Context</h1>'
            f'<div class="caption"><span>Methods in <a href="p.html">org.example</a> with parameters of type '
            f'<a href="C.html">Context</a></span></div><div class="summary-table">{rows}</div>'
            "<p>" + "The measuring methods read the context they are given and return a count of its parts. " * 4
            + "</p></main></body></html>")


def test_table_caption_kept_only_on_javadoc_pages():
    """The same caption with javadoc's generator tag stays; without it (another site's "caption" block: a
    gallery's, a slide's) the widget layer takes it as before."""
    caption = "Methods in org.example with parameters of type Context"
    assert caption in extract_html(_captioned('<meta name="generator" content="javadoc/ClassUseWriter">'))
    other = extract_html(_captioned('<meta name="generator" content="Hugo 0.111">'))
    assert caption not in other and "measure1(Context c)" in other


@pytest.mark.slow
def test_javadoc17_caption_repeating_the_title_name_stays_out(debian_doc, page_signals):
    """On a package-use page, "Classes in p used by p" only repeats the title's package name (twice): it stays out,
    as before the captions were kept; with it, the name four times on a short page took lang3's
    concurrent/package-use.html under dup_9gram. "Packages that use p" and the captions naming another package stay."""
    page = (debian_doc("libcommons-lang3-java-doc") / LANG3 / "concurrent/package-use.html").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in extract_html(page).splitlines()]
    p = "org.apache.commons.lang3.concurrent"
    assert f"Classes in {p} used by {p}" not in lines and f"Packages that use {p}" in lines
    assert "Base class for circuit breakers." in lines
    assert decide(page_signals(page), {"rules": RULES}).keep
    lines = [ln.strip() for ln in _text(debian_doc, "libcommons-lang3-java-doc", LANG3 + "/tuple/package-use.html")
             .splitlines()]
    assert "• Classes in org.apache.commons.lang3.tuple used by org.apache.commons.lang3.builder" in lines
