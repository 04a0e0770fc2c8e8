"""End to end: the default recipe on the embedded sample, local executor with two tasks."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe
from assay.stages.common.store import read_signals

CORE_COLUMNS = {"id", "text", "source", "language", "tier", "token_count"}


def assay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay.pipeline.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def phase_stats(run_dir: Path, phase: str) -> dict[str, dict]:
    data = json.loads((run_dir / "logs" / phase / "stats.json").read_text())
    return {s["name"]: {k: (v.get("total") if isinstance(v, dict) else v) for k, v in s["stats"].items()} for s in data}


def shard_checksums(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((run_dir / "output").rglob("*.parquet"))
    }


def test_output_tree(default_run: Path):
    for rel in ("recipe.resolved.yaml", "recipe.sha256", "manifest.json", "report.html", "signals", "output",
                "excluded", "logs/signals/stats.json", "logs/decide/stats.json"):
        assert (default_run / rel).exists(), rel
    assert len(list((default_run / "logs" / "signals" / "completions").iterdir())) == 2


def test_shards_schema_and_content(default_run: Path):
    shards = sorted((default_run / "output").rglob("*.parquet"))
    assert shards
    for s in shards:
        schema = pq.read_schema(s)
        assert CORE_COLUMNS <= set(schema.names), s
        assert pq.ParquetFile(s).metadata.row_group(0).column(0).compression == "ZSTD"
    df = pl.concat([pl.read_parquet(s) for s in shards], how="diagonal_relaxed")
    assert set(df["source"].unique()) == {"web", "code", "pdf"}
    # the tutorial keeps its indented code block and the math page its LaTeX
    web = " ".join(df.filter(pl.col("source") == "web")["text"].to_list())
    assert "        return low" in web
    assert "\\int" in web


def test_every_document_is_written_or_excluded_with_a_reason(default_run: Path):
    store = read_signals(default_run / "signals")
    written = sum(pq.ParquetFile(p).metadata.num_rows for p in (default_run / "output").rglob("*.parquet"))
    excluded = pl.concat(
        [pl.read_parquet(p) for p in (default_run / "excluded").rglob("*.parquet")], how="diagonal_relaxed"
    )
    assert excluded["reason"].null_count() == 0 and (excluded["reason"] != "").all()
    assert written + excluded.height == store.height
    # every record the readers produced reached the signal store
    read = sum(v.get("documents", 0) for k, v in phase_stats(default_run, "signals").items() if "READER" in k)
    assert read == store.height
    decide = next(v for k, v in phase_stats(default_run, "decide").items() if "decide" in k)
    assert decide["total"] == store.height
    assert decide["forwarded"] == written and decide["dropped"] == excluded.height
    ids = set(excluded["id"].to_list())
    assert len(ids) == excluded.height
    # bad and low-value inputs of the sample leave with their own reasons
    reasons = set(excluded["reason"].to_list())
    assert "dedup_exact" in reasons or "dedup_minhash" in reasons
    assert any(r.startswith("code_") for r in reasons)
    assert any(r.startswith("pdf_") for r in reasons)


def test_manifest_matches_shards(default_run: Path):
    m = json.loads((default_run / "manifest.json").read_text())
    assert m["recipe_sha256"] == (default_run / "recipe.sha256").read_text().strip()
    for shard in m["shards"]:
        p = default_run / shard["path"]
        assert hashlib.sha256(p.read_bytes()).hexdigest() == shard["sha256"]
        assert pq.ParquetFile(p).metadata.num_rows == shard["rows"]


def test_rerun_skips_completed_work(default_run: Path):
    before = shard_checksums(default_run)
    recipe = load_recipe(None, ["executor.tasks=2", "executor.workers=2"])
    result = run_recipe(recipe, default_run)
    assert all(p.skipped for p in result.phases)
    assert shard_checksums(default_run) == before


def test_retier_uses_stored_signals_only(default_run: Path, tmp_path: Path):
    store_mtimes = {p: p.stat().st_mtime_ns for p in (default_run / "signals").iterdir()}
    out = tmp_path / "retier"
    r = assay("run", "retier", "--output", str(out), "--set", f"retier_from={default_run}",
              "--set", "decisions.drop_tiers=[low, medium]", "--tasks", "1", "--workers", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert not (out / "logs" / "signals").exists(), "re-tiering must not re-run extraction or scoring"
    assert {p: p.stat().st_mtime_ns for p in (default_run / "signals").iterdir()} == store_mtimes
    assert (out / "manifest.json").exists()
    import yaml

    before = yaml.safe_load((default_run / "recipe.resolved.yaml").read_text())["decisions"]
    after = yaml.safe_load((out / "recipe.resolved.yaml").read_text())["decisions"]
    assert after["rules"] == before["rules"] and after["drop_tiers"] == ["low", "medium"]
    ex = pl.concat([pl.read_parquet(p) for p in (out / "excluded").rglob("*.parquet")], how="diagonal_relaxed")
    store = read_signals(default_run / "signals")
    written = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "output").rglob("*.parquet"))
    assert written + ex.height == store.height


def test_describe_runs_nothing(tmp_path: Path):
    r = assay("describe", "--output", str(tmp_path / "x"))
    assert r.returncode == 0, r.stderr
    assert "phase 1: signals" in r.stdout and "warc_reader_v1" in r.stdout
    assert not (tmp_path / "x" / "logs").exists()


@pytest.mark.parametrize(
    "recipe_text, expected",
    [
        ("name: x\nsources:\n  - name: web\n    reader: {kind: warc_reader_v9}\n", "unknown stage kind 'warc_reader_v9'"),
        ("name: x\nsources:\n  - name: web\n    reader: {kind: warc_reader_v1, params: {paths: [/no/such/dir]}}\n",
         "input path does not exist: /no/such/dir"),
    ],
)
def test_bad_recipes_fail_before_work_with_one_line(tmp_path: Path, recipe_text: str, expected: str):
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text)
    r = assay("run", str(p), "--output", str(tmp_path / "out"))
    assert r.returncode == 2
    assert expected in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "logs").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; permission check needs a normal user")
def test_unwritable_output_dir(tmp_path: Path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    r = assay("run", "--output", str(ro / "out"))
    assert r.returncode == 2 and "not writable" in r.stderr


def test_unwritable_output_dir_under_a_file(tmp_path: Path):
    f = tmp_path / "file"
    f.write_text("x")
    r = assay("run", "--output", str(f / "out"))
    assert r.returncode == 2 and "not writable" in r.stderr


def test_help_on_every_verb():
    for verb in ("run", "describe", "report", "show"):
        r = assay(verb, "--help")
        assert r.returncode == 0 and "Usage" in r.stdout, verb
