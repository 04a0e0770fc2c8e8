"""In-memory near-duplicate search for notebooks and benchmarks (datasketch MinHashLSH over the
same shingling and signatures as the batch stages)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from assay.stages.dedup.config import DedupConfig


def lsh_params(threshold: float, num_perm: int, *, min_recall: float = 0.9) -> tuple[int, int]:
    """(bands, rows) with ``bands * rows <= num_perm``: the most rows (fewest false positives) whose
    S-curve still detects a pair at Jaccard ``threshold`` with probability >= ``min_recall``.

    For threshold 0.8 and 112 permutations this is the batch default (14, 8)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if bands < 1:
            break
        if 1.0 - (1.0 - threshold**rows) ** bands >= min_recall:
            best = (bands, rows)
    return best


def _scheme(cfg: DedupConfig) -> str:
    # our values are affine permutations mod 2**hash_bits of xxh3-based shingle hashes: the layout
    # of datasketch 2.x's "affine32"/"affine64" schemes (not its pre-2.0 "legacy" mersenne scheme)
    return "affine32" if cfg.hash_bits == 32 else "affine64"


def _lsh(texts: Sequence[str], threshold: float, cfg: DedupConfig):
    from datasketch import LeanMinHash, MinHashLSH

    from assay.stages.dedup.shingles import compute_signatures

    sb = compute_signatures(list(texts), cfg)
    params = lsh_params(threshold, cfg.num_perm)
    lsh = MinHashLSH(num_perm=cfg.num_perm, params=params)
    mhs: list = [None] * len(texts)
    with lsh.insertion_session() as session:
        for i in np.flatnonzero(sb.has_signature):
            mh = LeanMinHash(seed=cfg.seed, hashvalues=sb.sigs[i], scheme=_scheme(cfg))
            mhs[i] = mh
            session.insert(int(i), mh, check_duplication=False)
    return sb, lsh, mhs


def find_near_duplicates(
    texts: list[str], *, threshold: float = 0.8, config: DedupConfig | dict | None = None
) -> list[int]:
    """One cluster id per text; texts with equal ids form one cluster (id = smallest member index).

    Candidates come from datasketch's MinHashLSH over the batch stage's signatures, banded with
    `lsh_params(threshold)` (the batch default 14x8 at 0.8); texts with the same normalised content
    hash are always clustered. Empty texts are singletons."""
    cfg = DedupConfig.coerce(config)
    n = len(texts)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(x: int, y: int) -> None:
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)

    if n == 0:
        return []
    sb, lsh, mhs = _lsh(texts, threshold, cfg)
    for i, mh in enumerate(mhs):
        if mh is not None:
            for j in lsh.query(mh):
                union(i, int(j))
    first_by_hash: dict[bytes, int] = {}
    for i, e in enumerate(sb.exact):
        if e is not None:
            union(i, first_by_hash.setdefault(e, i))
    return [find(i) for i in range(n)]


def near_duplicates_of(
    text: str, corpus_texts: Sequence[str], threshold: float = 0.8, *, config: DedupConfig | dict | None = None
) -> list[tuple[int, float]]:
    """Indexes of ``corpus_texts`` that are near-duplicates of ``text`` (LSH candidates, plus exact
    content matches), with their signature-estimated Jaccard, most similar first."""
    cfg = DedupConfig.coerce(config)
    sb, lsh, _ = _lsh(list(corpus_texts), threshold, cfg)
    from assay.stages.dedup.shingles import compute_signatures

    q = compute_signatures([text], cfg)
    hits: set[int] = set()
    if q.has_signature[0]:
        from datasketch import LeanMinHash

        hits.update(int(j) for j in lsh.query(LeanMinHash(seed=cfg.seed, hashvalues=q.sigs[0], scheme=_scheme(cfg))))
    if q.exact[0] is not None:
        hits.update(i for i, e in enumerate(sb.exact) if e == q.exact[0])
    est = [(i, float(np.mean(sb.sigs[i] == q.sigs[0])) if q.has_signature[0] else 1.0) for i in hits]
    return sorted(est, key=lambda x: (-x[1], x[0]))
