"""Mixture planning: language / file-type rebalancing of one source, and the decide plan of a run.

Recipe block (`decisions.rebalance`, a `RebalanceSpec`):
    {source: code, key: code__language, unit: bytes | tokens, caps: {python: 50000000, "*": ...},
     weights: {javascript: 0.5}, seed: 0}
Keep probabilities come from `plan_rebalance` over the amounts that survive every other decision
(dedup among survivors included), and each document is kept by a deterministic draw on its id
(`rebalance_keep`), so every rank, a re-tier run and a notebook agree.

    plan(df, spec) -> (amount per key, keep probability per key)      # a whole-run frame
    decide_plan(store, clusters, spec) -> DecidePlan                     # what the decide tasks need
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.stages.decisions.dedup import join_dedup_lookup, keepers
from assay.stages.decisions.frame import needed_columns, scan_store
from assay.stages.decisions.mixture import amounts_of, plan_rebalance, rebalance_keep  # noqa: F401
from assay.stages.decisions.rules import decide_frame
from assay.stages.decisions.spec import as_spec

__all__ = ["plan", "plan_probabilities", "plan_from_store", "join_dedup_lookup",
           "DecidePlan", "decide_plan", "store_frame"]


def plan(df, spec) -> tuple[dict[str, int], dict[str, float]]:
    """(amount available per key after every other decision, keep probability per key)."""
    spec = as_spec(spec)
    rb = spec.rebalance
    if rb is None or df.height == 0 or rb.key not in df.columns:
        return {}, {}
    decided = decide_frame(df, spec, _plan=False)  # everything but rebalancing
    amounts = amounts_of(decided, rb)
    return amounts, plan_rebalance(amounts, rb.caps, rb.weights)


def plan_probabilities(df, spec) -> dict[str, float]:
    """Keep probability per key, from a whole-run frame of stored signals and a DecisionSpec."""
    return plan(df, spec)[1]


def store_frame(store_folder, clusters_folder=None, spec=None, *, with_text: bool = False,
                cluster_members_only: bool = False):
    """The store's columns the decisions of `spec` read (all columns without a spec), with dedup joined;
    `cluster_members_only`: only the documents of duplicate clusters (what the dedup keepers need)."""
    import polars as pl

    cols = None if spec is None else needed_columns(spec, with_text=with_text)
    lookup = Path(clusters_folder) / "lookup.parquet" if clusters_folder is not None else None
    keys = None
    if cluster_members_only and lookup is not None and lookup.exists():
        keys = pl.read_parquet(lookup, columns=["doc_key"])["doc_key"].to_list()
    df = scan_store(store_folder, cols, doc_keys=keys)
    if lookup is not None:
        df = join_dedup_lookup(df, lookup)
    return df


def plan_from_store(store_folder: str | Path, spec, clusters_folder: str | Path | None = None) -> dict[str, float]:
    """Keep probability per key, reading the signal store (and dedup lookup) of a run."""
    return plan(store_frame(store_folder, clusters_folder, spec, with_text=True), spec)[1]


@dataclass
class DecidePlan:
    """What every decide task needs from the whole run: rebalancing probabilities and the kept member of
    each duplicate cluster among the filter survivors. Small: one row per cluster, one number per key."""

    rebalance_probs: dict[str, float] | None = None
    keepers: list[dict[str, Any]] = field(default_factory=list)
    amounts: dict[str, int] = field(default_factory=dict)

    def keepers_frame(self):
        import polars as pl

        schema = {"dedup__cluster_id": pl.Int64, "keeper_id": pl.String, "keeper_exact_hash": pl.String,
                  "published": pl.Boolean}
        return pl.DataFrame(self.keepers, schema=schema)

    def to_json(self) -> dict[str, Any]:
        return {"rebalance_probs": self.rebalance_probs, "keepers": self.keepers, "amounts": self.amounts}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "DecidePlan":
        return cls(rebalance_probs=d.get("rebalance_probs"), keepers=list(d.get("keepers") or []),
                   amounts=dict(d.get("amounts") or {}))

    def write(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.to_json(), sort_keys=True))
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: str | Path) -> "DecidePlan":
        return cls.from_json(json.loads(Path(path).read_text()))


def decide_plan(store_folder, clusters_folder, spec) -> DecidePlan:
    """The plan of a run from its store (only the columns the decisions read) and dedup lookup."""
    import polars as pl

    spec = as_spec(spec)
    # without rebalancing only the members of duplicate clusters matter (a few columns of a few rows)
    from assay.stages.decisions.frame import store_columns
    from assay.stages.decisions.mixture import AMOUNT_COLUMN

    # text only for a store without stored sizes (a re-tier of a run written before `doc__bytes`)
    with_text = spec.rebalance is not None and AMOUNT_COLUMN not in store_columns(store_folder)
    df = store_frame(store_folder, clusters_folder, spec, with_text=with_text,
                     cluster_members_only=spec.rebalance is None)
    if df.height == 0:
        return DecidePlan(rebalance_probs={} if spec.rebalance else None)
    decided = decide_frame(df, spec, _plan=False)
    kept: list[dict[str, Any]] = []
    if "dedup__cluster_id" in df.columns:
        pre = decide_frame(df.drop([c for c in df.columns if c.startswith("dedup__is_")]), spec, _plan=False)
        k = keepers(df.with_columns(pre["reason"].is_null().alias("__survives"), pre["bucket"]))
        kept = k.with_columns(pl.col("dedup__cluster_id").cast(pl.Int64)).to_dicts()
    if spec.rebalance is None:
        return DecidePlan(rebalance_probs=None, keepers=kept)
    amounts = amounts_of(decided, spec.rebalance)
    return DecidePlan(rebalance_probs=plan_rebalance(amounts, spec.rebalance.caps, spec.rebalance.weights),
                      keepers=kept, amounts=amounts)
