"""``lang__prose_score_margin`` and the default ``lang_score`` rule that reads it (issue 17, set M).

The language prediction reads a page's first 20,000 characters. A long API reference opens with its index:
gnutls-doc's gnutls-gnutls.html (1,949 <pre> lines) opens with a table of return types and function names,
scored English at 0.30 (margin -0.35), and was dropped by ``web_lang_score`` while its prose scores 0.86.
"""
from __future__ import annotations

import polars as pl
import pytest
from datatrove.data import Document

from assay.pipeline.recipe import RecipeError, load_recipe
from assay.stages.decisions.rules import decide_frame
from assay.stages.web.extract import extract_html
from assay.stages.web.langid import LanguageId

_PROSE = ("The committee published its annual report on public health and education spending yesterday, "
          "and the minister said the figures would be discussed in parliament next week. ")
# an index table of identifiers (what opens a gtk-doc API page), then the page's prose
_INDEX = "\n".join(f"| gnutls_session_t | gnutls_record_{i}_get_direction () |" for i in range(200))
_INDEXED = "Functions\n\n| return | name |\n|---|---|\n" + _INDEX + "\n\nDescription\n\n" + _PROSE * 3


def _meta(text: str) -> dict:
    return next(iter(LanguageId().run(iter([Document(text=text, id="x", metadata={"source": "web"})])))).metadata


def test_prose_margin_where_the_opening_index_fails():
    m = _meta(_INDEXED)
    assert m["lang__score_margin"] < 0
    assert m["lang__prose_score_margin"] is not None and m["lang__prose_score_margin"] >= 0


def test_prose_margin_not_computed_where_it_cannot_matter():
    assert _meta(_PROSE * 2)["lang__prose_score_margin"] is None  # margin passes
    assert _meta("xq zv kk pp " * 20)["lang__prose_score_margin"] is None  # fails, but no code nor tables
    m = _meta(_PROSE + "\n\n```\nx = 1\n```\n")  # code, margin passes
    assert m["lang__score_margin"] >= 0 and m["lang__prose_score_margin"] is None


def _lang_rule():
    spec = load_recipe(None).decisions
    return {"rules": [r.model_dump() for r in spec.rules if r.name == "lang_score"], "code_rules": None}


def test_default_lang_rule_exempts_code_dense_pages_and_passing_prose():
    spec = _lang_rule()
    df = pl.DataFrame({"id": ["prose_ok", "code_dense", "neither", "plain"], "source": ["web"] * 4,
                       "lang__score_margin": [-0.3, -0.3, -0.3, -0.1],
                       "web__code_share": [0.1, 0.3, 0.1, 0.0],
                       "lang__prose_score_margin": [0.2, None, -0.05, None]})
    assert decide_frame(df, spec)["reason"].to_list() == [None, None, "web_lang_score", "web_lang_score"]


def test_unless_list_conditions_checked_at_load():
    with pytest.raises(RecipeError, match=r"unless.*unknown signal 'lang__prose_score_margn'"):
        load_recipe(None, ["decisions.rules.lang_score.unless=[{signal: web__code_share, op: '>=', value: 0.25}, "
                           "{signal: lang__prose_score_margn, op: '>=', value: 0.0}]"])


def test_api_reference_opening_with_its_index_kept_real_page(debian_doc):
    html = (debian_doc("gnutls-doc") / "usr/share/doc/gnutls-doc/api-reference/gnutls-gnutls.html").read_bytes()
    m = _meta(extract_html(html))
    assert m["lang__code"] == "en" and m["lang__score_margin"] < 0
    assert m["lang__prose_score_margin"] >= 0.1
