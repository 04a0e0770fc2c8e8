"""Run-level id check: every document id in a signal store is unique (``docs/output_schema.md``).

Readers build ids unique by construction (``assay.stages.common.readers``); this check is the loud backstop
for what construction cannot see (two sources of one recipe reading the same file under the same family,
a custom reader). Call :func:`check_unique_ids` on ``<run>/signals`` after the signals phase.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

__all__ = ["DuplicateIdError", "check_unique_ids", "duplicate_ids"]


class DuplicateIdError(RuntimeError):
    """Two or more documents of one run share an id."""


def duplicate_ids(ids) -> dict[str, int]:
    """``{id: count}`` of the ids that occur more than once."""
    return {k: v for k, v in Counter(ids).items() if v > 1}


def check_unique_ids(store_dir: str | Path) -> int:
    """Read only the ``id`` column of every ``*.parquet`` part under ``store_dir``; return the number of
    ids, or raise :class:`DuplicateIdError` naming the first duplicates and their part files."""
    import pyarrow.parquet as pq

    parts = sorted(Path(store_dir).glob("*.parquet"))
    where: dict[str, list[str]] = {}
    seen: set[str] = set()
    dups: Counter = Counter()
    n = 0
    for part in parts:
        # ParquetFile.read, not read_table: read_table goes through pyarrow.dataset, whose import costs the
        # launching process about 0.2 CPU-s per run for this one column
        for doc_id in pq.ParquetFile(part).read(columns=["id"]).column("id").to_pylist():
            n += 1
            if doc_id in seen:
                dups[doc_id] += 1
                where.setdefault(doc_id, []).append(part.name)
            else:
                seen.add(doc_id)
    if dups:
        first = list(dups.items())[:5]
        shown = "; ".join(f"{k!r} x{v + 1} (also in {', '.join(sorted(set(where[k])))})" for k, v in first)
        raise DuplicateIdError(f"{len(dups)} document id(s) occur more than once in {store_dir}: {shown}")
    return n
