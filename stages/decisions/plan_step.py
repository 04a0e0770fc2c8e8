"""Mixture planning as its own one-task phase, and the decide step that reads its plan.

`MixturePlan` (phase `plan`, one task) reads from the signal store only the columns the decisions
need (no text when `doc__bytes` is stored), joins the dedup lookup, and writes with
`assay.stages.decisions.rebalance.decide_plan` a small `plan.json`: the kept member of every duplicate
cluster among the filter survivors, and the rebalancing probabilities. Every decide task reads that file
(`Decide(spec, plan_file=...)`) instead of planning again, so a decide task costs the same whether the
phase has 2 tasks or 2,000.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.decisions.step import Decide

PLAN_VERSION = 2


def _decision_spec(spec: Any):
    from assay.stages.decisions.spec import as_spec

    return as_spec(spec)


def write_plan(path: str | Path, plan: Any, spec: Any) -> dict:
    """Write a `DecidePlan` (keepers of duplicate clusters, rebalancing probabilities) as `plan.json`, with
    the mixture fields the finalize phase's mixture report reads."""
    spec = _decision_spec(spec)
    rb = spec.rebalance
    doc = {"version": PLAN_VERSION, **plan.to_json()}
    if rb is not None:
        doc.update({
            "source": rb.source, "key": rb.key, "unit": rb.unit,
            "available": dict(sorted((plan.amounts or {}).items())),
            "probabilities": {k: float(v) for k, v in sorted((plan.rebalance_probs or {}).items())},
        })
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return doc


def load_plan(path: str | Path) -> dict:
    plan = json.loads(Path(path).read_text(encoding="utf-8"))
    if plan.get("version") != PLAN_VERSION:
        raise ValueError(f"{path}: plan version {plan.get('version')} (expected {PLAN_VERSION})")
    return plan


class MixturePlan(PipelineStep):
    """Phase `plan` (one task): what every decide task needs from the whole run, computed once from the
    stored signals (no text when sizes are stored): the kept member of each duplicate cluster among the
    filter survivors and the rebalancing probabilities. Writes `plan_file` (`DecidePlan` JSON)."""

    name = "mixture plan"
    type = "🧮 - PLAN"

    def __init__(self, store_folder: str, spec: dict[str, Any], plan_file: str, *, clusters_folder: str | None = None):
        super().__init__()
        self.store_folder = str(store_folder)
        self.spec = spec
        self.plan_file = str(plan_file)
        self.clusters_folder = None if clusters_folder is None else str(clusters_folder)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.decisions.rebalance import decide_plan

        if data:
            yield from data
        if rank != 0:
            return
        spec = _decision_spec(self.spec)
        with self.track_time():
            plan = decide_plan(self.store_folder, self.clusters_folder, spec)
            write_plan(self.plan_file, plan, spec)
        self.stat_update("clusters_planned", value=len(plan.keepers))
        for key, p in sorted((plan.rebalance_probs or {}).items()):
            self.stat_update(f"rebalance_keep_permille/{key}", value=int(round(p * 1000)))


# the decide step of a planned run is `Decide(spec, plan_file=...)`; the old name stays for callers
PlannedDecide = Decide


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
