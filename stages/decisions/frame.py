"""Frames the decision functions take: a batch of datatrove Documents, or a run's typed signal store.

`documents_frame(docs)` is what the batch `Decide` step decides; `scan_store(folder, columns)` reads
only the named columns of a typed signal store (`signals/part-*.parquet`, one schema for every part).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

__all__ = ["documents_frame", "scan_store", "store_columns", "needed_columns"]


def documents_frame(docs: Iterable[Any]):
    """A polars frame of the documents' scalar signals (no text): `id`, `source` and every metadata key."""
    import polars as pl

    rows = []
    for doc in docs:
        row = {"id": doc.id, "source": doc.metadata.get("source")}
        for k, v in doc.metadata.items():
            if k not in row and not isinstance(v, (list, dict, tuple)):
                row[k] = v
        rows.append(row)
    return pl.DataFrame(rows, strict=False, infer_schema_length=None)


def _parts(folder: str | Path) -> list[str]:
    return [str(p) for p in sorted(Path(folder).glob("part-*.parquet"))]


def store_columns(folder: str | Path) -> list[str]:
    """The column names of a typed signal store (empty when it has no part)."""
    import pyarrow.parquet as pq

    parts = _parts(folder)
    return list(pq.read_schema(parts[0]).names) if parts else []


def scan_store(folder: str | Path, columns: Iterable[str] | None = None, *, doc_keys: Iterable[int] | None = None):
    """The named columns (those present) of every part of a signal store, as one polars DataFrame;
    with `doc_keys`, only the rows whose `dedup__doc_key` is one of them."""
    import polars as pl

    parts = _parts(folder)
    if not parts:
        return pl.DataFrame()
    have = store_columns(folder)
    cols = have if columns is None else [c for c in dict.fromkeys(columns) if c in have]
    keys = None if doc_keys is None or "dedup__doc_key" not in have else [int(k) for k in doc_keys]
    try:
        lf = pl.scan_parquet(parts, missing_columns="insert", extra_columns="ignore")
        if keys is not None:
            lf = lf.filter(pl.col("dedup__doc_key").is_in(keys))
        return lf.select(cols).collect()
    except pl.exceptions.PolarsError:
        # a store written before the typed schema (parts may disagree on a column's type): part by part
        frames = []
        for p in parts:
            df = pl.read_parquet(p)
            if keys is not None and "dedup__doc_key" in df.columns:
                df = df.filter(pl.col("dedup__doc_key").is_in(keys))
            frames.append(df.select([c for c in cols if c in df.columns]))
        return pl.concat(frames, how="diagonal_relaxed")


def needed_columns(spec, *, with_text: bool = False) -> list[str]:
    """Every column the decisions of `spec` read (for a projection of the store)."""
    from assay.stages.decisions.code_rules import load_code_rules, rules_dir_of
    from assay.stages.decisions.dedup import PRIORITY_SIGNAL
    from assay.stages.decisions.mixture import AMOUNT_COLUMN, TOKENS_COLUMN
    from assay.stages.decisions.spec import as_spec
    from assay.stages.decisions.tiers import percentile_signals

    spec = as_spec(spec)
    cols = ["id", "source", "reject_reason", "dedup__doc_key", "dedup__exact_hash", PRIORITY_SIGNAL, AMOUNT_COLUMN,
            TOKENS_COLUMN]
    # a rule reads its signal and its `unless` signal: without the latter every document the `unless` exempts
    # would fail the rule in a plan computed from this projection (e.g. dedup's keepers among the survivors)
    cols += [c for r in spec.rules for c in _rule_signals(r)]
    cols += sorted(percentile_signals(spec))
    folder = rules_dir_of(spec.code_rules)
    if folder is not None:
        cols.append("code__language")
        cols += [c for rules in load_code_rules(folder).families.values() for r in rules for c in _rule_signals(r)]
    if spec.rebalance is not None:
        cols.append(spec.rebalance.key)
        if with_text:
            cols.append("text")
    return list(dict.fromkeys(cols))


def _rule_signals(rule) -> list[str]:
    # (code-family rules have no `unless`)
    conds = rule.unless_conditions() if hasattr(rule, "unless_conditions") else []
    return [rule.signal] + [c.signal for c in conds]
