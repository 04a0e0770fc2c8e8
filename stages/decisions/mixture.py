"""Rebalancing primitives: keep probabilities from amounts, caps and weights, and the deterministic draw.

`plan_rebalance` turns per-key totals (bytes or estimated tokens) into keep probabilities;
`rebalance_keep` applies one from a hash of the document id and a seed (every rank, a re-tier and a
notebook agree); `amounts_of(decided, rb)` sums the amount per key of what survives every other decision.
"""

from __future__ import annotations

import xxhash

__all__ = ["BYTES_PER_TOKEN", "plan_rebalance", "rebalance_keep", "target_mixture",
           "amount_expr", "amounts_of", "AMOUNT_COLUMN"]

BYTES_PER_TOKEN = 3.5
# a stored byte count, when the store has one, spares reading the text
AMOUNT_COLUMN = "doc__bytes"
TOKENS_COLUMN = "doc__tokens"


def plan_rebalance(totals: dict[str, int], caps: dict[str, int] | None = None,
                   weights: dict[str, float] | None = None) -> dict[str, float]:
    """Keep probability per key (language or file type).

    ``totals[k]``: available amount (bytes or tokens). ``weights[k]`` (default 1.0) scales the
    amount kept (``< 1`` down-samples; ``> 1`` cannot up-sample and is clipped at 1).
    ``caps[k]`` bounds the kept amount; key ``"*"`` in ``caps``/``weights`` is the default.
    """
    caps = caps or {}
    weights = weights or {}
    out: dict[str, float] = {}
    for k, total in totals.items():
        w = float(weights.get(k, weights.get("*", 1.0)))
        if w < 0:
            raise ValueError(f"negative weight for {k!r}")
        p = min(1.0, w)
        cap = caps.get(k, caps.get("*"))
        if cap is not None and total > 0:
            p = min(p, float(cap) / float(total))
        out[k] = max(0.0, p) if total > 0 else min(1.0, w)
    return out


def rebalance_keep(doc_id: str, prob: float, seed: int = 0) -> bool:
    """Deterministic Bernoulli(prob) draw from ``xxh64(doc_id, seed)``."""
    if prob >= 1.0:
        return True
    if prob <= 0.0:
        return False
    h = xxhash.xxh64_intdigest(doc_id.encode("utf-8", "surrogatepass"), seed=seed & 0xFFFFFFFFFFFFFFFF)
    return (h / 2**64) < prob


def target_mixture(totals: dict[str, int], probs: dict[str, float]) -> dict[str, float]:
    """Expected share of each key after applying ``probs``."""
    kept = {k: totals[k] * probs.get(k, 1.0) for k in totals}
    s = sum(kept.values())
    return {k: (v / s if s else 0.0) for k, v in kept.items()}


def amount_expr(unit: str, columns) -> "object":
    """Bytes (or estimated tokens) of each document: a stored byte count when present, else the text."""
    import polars as pl

    cols = set(columns)
    if unit != "bytes" and TOKENS_COLUMN in cols:  # the stored token count (the one finalize reports)
        return pl.col(TOKENS_COLUMN).cast(pl.Float64).fill_null(0).cast(pl.Int64)
    if AMOUNT_COLUMN in cols:
        n = pl.col(AMOUNT_COLUMN).cast(pl.Float64)
    elif "text" in cols:
        n = pl.col("text").str.len_bytes().cast(pl.Float64)
    else:
        n = pl.lit(0.0)
    if unit != "bytes":
        n = (n / BYTES_PER_TOKEN).round()
    return n.fill_null(0).cast(pl.Int64)


def amounts_of(decided, rb) -> dict[str, int]:
    """Amount per key of the documents of `rb.source` that a decided frame (column `keep`) keeps."""
    import polars as pl

    if decided.height == 0 or rb.key not in decided.columns:
        return {}
    kept = decided.filter(pl.col("keep") & (pl.col("source") == rb.source))
    totals = (
        kept.with_columns(amount_expr(rb.unit, kept.columns).alias("__amount"))
        .group_by(pl.col(rb.key).cast(pl.String).fill_null("unknown"))
        .agg(pl.col("__amount").sum())
    )
    return {str(k): int(v) for k, v in totals.iter_rows()}
