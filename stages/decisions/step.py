"""The decision step: applies recipe rules to stored signals, assigns tiers, routes exclusions."""

from __future__ import annotations

from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.writers.disk_base import DiskWriter

from assay.stages.common.store import signals_frame


class Decide(BaseFilter):
    """Keep/exclude and tier every document with `assay.stages.decisions.rules.decide_frame`.

    Writes `tier`, `quality__bucket` and `decision__reason` into the metadata; excluded documents go
    to `exclusion_writer` with their reason (never to nowhere).
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
    ):
        super().__init__(exclusion_writer=exclusion_writer, batch_size=batch_size)
        self.spec = spec
        self.store_folder = store_folder
        self.clusters_folder = clusters_folder
        self.rebalance_probs: dict[str, float] | None = None
        self._spec_model = None

    def _setup(self) -> None:
        from assay.pipeline.recipe import DecisionSpec

        self._spec_model = DecisionSpec.model_validate(self.spec)
        if self._spec_model.rebalance and self.store_folder:
            # every rank plans from the whole store, so all ranks draw with the same probabilities
            from assay.stages.decisions.rebalance import plan_from_store

            self.rebalance_probs = plan_from_store(self.store_folder, self._spec_model, self.clusters_folder)
            for key, p in sorted(self.rebalance_probs.items()):
                self.stat_update(f"rebalance_keep_permille/{key}", value=int(round(p * 1000)))

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return self.filter_batch([doc])[0]

    def filter_batch(self, batch: list[Document]) -> list[bool | tuple[bool, str]]:
        import polars as pl

        from assay.stages.decisions.rules import decide_frame

        if self._spec_model is None:
            self._setup()
        df = signals_frame(batch)
        live = df
        if "reject_reason" in df.columns:
            live = df.filter(pl.col("reject_reason").is_null() | (pl.col("reject_reason") == ""))
        sources = set(live["source"].drop_nulls().to_list()) if "source" in live.columns else set()
        for rule in self._spec_model.rules:
            applies = rule.sources() is None or bool(sources & set(rule.sources()))
            if applies and rule.signal not in df.columns:
                # a rule whose signal no document carries is a typo or a missing step: make it visible
                self.stat_update(f"rule_signal_absent/{rule.name}")
        out = decide_frame(df, self._spec_model, rebalance_probs=self.rebalance_probs or {}).select(
            "bucket", "tier", "reason", "keep"
        )
        results: list[bool | tuple[bool, str]] = []
        for doc, (bucket, tier, reason, keep) in zip(batch, out.iter_rows()):
            doc.metadata["quality__bucket"] = bucket
            doc.metadata["tier"] = tier
            doc.metadata["decision__reason"] = reason
            if keep:
                self.stat_update(f"tier/{tier}")
                results.append(True)
            else:
                results.append((False, reason))
        return results
