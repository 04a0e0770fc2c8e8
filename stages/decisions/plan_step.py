"""Mixture planning as its own one-task phase, and the decide step that reads its plan.

`MixturePlan` (phase `plan`, one task) reads from the signal store only the columns planning needs
(no text: ids, source, stored sizes `doc__bytes` / `doc__tokens`, the rebalance key and the signals
the other decisions read), joins the dedup lookup, calls `assay.stages.decisions.rebalance.plan(df,
spec)` and writes `plan.json` (a few hundred bytes). `PlannedDecide` is the decide step of every
decide task: it reads that file instead of planning again, so a decide task costs the same whether
the phase has 2 tasks or 2,000.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.decisions.step import Decide

PLAN_VERSION = 1
BASE_COLUMNS = ("id", "source", "reject_reason", "dedup__doc_key", "doc__bytes", "doc__tokens")


def _decision_spec(spec: Any):
    try:  # the typed decision models move into stages/decisions/spec.py
        from assay.stages.decisions.spec import DecisionSpec  # type: ignore[import-not-found]
    except ImportError:
        from assay.pipeline.recipe import DecisionSpec
    return spec if isinstance(spec, DecisionSpec) else DecisionSpec.model_validate(spec or {})


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def plan_columns(spec: Any, available: list[str]) -> list[str]:
    """The store columns that planning reads: `text` only for a store written before sizes were
    stored (`doc__bytes` / `doc__tokens` missing: a re-tier of an older run)."""
    spec = _decision_spec(spec)
    want = set(BASE_COLUMNS)
    if not {"doc__bytes", "doc__tokens"} <= set(available):
        want.add("text")
    want.add(_get(spec.rebalance, "key", "code__language"))
    want.update(r.signal for r in spec.rules)
    for weights in (spec.ensemble or {}).values():
        want.update(weights)
    code_rules = _get(spec, "code_rules", None)
    return [c for c in available if c in want or (code_rules and c.startswith("code__"))]


def read_plan_frame(store_folder: str | Path, spec: Any, clusters_folder: str | Path | None = None):
    """The store's planning columns (one frame, text never read), joined with the dedup lookup."""
    import polars as pl
    import pyarrow.parquet as pq

    from assay.stages.common.store import list_parts
    from assay.stages.decisions.rebalance import join_dedup_lookup

    frames = []
    for part in list_parts(store_folder):
        names = pq.ParquetFile(part).schema_arrow.names
        frames.append(pl.read_parquet(part, columns=plan_columns(spec, names)))
    df = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    if clusters_folder is not None:
        df = join_dedup_lookup(df, Path(clusters_folder) / "lookup.parquet")
    return df


def write_plan(path: str | Path, available: dict[str, int], probabilities: dict[str, float], spec: Any) -> dict:
    spec = _decision_spec(spec)
    rb = spec.rebalance
    plan = {
        "version": PLAN_VERSION,
        "source": _get(rb, "source", "code"),
        "key": _get(rb, "key", "code__language"),
        "unit": _get(rb, "unit", "bytes"),
        "available": dict(sorted(available.items())),
        "probabilities": {k: float(v) for k, v in sorted(probabilities.items())},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return plan


def load_plan(path: str | Path) -> dict:
    plan = json.loads(Path(path).read_text(encoding="utf-8"))
    if plan.get("version") != PLAN_VERSION:
        raise ValueError(f"{path}: plan version {plan.get('version')} (expected {PLAN_VERSION})")
    return plan


class MixturePlan(PipelineStep):
    """Phase `plan` (one task): plan the mixture from the stored signals and write `plan_file`."""

    name = "mixture plan"
    type = "🧮 - PLAN"

    def __init__(self, store_folder: str, spec: dict[str, Any], plan_file: str, *, clusters_folder: str | None = None):
        super().__init__()
        self.store_folder = str(store_folder)
        self.spec = spec
        self.plan_file = str(plan_file)
        self.clusters_folder = None if clusters_folder is None else str(clusters_folder)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.decisions.rebalance import plan

        if data:
            yield from data
        if rank != 0:
            return
        spec = _decision_spec(self.spec)
        with self.track_time():
            df = read_plan_frame(self.store_folder, spec, self.clusters_folder)
            available, probs = plan(df, spec)
            write_plan(self.plan_file, available, probs, spec)
        self.stat_update("documents_planned", value=df.height)
        for key, p in sorted(probs.items()):
            self.stat_update(f"rebalance_keep_permille/{key}", value=int(round(p * 1000)))


class PlannedDecide(Decide):
    """`Decide` with the keep probabilities of the run's `plan.json` (never re-planned per task)."""

    def __init__(self, spec: dict[str, Any], *, plan_file: str | None = None, **kwargs: Any):
        kwargs.pop("store_folder", None)
        super().__init__(spec, store_folder=None, **kwargs)
        self.plan_file = None if plan_file is None else str(plan_file)

    def _setup(self) -> None:
        super()._setup()
        if self.plan_file is not None:
            self.rebalance_probs = load_plan(self.plan_file)["probabilities"]


def mixture_report_from_plan(plan: dict, written: dict[str, int]) -> dict[str, Any]:
    """Target vs achieved mixture per key: `plan` from `plan.json`, `written` the amount per key in the
    output shards (same unit as the plan)."""
    available, probs = plan["available"], plan["probabilities"]
    target = {k: available[k] * probs.get(k, 1.0) for k in available}
    t_total = sum(target.values()) or 1.0
    w_total = sum(written.values()) or 1
    rows = [
        {
            "key": k,
            "available": available[k],
            "keep_probability": round(probs.get(k, 1.0), 6),
            "target_share": round(target[k] / t_total, 6),
            "written": int(written.get(k, 0)),
            "achieved_share": round(written.get(k, 0) / w_total, 6),
        }
        for k in sorted(available)
    ]
    return {"source": plan["source"], "key": plan["key"], "unit": plan["unit"], "rows": rows}
