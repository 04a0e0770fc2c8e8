"""Dedup among the survivors of the filters (issue 17: a cluster is never lost because the copy dedup
picked fails a rule).

The clusters phase picks one member per cluster by its keep policy, before any rule is applied. The
decision layer keeps that pick when it passes every filter; when it does not, the best member that
does pass is kept instead, ranked as the `highest_priority` policy ranks: dedup's pick first, then the highest
`quality__priority` (the ensemble `bucket` where the frame has no stored priority: the store is written before
the dedup phase computes it, and both are `tiers.bucket_of`), then the longest text (`doc__bytes`, by
`decisions.lengths.length_class`: about 5% apart), then the smallest id. A failing copy is never the kept one,
and a cluster whose pick is a document of an earlier, already published run keeps none.

    keepers(frame) -> one row per cluster: dedup__cluster_id, keeper_id, keeper_exact_hash, published
    join_dedup_lookup(frame, lookup.parquet) -> frame + the dedup annotations of `DedupAnnotate`
"""

from __future__ import annotations

from pathlib import Path

from assay.stages.decisions.lengths import length_class

__all__ = ["DEDUP_COLUMNS", "keepers", "join_dedup_lookup", "has_clusters", "PRIORITY_SIGNAL"]

DEDUP_COLUMNS = ("dedup__cluster_id", "dedup__cluster_size", "dedup__is_duplicate", "dedup__duplicate_of",
                 "dedup__exact_duplicate")
PRIORITY_SIGNAL = "quality__priority"
LENGTH_SIGNAL = "doc__bytes"  # what `MinhashSignatures` stores as the sidecar's length (UTF-8 bytes of the text)
KEEPER_COLUMNS = ("dedup__cluster_id", "keeper_id", "keeper_exact_hash", "published")


def has_clusters(columns) -> bool:
    return "dedup__is_duplicate" in set(columns)


def keepers(frame, survives="__survives"):
    """The kept member of every cluster of a frame that holds every member of its clusters.

    `frame` has `id`, the dedup columns and a boolean column `survives` (passes every filter); `bucket`,
    `quality__priority` and `doc__bytes` rank the survivors when dedup's pick is not one of them."""
    import polars as pl

    cols = set(frame.columns)
    in_cluster = frame.filter(pl.col("dedup__cluster_size").fill_null(1) > 1)
    published = (
        pl.col("dedup__duplicate_of_published").fill_null(False)
        if "dedup__duplicate_of_published" in cols else pl.lit(False)
    )
    prio = [pl.col(c).cast(pl.Float64, strict=False) for c in (PRIORITY_SIGNAL, "bucket") if c in cols]
    prio = pl.coalesce(prio) if prio else pl.lit(None, pl.Float64)
    length = (pl.col(LENGTH_SIGNAL).cast(pl.Float64, strict=False).map_batches(
        lambda s: pl.Series(length_class(s.to_numpy()), dtype=pl.Int64), return_dtype=pl.Int64)
        if LENGTH_SIGNAL in cols else pl.lit(None, pl.Int64))
    exact = pl.col("dedup__exact_hash").cast(pl.String) if "dedup__exact_hash" in cols else pl.lit(None, pl.String)
    ranked = in_cluster.select(
        pl.col("dedup__cluster_id").cast(pl.Int64),
        pl.col("id").cast(pl.String),
        pl.col(survives).fill_null(False).alias("__ok"),
        (~pl.col("dedup__is_duplicate").fill_null(False)).alias("__pick"),
        published.alias("__published"),
        prio.alias("__prio"),
        length.alias("__len"),
        exact.alias("__exact"),
    )
    best = (
        ranked.filter(pl.col("__ok"))
        .sort(["__pick", "__prio", "__len", "id"], descending=[True, True, True, False], nulls_last=True)
        .group_by("dedup__cluster_id", maintain_order=True)
        .agg(pl.col("id").first().alias("keeper_id"), pl.col("__exact").first().alias("keeper_exact_hash"))
    )
    pub = ranked.group_by("dedup__cluster_id").agg(pl.col("__published").any().alias("published"))
    out = pub.join(best, on="dedup__cluster_id", how="left")
    return out.select(
        "dedup__cluster_id",
        pl.when(pl.col("published")).then(None).otherwise(pl.col("keeper_id")).alias("keeper_id"),
        pl.when(pl.col("published")).then(None).otherwise(pl.col("keeper_exact_hash")).alias("keeper_exact_hash"),
        "published",
    )


def join_dedup_lookup(df, lookup: Path):
    """Add the dedup annotations of `DedupAnnotate` (and `dedup__duplicate_of_published`) to a frame."""
    import polars as pl

    lookup = Path(lookup)
    if not lookup.exists() or df.height == 0 or "dedup__doc_key" not in df.columns:
        return df
    lk = pl.read_parquet(lookup)
    sel = [
        pl.col("doc_key").alias("dedup__doc_key"),
        pl.col("cluster_id").alias("dedup__cluster_id"),
        pl.col("cluster_size").alias("dedup__cluster_size"),
        pl.col("duplicate_of").alias("dedup__duplicate_of"),
        pl.col("exact_duplicate").alias("dedup__exact_duplicate"),
        pl.col("is_duplicate").alias("dedup__is_duplicate"),
    ]
    if "duplicate_of_published" in lk.columns:
        sel.append(pl.col("duplicate_of_published").alias("dedup__duplicate_of_published"))
    lk = lk.select(sel)
    out = df.drop([c for c in lk.columns if c != "dedup__doc_key" and c in df.columns])
    out = out.with_columns(pl.col("dedup__doc_key").cast(pl.Int64)).join(lk, on="dedup__doc_key", how="left")
    return out.with_columns(
        pl.col("dedup__cluster_size").fill_null(1),
        pl.col("dedup__exact_duplicate").fill_null(False),
        pl.col("dedup__is_duplicate").fill_null(False),
    )
