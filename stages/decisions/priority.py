"""Signal step: the ensemble bucket of each document, stored as `quality__priority`.

The dedup keep policy `highest_priority` keeps the cluster member with the highest value; computing it
in the signals phase (from the same `tiers.bucket_of` the decisions use) lets the clusters phase pick the
kept document without a second pass over the data.
"""

from __future__ import annotations

from typing import Any

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.utils.batching import batched

from assay.stages.decisions.frame import documents_frame


class DedupPriority(PipelineStep):
    name = "dedup priority"
    type = "📊 - SIGNAL"

    def __init__(self, spec: dict[str, Any], *, batch_size: int = 512):
        super().__init__()
        self.spec = spec
        self.batch_size = batch_size

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.decisions.spec import as_spec
        from assay.stages.decisions.tiers import bucket_of

        spec = as_spec(self.spec)
        for batch in batched(data or (), self.batch_size):
            with self.track_time("batch"):
                buckets = bucket_of(documents_frame(batch), spec).to_list()
            for doc, b in zip(batch, buckets):
                doc.metadata["quality__priority"] = b
                yield doc
