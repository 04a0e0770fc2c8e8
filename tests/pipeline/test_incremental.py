"""Incremental runs: a grown input set processes only the new files, deduplicated against the
earlier run's index, and the manifest lists the new shards beside the old ones."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from assay.pipeline.build import SAMPLE_DIR
from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe
from assay.stages.common.store import read_signals

RECIPE = """\
name: incr
sources:
  - name: web
    reader: {{kind: warc_reader_v1, params: {{paths: ["{web}"]}}}}
    steps: [{{kind: html_extract_v1}}, {{kind: web_heuristics_v1}}]
  - name: code
    reader: {{kind: code_reader_v1, params: {{paths: ["{code}"]}}}}
    steps: [{{kind: code_signals_v1}}]
executor: {{kind: local, tasks: 1, workers: 1}}
"""


def checksums(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.parquet"))}


@pytest.mark.slow
def test_grown_inputs_process_only_new_files(tmp_path: Path):
    web, code = tmp_path / "in" / "web", tmp_path / "in" / "code"
    web.mkdir(parents=True)
    shutil.copy(SAMPLE_DIR / "web" / "sample.warc.gz", web / "crawl-1.warc.gz")
    shutil.copytree(SAMPLE_DIR / "code" / "src", code / "src")
    recipe_path = tmp_path / "r.yaml"
    recipe_path.write_text(RECIPE.format(web=web, code=code))
    out = tmp_path / "run"

    run_recipe(load_recipe(recipe_path), out)
    first = checksums(out / "output")
    base_rows = read_signals(out / "signals").height

    # nothing new: everything is skipped, no increment
    again = run_recipe(load_recipe(recipe_path), out)
    assert all(p.skipped for p in again.phases)
    assert not (out / "increments").exists()

    # the input grows: a second crawl that republishes the same pages, and one new source file
    shutil.copy(SAMPLE_DIR / "web" / "sample.warc.gz", web / "crawl-2.warc.gz")
    (code / "src" / "new_module.py").write_text(
        '"""A new module."""\n\n\ndef area(width: float, height: float) -> float:\n'
        '    """Area of a rectangle."""\n    return width * height\n'
    )
    result = run_recipe(load_recipe(recipe_path), out)
    inc = out / "increments" / "0001"
    assert result.run_dir == inc
    store = read_signals(inc / "signals")
    # only the new files were read
    assert set(store["source_file"].drop_nulls().map_elements(lambda s: Path(s).name, return_dtype=pl.String)) <= {
        "crawl-2.warc.gz", "new_module.py"}
    assert store.height == 9  # 8 pages + 1 file
    # the republished pages are duplicates of documents already published by the first run
    excluded = pl.concat([pl.read_parquet(p) for p in (inc / "excluded").glob("*.parquet")], how="diagonal_relaxed")
    web_dups = excluded.filter(pl.col("reason").is_in(["dedup_exact", "dedup_minhash"]))
    assert web_dups.height >= 6
    first_ids = set(read_signals(out / "signals")["id"].to_list())
    assert set(web_dups["duplicate_of"].drop_nulls().to_list()) <= first_ids
    # old outputs untouched, the manifest lists both
    assert {k: v for k, v in checksums(out / "output").items()} == first
    m = json.loads((out / "manifest.json").read_text())
    assert [i["path"] for i in m["increments"]] == ["increments/0001"]
    assert m["totals"]["documents"] == m["base_totals"]["documents"] + m["increments"][0]["totals"]["documents"]
    assert read_signals(out / "signals").height == base_rows

    # a changed recipe starts a fresh run; the earlier run (with its increments) is moved aside whole
    old_hash = (out / "recipe.sha256").read_text().strip()
    changed = load_recipe(recipe_path, ["dedup.bands=10"])
    fresh = run_recipe(changed, out)
    assert fresh.run_dir == out and not any(p.skipped for p in fresh.phases)
    assert (out / "recipe.sha256").read_text().strip() == changed.digest()
    moved = out / "superseded" / old_hash[:12]
    assert checksums(moved / "output") == {k.replace(str(out), str(moved)): v for k, v in first.items()}
    assert (moved / "increments" / "0001" / "manifest.json").exists()
    assert not (out / "increments").exists()
    assert read_signals(out / "signals").height == base_rows + 9  # all current inputs, processed afresh
