"""The decision step: applies the compiled decisions to stored signals, assigns tiers, routes exclusions."""

from __future__ import annotations

from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.writers.disk_base import DiskWriter

from assay.stages.decisions.frame import documents_frame

REASON_KEY = "decision__reason"
STAGE_KEY = "decision__stage"


class Decide(BaseFilter):
    """Keep/exclude and tier every document with `assay.stages.decisions.rules.decide_frame`.

    Writes `tier`, `quality__bucket`, `decision__reason` and `decision__stage` (reject | rules | tier |
    dedup | rebalance) into the metadata, and `dedup__duplicate_of` (the kept copy) for duplicates;
    excluded documents go to `exclusion_writer` with their reason (never to nowhere).

    What needs the whole run (the kept member of each duplicate cluster among the filter survivors,
    rebalancing probabilities) comes from `plan_file` (a `DecidePlan` JSON written by a one-task
    planning phase) or, without one, is planned here from `store_folder` (+ `clusters_folder`), reading
    only the columns the decisions use.
    """

    name = "decide"

    def __init__(
        self,
        spec: dict[str, Any],
        *,
        exclusion_writer: DiskWriter | None = None,
        batch_size: int = 512,
        store_folder: str | None = None,
        clusters_folder: str | None = None,
        plan_file: str | None = None,
    ):
        super().__init__(exclusion_writer=exclusion_writer, batch_size=batch_size)
        self.spec = spec
        self.store_folder = store_folder
        self.clusters_folder = clusters_folder
        self.plan_file = plan_file
        self.rebalance_probs: dict[str, float] | None = None
        self._keepers: Any = "lookup"
        self._spec_model = None

    def _setup(self) -> None:
        from assay.stages.decisions.rebalance import DecidePlan, decide_plan
        from assay.stages.decisions.spec import as_spec

        self._spec_model = as_spec(self.spec)
        plan = None
        if self.plan_file:
            plan = DecidePlan.read(self.plan_file)
        elif self.store_folder and (self._spec_model.rebalance is not None or self.clusters_folder):
            # every rank plans from the same store, so all ranks agree on keepers and probabilities
            plan = decide_plan(self.store_folder, self.clusters_folder, self._spec_model)
        if plan is not None:
            self.rebalance_probs = plan.rebalance_probs
            self._keepers = plan.keepers_frame()
            for key, p in sorted((self.rebalance_probs or {}).items()):
                self.stat_update(f"rebalance_keep_permille/{key}", value=int(round(p * 1000)))

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return self.filter_batch([doc])[0]

    def filter_batch(self, batch: list[Document]) -> list[bool | tuple[bool, str]]:
        from assay.stages.decisions.rules import decide_frame

        if self._spec_model is None:
            self._setup()
        df = documents_frame(batch)
        probs = self.rebalance_probs if self.rebalance_probs is not None else {}
        out = decide_frame(df, self._spec_model, rebalance_probs=probs, keepers_frame=self._keepers).select(
            "bucket", "tier", "reason", "stage", "keep", "duplicate_of"
        )
        results: list[bool | tuple[bool, str]] = []
        for doc, (bucket, tier, reason, stage, keep, dup_of) in zip(batch, out.iter_rows()):
            md = doc.metadata
            md["quality__bucket"] = bucket
            md["tier"] = tier
            md[REASON_KEY] = reason
            md[STAGE_KEY] = stage
            if stage == "dedup":
                md["dedup__duplicate_of"] = dup_of
            if keep:
                self.stat_update(f"tier/{tier}")
                results.append(True)
            else:
                self.stat_update(f"stage/{stage}")
                results.append((False, reason))
        return results
