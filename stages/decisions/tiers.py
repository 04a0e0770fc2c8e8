"""Ensemble buckets and tiers: the one implementation (the batch run, benchmarks and notebooks call it).

A document's bucket (0-19) comes from the calibrated percentile signals (any declared numeric signal
in [0, 1], e.g. `fasttext_web__pct` or a learned `quality__web_pct`) that `decisions.ensemble` names
for its source: `max` takes the highest weighted percentile (Nemotron-CC style: good by any model),
`mean` the weighted mean of the present ones; a document with none gets `unscored_bucket`.
`decisions.tiers` maps bucket ranges to named tiers.

    bucket_of(frame, spec) -> pl.Series[int64]     tier_of(frame, spec) -> pl.Series[str]
    bucket_expr(columns, spec) / tier_expr(bucket, spec) -> polars expressions
"""

from __future__ import annotations

from typing import Any, Iterable

from assay.stages.decisions.spec import N_BUCKETS, as_spec

__all__ = ["bucket_expr", "tier_expr", "bucket_of", "tier_of", "tier_weights", "bucket_of_percentile",
           "percentile_signals"]


def _columns(frame_or_columns: Any) -> set[str]:
    cols = getattr(frame_or_columns, "columns", frame_or_columns)
    if callable(getattr(frame_or_columns, "collect_schema", None)):
        cols = frame_or_columns.collect_schema().names()
    return set(cols)


def percentile_signals(spec) -> set[str]:
    """Every signal the ensemble of `spec` reads."""
    return {sig for weights in as_spec(spec).ensemble.values() for sig in weights}


def bucket_of_percentile(pct):
    """Polars expression: percentile in [0, 1] -> bucket 0..19 (null stays null)."""
    import polars as pl

    return (pct.cast(pl.Float64).clip(0.0, 1.0) * N_BUCKETS).floor().clip(0, N_BUCKETS - 1).cast(pl.Int64)


def bucket_expr(frame_or_columns: Any, spec):
    """Ensemble bucket 0-19 of every document, from the percentile signals `spec.ensemble` names per source."""
    import polars as pl

    spec = as_spec(spec)
    cols = _columns(frame_or_columns)
    source = pl.col("source") if "source" in cols else pl.lit(None, dtype=pl.String)
    expr = pl.lit(None, dtype=pl.Float64)
    for src, weights in spec.ensemble.items():
        present = [(sig, float(w)) for sig, w in weights.items() if sig in cols and w > 0]
        if not present:
            continue
        pcts = {sig: pl.col(sig).cast(pl.Float64, strict=False).fill_nan(None) for sig, _ in present}  # NaN: no score
        parts = [pcts[sig] * w for sig, w in present]
        if spec.ensemble_mode == "max":
            combined = pl.max_horizontal(parts)
        else:
            weight_present = [pl.when(pcts[sig].is_null()).then(0.0).otherwise(w) for sig, w in present]
            combined = pl.sum_horizontal(parts) / pl.sum_horizontal(weight_present)
        expr = pl.when(source == src).then(combined).otherwise(expr)
    return bucket_of_percentile(expr).fill_null(spec.unscored_bucket)


def tier_expr(bucket, spec):
    """Tier name of a bucket expression (the tiers cover 0-19 exactly once)."""
    import polars as pl

    spec = as_spec(spec)
    expr = pl.lit(None, dtype=pl.String)
    for t in spec.tiers:
        expr = pl.when((bucket >= t.min_bucket) & (bucket <= t.max_bucket)).then(pl.lit(t.name)).otherwise(expr)
    return expr


def bucket_of(frame, spec):
    """The ensemble bucket of every row of a polars DataFrame of stored signals (a Series named `bucket`)."""
    return frame.with_columns(bucket_expr(frame, spec).alias("__bucket"))["__bucket"].alias("bucket")


def tier_of(frame, spec):
    """The tier of every row of a polars DataFrame of stored signals (a Series named `tier`)."""
    spec = as_spec(spec)
    return frame.with_columns(tier_expr(bucket_expr(frame, spec), spec).alias("__tier"))["__tier"].alias("tier")


def tier_weights(spec) -> dict[str, float]:
    return {t.name: t.weight for t in as_spec(spec).tiers}


def tier_names(spec) -> Iterable[str]:
    return [t.name for t in as_spec(spec).tiers]
