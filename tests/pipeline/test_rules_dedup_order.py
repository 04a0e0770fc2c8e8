"""Filters before dedup, end to end (issue 17): on a finished run, a rule that excludes the copy dedup kept
makes its near-duplicate the kept copy; the cluster is not lost."""

from __future__ import annotations

import json

import polars as pl

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe


def test_the_cluster_survives_when_its_kept_copy_fails_a_rule(default_run, tmp_path):
    lookup = pl.read_parquet(default_run / "dedup" / "clusters" / "lookup.parquet")
    dup = lookup.filter(pl.col("is_duplicate")).row(0, named=True)
    kept_id, dup_id = dup["duplicate_of"], dup["doc_id"]
    store = pl.scan_parquet(str(default_run / "signals" / "*.parquet")).select("id", "url").collect()
    kept_url = store.filter(pl.col("id") == kept_id)["url"].item()
    before = pl.read_parquet(default_run / "excluded" / "*.parquet")
    assert before.filter(pl.col("id") == dup_id)["stage"].to_list() == ["dedup"]

    rule = json.dumps([{"name": "not_that_copy", "source": "web", "signal": "url", "op": "!=", "value": kept_url}])
    out = tmp_path / "retier"
    run_recipe(load_recipe("retier", [f"retier_from={default_run}", f"decisions.rules={rule}",
                                      "executor.tasks=2", "executor.workers=1"]), out)
    excluded = pl.read_parquet(out / "excluded" / "*.parquet")
    got = {r["id"]: (r["reason"], r["stage"]) for r in excluded.iter_rows(named=True)}
    assert got[kept_id] == ("web_not_that_copy", "rules")
    assert dup_id not in got  # the near-duplicate is now the cluster's kept copy
    shards = pl.scan_parquet(str(out / "output" / "**" / "*.parquet"), hive_partitioning=False).collect()
    assert dup_id in shards["id"].to_list() and kept_id not in shards["id"].to_list()
    # every other dedup exclusion of the earlier run stands
    others = set(before.filter((pl.col("stage") == "dedup") & (pl.col("id") != dup_id))["id"].to_list())
    assert others <= {i for i, (_, st) in got.items() if st == "dedup"}
