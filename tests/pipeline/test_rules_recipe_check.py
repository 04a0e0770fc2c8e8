"""A recipe is checked against the signals its steps declare when it is loaded: one line, rule and line."""

from __future__ import annotations

import pytest

from assay.pipeline.recipe import RECIPES_DIR, RecipeError, load_recipe
from assay.pipeline.registry import REGISTRY, decision_problems, output_signal_schema, store_schema


def _recipe(tmp_path, rule: str, extra: str = "") -> str:
    text = (RECIPES_DIR / "default.yaml").read_text()
    anchor = "  rules:\n"
    p = tmp_path / "r.yaml"
    p.write_text(text.replace(anchor, anchor + f"    {rule}\n", 1) + extra)
    return str(p)


def _line_of(path: str, needle: str) -> int:
    return next(i for i, line in enumerate(open(path).read().splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    "rule, words",
    [
        ("- {name: typo, source: web, signal: prose__gopher__n_wrds, op: '>=', value: 50}",
         ["rule typo", "unknown signal 'prose__gopher__n_wrds'"]),
        ("- {name: typo, source: web, signal: prose__gopher__n_words, op: '>=', value: fifty}",
         ["rule typo", "needs a number", "'fifty'"]),
        ("- {name: typo, source: web, signal: prose__gopher__n_words, op: is_true}",
         ["rule typo", "needs a bool signal", "is int"]),
        ("- {name: typo, source: web, signal: lang__code, op: '>=', value: 3}",
         ["rule typo", "needs a numeric signal", "is str"]),
        ("- {name: typo, source: web, signal: lang__code, op: in, value: [1, 2]}",
         ["rule typo", "value 1 does not fit 'lang__code' (str)"]),
        ("- {name: typo, source: code, signal: prose__gopher__n_words, op: '>=', value: 3}",
         ["rule typo", "unknown signal"]),  # a web signal on a code rule
    ],
)
def test_a_bad_rule_is_one_line_naming_the_rule_and_its_line(tmp_path, rule, words):
    path = _recipe(tmp_path, rule)
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 300, msg
    assert msg.startswith(f"{path}:{_line_of(path, 'name: typo')}:"), msg
    for w in words:
        assert w in msg, msg


def test_ensemble_and_rebalance_names_are_checked(tmp_path):
    with pytest.raises(RecipeError, match="ensemble web: 'fasttext_wbe__pct' is unknown signal"):
        load_recipe(None, ["decisions.ensemble.web={fasttext_wbe__pct: 1.0}"])
    with pytest.raises(RecipeError, match="rebalance: unknown key signal 'code__langauge'"):
        load_recipe("code", ["decisions.rebalance.key=code__langauge"])
    with pytest.raises(RecipeError, match="unit"):
        load_recipe("code", ["decisions.rebalance.unit=byts"])


def test_shipped_recipes_load_and_family_patterns_expand():
    for name in ("default", "code", "pdf"):
        r = load_recipe(name)
        assert decision_problems(r) == []
    r = load_recipe(None, ["common_steps.quality_scores_v1.params.models=[web, stem, code, code_corruption, pdf, my_model.ftz]"])
    schema = store_schema(r)
    assert schema["fasttext_my_model__pct"] == "float" and schema["fasttext_web__score"] == "float"
    assert output_signal_schema(r)["dedup__is_duplicate"] == "bool"
    # a rule on a family member that the recipe's parameters do not produce is unknown
    with pytest.raises(RecipeError, match=r"rule fasttext_code_floor: unknown signal 'fasttext_code__score'.*more"):
        load_recipe(None, ["common_steps.quality_scores_v1.params.models=[web]"])


def test_every_kind_declares_typed_signals():
    for kind in REGISTRY.values():
        assert kind.signals, kind.name
        assert set(kind.signals.values()) <= {"bool", "int", "float", "str"}, kind.name


def test_unless_condition_is_checked_at_load_and_applies():
    """A rule's `unless` names a declared signal of the right type, checked before work; where it holds the
    rule does not apply (issue 17: prose floors exempt code listings)."""
    import polars as pl

    from assay.stages.decisions.rules import decide_frame

    with pytest.raises(RecipeError, match=r"unless.*unknown signal 'web__code_char_fracc'"):
        load_recipe(None, ["decisions.rules.mean_word_length_min.unless.signal=web__code_char_fracc"])
    spec = {"rules": [{"name": "line_punct", "source": "web", "signal": "p", "op": ">=", "value": 0.5,
                       "unless": {"signal": "code", "op": ">=", "value": 0.25}}], "code_rules": None}
    df = pl.DataFrame({"id": ["a", "b", "c"], "source": ["web"] * 3, "p": [0.1, 0.1, 0.9], "code": [0.5, 0.0, 0.0]})
    out = decide_frame(df, spec)
    assert out["reason"].to_list() == [None, "web_line_punct", None]
