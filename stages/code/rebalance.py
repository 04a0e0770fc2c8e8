"""Deterministic rebalancing of code by language / file type.

``plan_rebalance``, ``rebalance_keep`` and ``target_mixture`` live in
``assay.stages.decisions.mixture`` (the decision layer applies them) and are re-exported here.
``plan_rebalance`` turns per-key totals (bytes or estimated tokens), caps and sampling weights
into keep probabilities (token amounts: `assay.stages.output.tokens.estimate_tokens`, stored per
document as `doc__tokens`); ``rebalance_keep`` applies one deterministically from a hash of the file
id and a seed; ``mixture_report`` compares the achieved mixture with the target.
"""

from __future__ import annotations

from assay.stages.decisions.mixture import plan_rebalance, rebalance_keep, target_mixture  # noqa: F401 (one implementation)

__all__ = ["plan_rebalance", "rebalance_keep", "target_mixture", "mixture_report"]


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
