"""Recipes whose readers name fsspec URLs: the input check, the run-placement check and the manifest's input
listing go through fsspec, so a `memory://` source runs end to end (local executor, 1 task, 1 worker: datatrove
runs the task in this process, where fsspec's memory file system lives)."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import polars as pl
import pytest

from assay.pipeline.build import check_inputs
from assay.pipeline.inputs import SAMPLE_DIR, expand_inputs, input_exists
from assay.pipeline.manifest import input_entries
from assay.pipeline.recipe import RecipeError, load_recipe
from assay.pipeline.runner import run_recipe


@pytest.fixture()
def memory_repo():
    """The embedded code sample copied into fsspec's memory file system under a fresh root."""
    fs = fsspec.filesystem("memory")
    root = "/assay-test-repo"
    if fs.exists(root):
        fs.rm(root, recursive=True)
    src = SAMPLE_DIR / "code"
    n = 0
    for f in sorted(src.rglob("*")):
        if f.is_file():
            fs.pipe(f"{root}/{f.relative_to(src).as_posix()}", f.read_bytes())
            n += 1
    yield f"memory://{root}", n
    fs.rm(root, recursive=True)


def _code_recipe(paths: list[str]):
    return load_recipe("code", [f"sources.0.reader.params.paths={json.dumps(paths)}",
                                "executor.tasks=1", "executor.workers=1"])


def test_input_check_goes_through_fsspec(memory_repo, tmp_path):
    url, n = memory_repo
    assert input_exists(url) and not input_exists(url + "-missing")
    assert len(expand_inputs([url])) == n and all(u.startswith("memory://") for u in expand_inputs([url]))
    check_inputs(_code_recipe([url]))  # used to fail: Path("memory://...").exists() is False
    with pytest.raises(RecipeError, match="input path does not exist: memory://nowhere"):
        check_inputs(_code_recipe(["memory://nowhere"]))
    # file:// URLs are local: hashed like plain paths; a local path keeps its old entry
    (tmp_path / "a.py").write_text("print(1)\n")
    by_url = input_entries([f"file://{tmp_path}/a.py"])
    by_path = input_entries([tmp_path / "a.py"])
    assert by_url[0]["sha256"] == by_path[0]["sha256"] and by_url[0]["path"].startswith("file://")


@pytest.mark.slow
def test_a_recipe_reading_memory_urls_runs_end_to_end(memory_repo, tmp_path):
    url, n = memory_repo
    out = tmp_path / "run"
    run_recipe(_code_recipe([url]), out)
    manifest = json.loads((out / "manifest.json").read_text())
    inputs = manifest["inputs"]
    assert len(inputs) == n and all(e["path"].startswith("memory://") for e in inputs)
    assert all(e["sha256"] and len(e["sha256"]) == 64 for e in inputs)  # memory: cheap, so hashed
    shards = list((out / "output").rglob("*.parquet"))
    kept = pl.concat([pl.read_parquet(p) for p in shards], how="diagonal_relaxed")
    excluded = [pl.read_parquet(p) for p in (out / "excluded").glob("*.parquet")]
    total = kept.height + sum(e.height for e in excluded)
    assert kept.height > 0 and total >= n - 1  # every file is a document (kept or excluded with a reason)
    rel = {f.relative_to(SAMPLE_DIR / "code").as_posix() for f in (SAMPLE_DIR / "code").rglob("*") if f.is_file()}
    assert set(kept["url_or_path"]) <= rel


def test_remote_urls_are_listed_without_a_checksum(monkeypatch):
    """A URL on a remote file system (s3://, hf:// ...) is listed with its size and no sha256: hashing it
    would download the data."""
    import assay.pipeline.manifest as manifest

    fs = fsspec.filesystem("memory")
    fs.pipe("/remote-like/x.bin", b"abc")
    try:
        monkeypatch.setattr(manifest, "CHEAP_PROTOCOLS", ("file", "local"))
        (entry,) = input_entries(["memory:///remote-like/x.bin"])
        assert entry == {"path": "memory:///remote-like/x.bin", "bytes": 3, "sha256": None, "remote": True}
    finally:
        fs.rm("/remote-like", recursive=True)
