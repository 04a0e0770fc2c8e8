"""Integer codes of repeated strings (words, tokens), numbered in first-seen order."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["first_seen_codes"]


def first_seen_codes(items: list[str]) -> tuple[list[str], np.ndarray]:
    """``(distinct, codes)``: the distinct items in first-seen order and each item's index in it (int64),
    as ``distinct = list(dict.fromkeys(items))`` and ``codes = [distinct.index(x) for x in items]`` define
    them. One dict pass: ``setdefault`` keeps each item's first position, then first positions are
    ranked (the dict keeps them in first-seen order, which is ascending)."""
    first_pos: dict[str, int] = {}
    first = np.fromiter(map(first_pos.setdefault, items, itertools.count()), dtype=np.int64, count=len(items))
    rank = np.zeros(len(items), dtype=np.int64)
    rank[np.fromiter(first_pos.values(), dtype=np.int64, count=len(first_pos))] = np.arange(len(first_pos))
    return list(first_pos), rank[first]
