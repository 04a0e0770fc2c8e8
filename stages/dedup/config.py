"""Typed configuration of exact + MinHash near-duplicate detection.

One `DedupConfig` drives every phase (signatures, buckets, clusters, annotate) and the notebook API
(`assay.stages.dedup.find_near_duplicates`); all phases of one run, and every index used across runs, must
share the fields that change hashing (see `DedupConfig.fingerprint`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

ShingleKind = Literal["auto", "word", "char"]
KeepPolicy = Literal["highest_priority", "oldest", "first_id"]
KEEP_POLICIES: tuple[str, ...] = ("highest_priority", "oldest", "first_id")


@dataclass(frozen=True)
class DedupConfig:
    """MinHash-LSH + exact-hash dedup settings (defaults: FineWeb's 5-grams, 14 bands x 8 rows).

    Args:
        exact: cluster documents whose normalised texts are equal (exact content hash).
        near: cluster near-duplicates (MinHash LSH bands). At least one of exact/near is on.
        shingle: ``"word"`` n-grams of whitespace/punctuation-separated words, ``"char"`` n-grams of
            characters (scripts written without spaces), or ``"auto"``: chosen per document by a
            script check (long space-less runs of mostly non-ASCII letters -> char).
        n: words per word shingle.
        char_n: characters per char shingle.
        bands, rows: LSH banding; ``bands * rows`` hash functions. Detection probability for a
            pair with Jaccard ``s`` is ``1 - (1 - s**rows)**bands``.
        seed: seed of the permutation parameters (same seed on every worker and every run).
        hash_bits: 32 (default; SIMD-friendly affine permutations mod 2**32) or 64.
        hash_fc: ``"xxhash"`` (the only value): xxh3-64 band hashes, xxh3-128 exact hashes and
            xxh3-64 character hashes; word tokens are hashed for a whole batch at once with a
            vectorised polynomial hash + murmur3 fmix64 (see `assay.stages.dedup.shingles`).
        lowercase, remove_punctuation, normalize_numbers, strip_accents: text normalisation
            applied before shingling and before the exact content hash (whitespace is always
            collapsed). ``normalize_numbers`` maps every digit to ``0``.
        keep_policy: which member of a duplicate cluster is kept:
            ``highest_priority`` (priority signal, then the longest text in UTF-8 bytes, then smallest id),
            ``oldest`` (date, then id),
            ``first_id`` (smallest id). Documents already published by an earlier run (index)
            always win.
        max_records_in_memory: bound on (hash, doc) records held at once by the buckets/index
            phases (12-16 bytes each); the hash space is processed in windows of that size.
        batch_docs, batch_bytes: documents hashed together by the vectorised signature step.
    """

    exact: bool = True
    near: bool = True
    shingle: ShingleKind = "auto"
    n: int = 5
    char_n: int = 5
    bands: int = 14
    rows: int = 8
    seed: int = 1
    hash_bits: Literal[32, 64] = 32
    hash_fc: Literal["xxhash"] = "xxhash"
    lowercase: bool = True
    remove_punctuation: bool = True
    normalize_numbers: bool = True
    strip_accents: bool = True
    keep_policy: KeepPolicy = "highest_priority"
    max_records_in_memory: int = 8_000_000
    batch_docs: int = 512
    batch_bytes: int = 8_000_000

    def __post_init__(self) -> None:
        if self.shingle not in ("auto", "word", "char"):
            raise ValueError(f"shingle must be auto|word|char, got {self.shingle!r}")
        if self.n < 1 or self.char_n < 1:
            raise ValueError("n and char_n must be >= 1")
        if self.bands < 1 or self.rows < 1:
            raise ValueError("bands and rows must be >= 1")
        if self.hash_bits not in (32, 64):
            raise ValueError(f"hash_bits must be 32 or 64, got {self.hash_bits!r}")
        if self.hash_fc != "xxhash":
            raise ValueError(f"hash_fc must be 'xxhash', got {self.hash_fc!r}")
        if self.keep_policy not in KEEP_POLICIES:
            raise ValueError(f"keep_policy must be one of {KEEP_POLICIES}, got {self.keep_policy!r}")
        if not (self.exact or self.near):
            raise ValueError("at least one of exact and near must be enabled")
        if self.max_records_in_memory < 1000:
            raise ValueError("max_records_in_memory must be >= 1000")

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    @property
    def units(self) -> list[int]:
        """Enabled bucket units: ``0..bands-1`` (LSH bands, when ``near``) and ``bands`` (the exact
        content hash, when ``exact``)."""
        return (list(range(self.bands)) if self.near else []) + ([self.bands] if self.exact else [])

    @property
    def n_units(self) -> int:
        return len(self.units)

    def fingerprint(self) -> dict[str, Any]:
        """Fields that change signatures: must match between phases and across runs' indexes."""
        keys = ("shingle", "n", "char_n", "bands", "rows", "seed", "hash_bits", "hash_fc", "lowercase",
                "remove_punctuation", "normalize_numbers", "strip_accents")
        return {k: getattr(self, k) for k in keys} | {"format": 1}

    def fingerprint_json(self) -> str:
        return json.dumps(self.fingerprint(), sort_keys=True)

    def replace(self, **changes: Any) -> DedupConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def coerce(cls, value: DedupConfig | dict | None) -> DedupConfig:
        """Accept a DedupConfig, a YAML-friendly dict of its fields, or None (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = set(value) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise ValueError(f"unknown DedupConfig fields: {sorted(unknown)}")
            return cls(**value)
        raise TypeError(f"expected DedupConfig | dict | None, got {type(value).__name__}")


def dedup_phase_tasks(config: DedupConfig | dict | None = None, *, workers_per_unit: int = 1) -> dict[str, int | None]:
    """How many tasks each dedup phase should run with.

    ``None`` means "any": the step lives inside another phase (signatures inside `signals`, annotate
    inside `decide`) and follows that phase's task count. Buckets: one task per band plus one for the
    exact hash, for the enabled ones (times ``workers_per_unit``, which splits each unit's hash range); any other count
    also works (units are shared round-robin). Clusters: exactly 1.
    """
    cfg = DedupConfig.coerce(config)
    return {
        "signatures": None,
        "buckets": cfg.n_units * max(1, int(workers_per_unit)),
        "clusters": 1,
        "annotate": None,
    }
