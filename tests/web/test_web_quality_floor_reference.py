"""The default recipe's web quality floor and API reference whose names sit in tables.

The floor (``quality__web_pct >= 0.02``) judges prose: the quality order is trained on prose and ranks API
reference at the bottom. It did not apply to pages with code (``web__code_share >= 0.05``), but Doxygen member
listings and class pages, gtk-doc enumerations and Javadoc package summaries carry their names in table cells,
not in code blocks or inline code: a code share near 0. They are recognised by ``web__identifier_share`` (calls,
``a::b``, dotted paths, snake_case and camelCase over the page's characters). Real pages of Debian documentation
packages (fetched with ``apt-get download`` into the benchmark cache, as benchmarks/bench_e2e.py does; skipped
without apt) and general-web pages of the WARC samples in ``../shared/data`` (train split).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.stages.decisions.rules import decide
from assay.stages.web.heuristics import identifier_share

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
FLOOR = next(r for r in RULES if r["name"] == "web_quality_floor")
# the floor as it was (cd2564c): exempt only pages with a code share of 0.05 or more
OLD_FLOOR = dict(FLOOR, unless={"signal": "web__code_share", "op": ">=", "value": 0.05})


def _floor_reason(m: dict, rule: dict) -> str | None:
    return decide(m, {"rules": [rule]}).reason


def test_floor_exempts_code_and_identifier_dense_pages():
    assert FLOOR["unless"] == [{"signal": "web__code_share", "op": ">=", "value": 0.05},
                               {"signal": "web__identifier_share", "op": ">=", "value": 0.10}]
    low = {"source": "web", "quality__web_pct": 0.001, "web__code_share": 0.0}
    assert _floor_reason(dict(low, web__identifier_share=0.3), FLOOR) is None
    assert _floor_reason(dict(low, web__identifier_share=0.3), OLD_FLOOR) == "web_web_quality_floor"
    assert _floor_reason(dict(low, web__identifier_share=0.05), FLOOR) == "web_web_quality_floor"
    assert _floor_reason(low, FLOOR) == "web_web_quality_floor"  # no share stored: the floor applies


def test_identifier_share_counts_api_names_not_brands_or_hosts():
    api = "| wxWindow * | GetParent () const |\n| void | SetSize(int w, int h) |\nstd::string size_t org.apache.commons"
    found = sum(map(len, ["wxWindow", "GetParent ()", "SetSize(", "std::string", "size_t", "org.apache.commons"]))
    assert identifier_share(api) == round(found / len(api), 6)
    # brand and user names (PascalCase), host names, a parenthesised aside: not identifiers
    prose = "VeriSign and GratefulDead fans met at www.archive.org and example.com (see below) on Friday."
    assert identifier_share(prose) == 0.0
    assert identifier_share("") == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("package, page", [
    # Doxygen (wxWidgets' reference, doxygen's own examples): a member listing, one table row per member,
    # "Name(args) | class | virtual"; class pages: member tables, then each member's signature table and a paragraph
    ("wx3.2-doc", "usr/share/doc/wx3.2-doc/html/classwx_dialog-members.html"),
    ("wx3.2-doc", "usr/share/doc/wx3.2-doc/html/classwx_bitmap_button.html"),
    ("doxygen-doc", "usr/share/doc/doxygen/html/examples/autolink/html/class_autolink___test.html"),
    # gtk-doc (GTK 3's standard enumerations): each enumeration's values and their meaning in a table
    ("libgtk-3-doc", "usr/share/gtk-doc/html/gtk3/gtk3-Standard-Enumerations.html"),
])
def test_table_reference_kept(debian_doc, page_signals, package, page):
    """Signatures and names in table cells, a code share of 0 or near it, a web percentile under the floor.
    The old floor dropped the page; it passes every rule now."""
    m = page_signals((debian_doc(package) / page).read_text(encoding="utf-8", errors="replace"))
    assert m["quality__web_pct"] < 0.02 and m["web__code_share"] < 0.05
    assert m["web__identifier_share"] >= 0.10
    assert _floor_reason(m, OLD_FLOOR) == "web_web_quality_floor"
    assert decide(m, {"rules": RULES}).reason is None


@pytest.mark.slow
def test_javadoc_package_summary_kept(debian_doc, page_signals):
    """Javadoc (commons-lang3): class pages carry their signatures in ``<pre>`` (code share >= 0.05: exempt
    already); a package summary is a table of class names and one-line descriptions with no code. The order
    ranks this one just over the floor (about 0.04); at a percentile under it (other Javadoc sets), the old
    floor dropped such a page and the identifier share now keeps it."""
    pkg = debian_doc("libcommons-lang3-java-doc")
    page = pkg / "usr/share/doc/libcommons-lang3-java/api/org/apache/commons/lang3/text/translate/package-summary.html"
    m = page_signals(page.read_text(encoding="utf-8", errors="replace"))
    assert m["web__code_share"] < 0.05 and m["web__identifier_share"] >= 0.10
    low = dict(m, quality__web_pct=0.005)
    assert _floor_reason(low, OLD_FLOOR) == "web_web_quality_floor"
    assert decide(low, {"rules": RULES}).reason is None


@pytest.mark.slow
@pytest.mark.parametrize("url", ["http://www.archive.org/index.php", "http://www.archive.org/details/JTRNET15"])
def test_general_web_navigation_still_excluded(warc_pages, page_signals, url):
    """archive.org's front page and a media details page (WARC samples, train split): link lists and tables
    (``web__reference_page``: 5+ table rows), user and collection names (GratefulDead, JTRNET15_vbr_mp3): the
    general-web pages with the most identifier-like names among those the floor alone excludes (under 0.10)."""
    if url not in warc_pages:
        pytest.skip(f"{url} is not among the WARC samples of ../shared/data")
    page = warc_pages[url]
    assert page.split == "train"
    m = page_signals(page.body.decode("utf-8", errors="replace"))
    assert m["web__reference_page"]  # a floor exempting reference pages would keep it
    assert m["quality__web_pct"] < 0.02 and m["web__code_share"] < 0.05 and m["web__identifier_share"] < 0.10
    assert decide(m, {"rules": RULES}).reason == "web_web_quality_floor"
