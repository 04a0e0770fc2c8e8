from __future__ import annotations

from pathlib import Path

import pytest

from assay.pipeline.recipe import RecipeError, load_recipe
from assay.pipeline.registry import REGISTRY, check_params


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.yaml"
    p.write_text(text)
    return p


MINIMAL = """\
name: t
sources:
  - name: web
    reader: {kind: warc_reader_v1, params: {paths: ["sample:web"]}}
"""


def test_default_recipe_loads_and_hash_is_stable():
    a, b = load_recipe(), load_recipe(None)
    assert a.name == "default"
    assert a.digest() == b.digest() and len(a.digest()) == 64
    assert {s.name for s in a.sources} == {"web", "code", "pdf"}


def test_unknown_key_is_named_with_its_line(tmp_path):
    p = write(tmp_path, MINIMAL + "dedup:\n  bands: 14\n  bandz: 3\n")
    with pytest.raises(RecipeError) as e:
        load_recipe(p)
    msg = str(e.value)
    assert "unknown key 'bandz'" in msg and f"{p}:7" in msg


def test_unknown_nested_key_in_source(tmp_path):
    p = write(tmp_path, MINIMAL.replace("    reader:", "    colour: red\n    reader:"))
    with pytest.raises(RecipeError, match=r"r.yaml:4: unknown key 'colour'"):
        load_recipe(p)


def test_set_overrides_and_hash_changes(tmp_path):
    p = write(tmp_path, MINIMAL)
    base = load_recipe(p)
    r = load_recipe(p, ["dedup.bands=20", "executor.tasks=3", "decisions.drop_tiers=[low]"])
    assert r.dedup.bands == 20 and r.executor.tasks == 3 and r.decisions.drop_tiers == ["low"]
    assert r.digest() != base.digest()


def test_bad_override_value_is_one_line_error(tmp_path):
    p = write(tmp_path, MINIMAL)
    with pytest.raises(RecipeError, match="bands"):
        load_recipe(p, ["dedup.bands=-1"])
    with pytest.raises(RecipeError, match="key=value"):
        load_recipe(p, ["dedup.bands"])


def test_tiers_must_cover_all_buckets(tmp_path):
    p = write(tmp_path, MINIMAL + "decisions:\n  tiers:\n    - {name: a, min_bucket: 0, max_bucket: 10}\n")
    with pytest.raises(RecipeError, match="cover buckets"):
        load_recipe(p)


def test_missing_recipe_file():
    with pytest.raises(RecipeError, match="recipe not found"):
        load_recipe("/nonexistent/recipe.yaml")


def test_registry_names_are_versioned():
    assert all(name.rsplit("_", 1)[-1].startswith("v") for name in REGISTRY)


def test_check_params_rejects_unknown_parameter():
    class Step:
        def __init__(self, *, a: int = 1):
            pass

    check_params(Step, "x_v1", {"a": 2})
    with pytest.raises(RecipeError, match=r"unknown parameter\(s\) \['b'\]"):
        check_params(Step, "x_v1", {"b": 2})
