"""Plan, repository documents and packing as phases of a recipe (`pack.enabled`), resumable like the others."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from assay.pipeline.recipe import RecipeError, load_recipe
from assay.pipeline.runner import describe

from .conftest import run_shipped


@pytest.mark.slow
def test_recipe_with_pack_phases(bpe_tokenizer, tmp_path):
    sets = ["pack.enabled=true", f"pack.tokenizer={bpe_tokenizer}", "pack.seq_len=511", "plan.tokens=8000",
            "repo_documents.enabled=true"]
    info = describe(load_recipe("default", sets), tmp_path / "run")
    assert [p["name"] for p in info["phases"]][-5:] == ["repo_docs", "finalize", "plan", "pack", "pack_check"]
    run = run_shipped("default", tmp_path / "run", tokenizer=bpe_tokenizer, overrides=sets, tasks=2, workers=1)
    plan = json.loads((run / "plan.json").read_text())
    assert plan["budget_tokens"] == 8000
    res = json.loads((run / "packed" / "pack.json").read_text())
    assert res["ok"], res["problems"]
    assert res["params"]["repo_documents"] and res["params"]["exclude_sources"] == ["code"]
    assert any(k.startswith("code_repo/") for k in res["slices"])
    assert not any(k.startswith("code/") for k in res["slices"])
    repo_rows = [r for p in sorted((run / "repo_docs").rglob("shard-*.parquet")) for r in pq.read_table(p).to_pylist()]
    assert repo_rows and all(r["source"] == "code_repo" for r in repo_rows)
    assert "--- " in repo_rows[0]["text"]
    assert res["totals"]["content_tokens"] == res["expected"]["tokens"]
    # a rerun of the same recipe skips every phase (completion markers)
    from assay.pipeline.recipe import load_recipe as lr
    from assay.pipeline.runner import apply_cli_overrides, run_recipe

    again = run_recipe(apply_cli_overrides(lr("default", [*sets, f"output.tokenizer_path={bpe_tokenizer}"]),
                                           executor="local", workers=1, tasks=2), run)
    assert all(p.skipped for p in again.phases)


def test_pack_recipe_keys_are_checked(tmp_path):
    with pytest.raises(RecipeError, match="pack.tokenizer"):
        load_recipe("default", ["pack.enabled=true"])
    with pytest.raises(RecipeError, match="unknown key"):
        load_recipe("default", ["pack.sequence_length=5"])
    with pytest.raises(RecipeError):
        load_recipe("default", ["plan.max_repeats=0"])
