"""The phases of a run, in run order, and the groups of recipe settings each one's outputs depend on.

`assay.pipeline.build` hashes each group (`group_hashes`) and each phase (`phase_hash`); the runner reruns
exactly the phases whose hash changed; the report lists phases in this order. A module of its own so the
report and the builder both read it without importing each other.
"""

from __future__ import annotations

_ALL = ("signals", "dedup", "decisions", "output")

PHASE_GROUPS: dict[str, tuple[str, ...]] = {
    "signals": ("signals",),
    "dedup_signatures": ("signals", "dedup"),
    "dedup_buckets": ("signals", "dedup"),
    "dedup_clusters": ("signals", "dedup"),
    "decide_plan": ("signals", "dedup", "decisions"),
    "decide": _ALL,
    "repo_docs": (*_ALL, "pack"),
    "finalize": (*_ALL, "pack"),
    "plan": (*_ALL, "pack"),
    "pack": (*_ALL, "pack"),
    "pack_check": (*_ALL, "pack"),
}
PHASE_ORDER = tuple(PHASE_GROUPS)
