"""`--set` as people tune: list items by name, values from files, errors that name the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.pipeline.recipe import RecipeError, load_recipe, parse_override, resolve_recipe_path, set_override


def test_list_items_by_name_or_index():
    data = {"decisions": {"rules": [{"name": "a", "value": 1}, {"name": "min_words", "value": 50}],
                          "tiers": [{"name": "high", "min_bucket": 15}]}}
    assert set_override(data, "decisions.rules.min_words.value", 200) == ("decisions", "rules", 1, "value")
    assert set_override(data, "decisions.tiers.0.min_bucket", 16) == ("decisions", "tiers", 0, "min_bucket")
    assert data["decisions"]["rules"][1]["value"] == 200 and data["decisions"]["tiers"][0]["min_bucket"] == 16
    with pytest.raises(RecipeError, match=r"no item named 'nope' \(names: a, min_words\)"):
        set_override(data, "decisions.rules.nope.value", 1)
    with pytest.raises(RecipeError, match="index 5 out of range"):
        set_override(data, "decisions.rules.5.value", 1)


def test_recipe_tuning_by_name():
    r = load_recipe(None, ["decisions.rules.min_words.value=200", "decisions.tiers.high.min_bucket=16",
                           "decisions.tiers.medium_high.max_bucket=15", "sources.pdf.steps.pdf_ocr_v1.params.server=vllm"])
    assert next(s for s in r.sources if s.name == "pdf").steps[2].params["server"] == "vllm"
    assert next(x for x in r.decisions.rules if x.name == "min_words").value == 200
    assert [(t.name, t.min_bucket, t.max_bucket) for t in r.decisions.tiers][:2] == [("high", 16, 19), ("medium_high", 10, 15)]


def test_retier_rules_by_name_start_from_the_earlier_run(tmp_path: Path):
    prev = tmp_path / "prev"
    prev.mkdir()
    base = load_recipe(None)
    (prev / "recipe.resolved.yaml").write_text(yaml.safe_dump(base.to_dict(), sort_keys=False))
    r = load_recipe("retier", [f"retier_from={prev}", "decisions.rules.min_words.value=120"])
    assert next(x for x in r.decisions.rules if x.name == "min_words").value == 120
    assert len(r.decisions.rules) == len(base.decisions.rules)


def test_values_from_a_file(tmp_path: Path):
    frag = tmp_path / "tuned.yaml"
    spec = load_recipe(None).decisions.model_copy(deep=True)
    spec.drop_tiers = ["low"]
    frag.write_text(yaml.safe_dump({"decisions": spec.model_dump(mode="json")}))
    assert parse_override(f"decisions=@{frag}")[1]["drop_tiers"] == ["low"]  # a `decisions:` fragment unwraps
    r = load_recipe(None, [f"decisions=@{frag}"])
    assert r.decisions == spec
    with pytest.raises(RecipeError, match="cannot read"):
        parse_override(f"decisions=@{tmp_path / 'missing.yaml'}")


@pytest.mark.parametrize("item, message", [
    ("decisions.tiers.high.min_bucket=x", "--set decisions.tiers.high.min_bucket=x: expected an integer, got 'x'"),
    ("executor.workers=two", "--set executor.workers=two: expected an integer, got 'two'"),
    ("decisions.drop_tiers=low", "--set decisions.drop_tiers=low: expected a list"),
    ("decisions.rules.min_words.value=lots", "--set decisions.rules.min_words.value=lots: rule min_words: op '>=' needs a number"),
    ("decisions.tiers.high.min_bucket=16", "--set decisions.tiers.high.min_bucket=16: "),  # tiers no longer cover 0-19
    ("output.bogus=1", "--set output.bogus=1: unknown key 'bogus'"),
    ("noequals", "--set expects key=value"),
])
def test_errors_name_the_flag(item: str, message: str):
    with pytest.raises(RecipeError) as e:
        load_recipe(None, [item])
    assert str(e.value).startswith(message), str(e.value)
    assert "default.yaml" not in str(e.value) and "\n" not in str(e.value)


def test_unknown_recipe_lists_shipped(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RecipeError, match=r"recipe not found: nope \(.*shipped recipe: code, default, pdf, retier\)"):
        resolve_recipe_path("nope")
    assert resolve_recipe_path("retier").name == "retier.yaml"
