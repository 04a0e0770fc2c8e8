"""Deterministic rebalancing of code by language / file type.

``plan_rebalance`` turns per-key totals (bytes or estimated tokens), caps and sampling weights
into keep probabilities (token amounts: `assay.stages.output.tokens.estimate_tokens`, stored per
document as `doc__tokens`); ``rebalance_keep`` applies one deterministically from a hash of the file
id and a seed; ``mixture_report`` compares the achieved mixture with the target.
"""

from __future__ import annotations

import xxhash

__all__ = ["plan_rebalance", "rebalance_keep", "target_mixture", "mixture_report"]


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


def mixture_report(records: list[tuple[str, str, int]], probs: dict[str, float], seed: int = 0,
                   totals: dict[str, int] | None = None) -> list[dict]:
    """Apply ``probs`` to ``(doc_id, key, amount)`` records and report achieved vs target per key.

    Returns rows ``{key, available, kept, target_share, achieved_share, keep_prob}`` sorted by key.
    """
    avail: dict[str, int] = {}
    kept: dict[str, int] = {}
    for doc_id, key, amount in records:
        avail[key] = avail.get(key, 0) + amount
        if rebalance_keep(doc_id, probs.get(key, 1.0), seed):
            kept[key] = kept.get(key, 0) + amount
    totals = totals or avail
    target = target_mixture(totals, probs)
    total_kept = sum(kept.values())
    return [
        {"key": k, "available": avail.get(k, 0), "kept": kept.get(k, 0), "target_share": round(target.get(k, 0.0), 6),
         "achieved_share": round(kept.get(k, 0) / total_kept, 6) if total_kept else 0.0,
         "keep_prob": round(probs.get(k, 1.0), 6)}
        for k in sorted(avail)
    ]
