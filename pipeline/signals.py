"""Load a run's stored signals for notebooks and re-tiering: the signal store joined with the dedup
clusters (the same annotations `DedupAnnotate` adds in the decide phase), one row per document."""

from __future__ import annotations

from pathlib import Path

import yaml


def load_run_signals(run_dir: str | Path):
    import polars as pl

    from stages.common.store import read_signals

    run_dir = Path(run_dir)
    recipe = yaml.safe_load((run_dir / "recipe.resolved.yaml").read_text())
    base = Path(recipe["retier_from"]) if recipe.get("retier_from") else run_dir
    df = read_signals(base / "signals")
    lookup = base / "dedup" / "clusters" / "lookup.parquet"
    if not lookup.exists() or df.height == 0:
        return df
    lk = pl.read_parquet(lookup).select(
        pl.col("doc_key").alias("dedup__doc_key"),
        pl.col("cluster_size").alias("dedup__cluster_size"),
        pl.col("duplicate_of").alias("dedup__duplicate_of"),
        pl.col("exact_duplicate").alias("dedup__exact_duplicate"),
        pl.col("is_duplicate").alias("dedup__is_duplicate"),
    )
    if "dedup__doc_key" not in df.columns:
        return df
    df = df.with_columns(pl.col("dedup__doc_key").cast(pl.Int64))
    out = df.join(lk, on="dedup__doc_key", how="left")
    return out.with_columns(
        pl.col("dedup__cluster_size").fill_null(1),
        pl.col("dedup__exact_duplicate").fill_null(False),
        pl.col("dedup__is_duplicate").fill_null(False),
    )
