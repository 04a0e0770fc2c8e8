"""Phase-level reruns: each phase is rerun only when the settings it depends on change.

Inputs are generated at test time: a small source tree (code reader + code signals, dedup on, a
size rule and language rebalancing), two tasks, so every phase runs (signals, dedup x3, plan, decide,
finalize) in a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import apply_cli_overrides, run_recipe

PHASES = ["signals", "dedup_signatures", "dedup_buckets", "dedup_clusters", "decide_plan", "decide", "finalize"]


def _words(rng, n: int) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(n)]


def _module(i: int, lines: int) -> str:
    """A distinct Python module (seeded random identifiers, so no two are near-duplicates)."""
    import random

    rng = random.Random(i)
    names = _words(rng, lines)
    body = "\n".join(f"    {n} = x * {rng.randint(2, 999)} + {rng.randint(1, 99)}  # " + " ".join(_words(rng, 4))
                     for n in names)
    doc = " ".join(_words(rng, 6))
    return f'"""Module {i}: {doc}."""\n\n\ndef compute_{i}(x: int) -> int:\n{body}\n    return x\n'


def _script(i: int, lines: int) -> str:
    import random

    rng = random.Random(1000 + i)
    return "\n".join(f"function {w}(a) {{ return a * {rng.randint(2, 999)} + {rng.randint(1, 99)}; }}"
                     for w in _words(rng, lines)) + "\n"


@pytest.fixture()
def project(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "in" / "src"
    src.mkdir(parents=True)
    for i in range(12):
        (src / f"mod_{i:02d}.py").write_text(_module(i, 5 + 4 * i))
    (src / "copy_of_03.py").write_text(_module(3, 17))  # an exact duplicate
    for i in range(4):
        (src / f"util_{i}.js").write_text(_script(i, 8 + 3 * i))
    recipe = {
        "name": "reruns",
        "sources": [{"name": "code", "reader": {"kind": "code_reader_v1", "params": {"paths": [str(src)]}},
                     "steps": [{"kind": "code_signals_v1"}]}],
        "common_steps": [{"kind": "normalize_v1"}],
        "dedup": {"enabled": True, "exact": True, "near": True, "keep": "first_id"},
        "decisions": {
            "code_rules": None,
            "rules": [{"name": "min_bytes", "source": "code", "signal": "doc__bytes", "op": ">=", "value": 0}],
            "rebalance": {"source": "code", "key": "code__language", "unit": "bytes", "weights": {"javascript": 0.5}},
        },
        "executor": {"kind": "local", "tasks": 2, "workers": 2},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path, tmp_path / "run"


def _actions(result) -> dict[str, str]:
    return {d.phase: d.action for d in result.reuse}


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in sorted(folder.rglob("*")) if p.is_file()}


def _kept(run: Path) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted((run / "output").rglob("shard-*.parquet"))])


@pytest.mark.slow
def test_threshold_change_reruns_only_decide_and_finalize(project):
    recipe_path, out = project
    first = run_recipe(load_recipe(recipe_path), out)
    assert [p.name for p in first.phases] == PHASES
    assert set(_actions(first).values()) == {"run"}
    store = _mtimes(out / "signals")
    dedup = _mtimes(out / "dedup")
    plan_before = json.loads((out / "decide_plan" / "plan.json").read_text())
    kept_before = _kept(out).height

    # a threshold that excludes the smaller half of the files
    sizes = sorted(pl.read_parquet(out / "signals" / "*.parquet")["doc__bytes"].to_list())
    changed = load_recipe(recipe_path, [f"decisions.rules.0.value={sizes[len(sizes) // 2]}"])
    second = run_recipe(changed, out)
    acts = _actions(second)
    assert acts == {"signals": "reuse", "dedup_signatures": "reuse", "dedup_buckets": "reuse",
                    "dedup_clusters": "reuse", "decide_plan": "rerun", "decide": "rerun", "finalize": "rerun"}
    assert "decisions changed" in next(d.reason for d in second.reuse if d.phase == "decide")
    assert second.superseded is None and not (out / "superseded").exists()
    assert _mtimes(out / "signals") == store, "the signal store must not be rewritten"
    assert _mtimes(out / "dedup") == dedup
    assert not (out / "logs" / "signals" / "completions").exists() or len(
        list((out / "logs" / "signals" / "completions").iterdir())) == 2
    kept_after = _kept(out)
    assert 0 < kept_after.height < kept_before
    excluded = pl.concat([pl.read_parquet(p) for p in (out / "excluded").glob("*.parquet")])
    assert "code_min_bytes" in excluded["reason"].to_list()
    # the plan was redone on the new survivors; the manifest is rebuilt from the new shards only
    assert json.loads((out / "decide_plan" / "plan.json").read_text())["available"] != plan_before["available"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["totals"]["documents"] == kept_after.height
    assert manifest["recipe_sha256"] == changed.digest()


@pytest.mark.slow
def test_workers_change_reruns_nothing(project):
    recipe_path, out = project
    run_recipe(load_recipe(recipe_path), out)
    logs = _mtimes(out / "logs")
    outputs = _mtimes(out / "output")
    again = run_recipe(apply_cli_overrides(load_recipe(recipe_path), executor=None, workers=1, tasks=None), out)
    assert set(_actions(again).values()) == {"reuse"}
    assert all(p.skipped for p in again.phases)
    assert _mtimes(out / "output") == outputs
    assert _mtimes(out / "logs") == logs
    assert again.superseded is None


@pytest.mark.slow
def test_dedup_change_reruns_dedup_onward_and_signals_change_supersedes(project):
    recipe_path, out = project
    run_recipe(load_recipe(recipe_path), out)
    store = _mtimes(out / "signals")
    res = run_recipe(load_recipe(recipe_path, ["dedup.bands=10"]), out)
    acts = _actions(res)
    assert acts["signals"] == "reuse"
    assert all(acts[p] == "rerun" for p in PHASES[1:])
    assert _mtimes(out / "signals") == store
    assert len(list((out / "dedup" / "signatures" / "meta").glob("*.json"))) == 2

    # a change to the signal steps cannot reuse the store: the run is moved aside whole
    old_hash = (out / "recipe.sha256").read_text().strip()
    res = run_recipe(load_recipe(recipe_path, ["common_steps.0.kind=language_id_v1"]), out)
    assert res.superseded == out / "superseded" / old_hash[:12]
    assert set(_actions(res).values()) == {"run"}
    assert (res.superseded / "signals").is_dir()


@pytest.mark.slow
def test_plan_phase_reads_no_text_and_decide_uses_its_plan(project):
    """The plan is made once, from stored sizes; decide tasks only read plan.json."""
    from assay.stages.decisions.frame import needed_columns, store_columns

    recipe_path, out = project
    recipe = load_recipe(recipe_path)
    run_recipe(recipe, out)
    plan = json.loads((out / "decide_plan" / "plan.json").read_text())
    assert set(plan["available"]) == {"python", "javascript"}
    assert plan["probabilities"]["javascript"] == pytest.approx(0.5)
    # sizes are stored, so the plan reads the decisions' columns without text
    assert "doc__bytes" in store_columns(out / "signals")
    assert "text" not in needed_columns(recipe.decisions, with_text=False)
    # bytes per document are stored; planned amounts equal the stored sizes of the surviving documents
    store = pl.read_parquet(out / "signals" / "*.parquet")
    assert (store["doc__bytes"] == store["text"].str.len_bytes()).all()
    assert plan["available"]["javascript"] == store.filter(pl.col("code__language") == "javascript")["doc__bytes"].sum()
    # the manifest's mixture report comes from the plan (finalize reads no shard text)
    rb = json.loads((out / "manifest.json").read_text())["rebalance"]
    assert {r["key"] for r in rb["rows"]} == {"python", "javascript"}
    written = _kept(out)
    assert sum(r["written"] for r in rb["rows"]) == written["n_bytes"].sum()

    # rerunning decide alone (output settings changed) keeps the plan: decide tasks only read it
    plan_mtime = (out / "decide_plan" / "plan.json").stat().st_mtime_ns
    res = run_recipe(load_recipe(recipe_path, ["output.seed=7"]), out)
    assert _actions(res)["decide_plan"] == "reuse" and _actions(res)["decide"] == "rerun"
    assert (out / "decide_plan" / "plan.json").stat().st_mtime_ns == plan_mtime
    assert _kept(out).height == written.height


@pytest.mark.slow
def test_phase_with_live_slurm_jobs_is_never_removed(project, monkeypatch):
    """Slurm jobs outlive the command that submitted them: a rerun that would remove (or move aside)
    files they still write is refused, and nothing is touched."""
    import shutil

    import assay.pipeline.executors as executors
    from assay.pipeline.recipe import RecipeError

    recipe_path, out = project
    run_recipe(load_recipe(recipe_path), out)
    (out / "logs" / "decide" / "slurm_jobs.json").write_text(json.dumps([{"job_id": "4242", "submitted": "x"}]))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/squeue" if name == "squeue" else real_which(name))
    monkeypatch.setattr(executors, "_job_finished", lambda job: (False, "") if job == "4242" else (True, ""))
    outputs = _mtimes(out / "output")
    with pytest.raises(RecipeError, match=r"decide: 4242.*scancel"):
        run_recipe(load_recipe(recipe_path, ["output.seed=3"]), out)
    with pytest.raises(RecipeError, match="4242"):
        run_recipe(load_recipe(recipe_path, ["common_steps.0.kind=language_id_v1"]), out)
    assert _mtimes(out / "output") == outputs and not (out / "superseded").exists()
    # settings that rerun nothing are fine while the jobs run
    assert set(_actions(run_recipe(load_recipe(recipe_path), out)).values()) == {"reuse"}
