"""Exact + MinHash near-duplicate detection (datatrove-style on-disk phases, vectorised signatures).

Cheap to import: the public names are resolved lazily.

- notebook/benchmark API: `find_near_duplicates`, `near_duplicates_of`, `jaccard`, `DedupConfig`;
- pipeline steps (`assay.stages.dedup.minhash`): `MinhashSignatures`, `MinhashBuckets`, `MinhashClusters`,
  `DedupAnnotate`, plus `dedup_phase_tasks` and `dedup_reason`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "DedupConfig": "assay.stages.dedup.config",
    "dedup_phase_tasks": "assay.stages.dedup.config",
    "find_near_duplicates": "assay.stages.dedup.api",
    "near_duplicates_of": "assay.stages.dedup.api",
    "jaccard": "assay.stages.dedup.shingles",
    "compute_signatures": "assay.stages.dedup.shingles",
    "detection_probability": "assay.stages.dedup.shingles",
    "MinhashSignatures": "assay.stages.dedup.minhash",
    "MinhashBuckets": "assay.stages.dedup.minhash",
    "MinhashClusters": "assay.stages.dedup.minhash",
    "DedupAnnotate": "assay.stages.dedup.minhash",
    "dedup_reason": "assay.stages.dedup.minhash",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from assay.stages.dedup.api import find_near_duplicates, near_duplicates_of
    from assay.stages.dedup.config import DedupConfig, dedup_phase_tasks
    from assay.stages.dedup.minhash import (
        DedupAnnotate,
        MinhashBuckets,
        MinhashClusters,
        MinhashSignatures,
        dedup_reason,
    )
    from assay.stages.dedup.shingles import compute_signatures, detection_probability, jaccard


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'assay.stages.dedup' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
