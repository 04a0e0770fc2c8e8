"""Language / file-type rebalancing for one source (code by default), decided from stored signals.

Recipe block (`decisions.rebalance`):
    {source: code, key: code__language, unit: bytes | tokens, caps: {python: 50000000, "*": ...},
     weights: {javascript: 0.5}, seed: 0}
Keep probabilities come from `assay.stages.code.rebalance.plan_rebalance` over the amounts that survive
every other decision, and each document is kept by a deterministic draw on its id
(`rebalance_keep`), so every rank, a re-tier run and a notebook agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _amount_expr(unit: str, columns=()):
    """Amount of a document: the stored `doc__bytes` / `doc__tokens` signals (so planning never needs
    text), else computed from `text` with the same functions (a notebook frame of other stores)."""
    import polars as pl

    stored = "doc__bytes" if unit == "bytes" else "doc__tokens"
    if stored in columns:
        return pl.col(stored).fill_null(0).cast(pl.Int64)
    if unit == "bytes":
        return pl.col("text").str.len_bytes().fill_null(0).cast(pl.Int64)
    from assay.stages.output.tokens import estimate_tokens

    return pl.col("text").map_elements(estimate_tokens, return_dtype=pl.Int64).fill_null(0)


def plan_probabilities(df, spec) -> dict[str, float]:
    """Keep probability per key, from a frame of stored signals (with `text`) and a DecisionSpec."""
    return plan(df, spec)[1]


def plan(df, spec) -> tuple[dict[str, int], dict[str, float]]:
    """(amount available per key after every other decision, keep probability per key)."""
    import polars as pl

    from assay.stages.code.rebalance import plan_rebalance
    from assay.stages.decisions.rules import decide_frame

    rb: dict[str, Any] = spec.rebalance
    key, source = rb.get("key", "code__language"), rb.get("source", "code")
    if df.height == 0 or key not in df.columns:
        return {}, {}
    decided = decide_frame(df, spec, _plan=False)  # everything but rebalancing
    kept = decided.filter(pl.col("keep") & (pl.col("source") == source))
    totals = (
        kept.with_columns(_amount_expr(rb.get("unit", "bytes"), kept.columns).alias("__amount"))
        .group_by(pl.col(key).cast(pl.String).fill_null("unknown"))
        .agg(pl.col("__amount").sum())
    )
    amounts = {str(k): int(v) for k, v in totals.iter_rows()}
    return amounts, plan_rebalance(amounts, rb.get("caps") or {}, rb.get("weights") or {})


def plan_from_store(store_folder: str | Path, spec, clusters_folder: str | Path | None = None) -> dict[str, float]:
    """Same plan, reading the signal store (and dedup lookup) of a run."""
    return plan(_store_frame(store_folder, clusters_folder), spec)[1]


def _store_frame(store_folder, clusters_folder):
    from assay.stages.common.store import read_signals

    df = read_signals(store_folder)
    if clusters_folder is not None:
        df = join_dedup_lookup(df, Path(clusters_folder) / "lookup.parquet")
    return df


def join_dedup_lookup(df, lookup: Path):
    """Add the dedup annotations of `DedupAnnotate` to a frame of stored signals."""
    import polars as pl

    if not lookup.exists() or df.height == 0 or "dedup__doc_key" not in df.columns:
        return df
    lk = pl.read_parquet(lookup).select(
        pl.col("doc_key").alias("dedup__doc_key"),
        pl.col("cluster_size").alias("dedup__cluster_size"),
        pl.col("duplicate_of").alias("dedup__duplicate_of"),
        pl.col("exact_duplicate").alias("dedup__exact_duplicate"),
        pl.col("is_duplicate").alias("dedup__is_duplicate"),
    )
    out = df.with_columns(pl.col("dedup__doc_key").cast(pl.Int64)).join(lk, on="dedup__doc_key", how="left")
    return out.with_columns(
        pl.col("dedup__cluster_size").fill_null(1),
        pl.col("dedup__exact_duplicate").fill_null(False),
        pl.col("dedup__is_duplicate").fill_null(False),
    )
