"""Run a step only on the documents of one source, passing the others through untouched.

Readers are chained at the top level of the signals phase (each datatrove reader yields the upstream
documents first, then its own), so documents of one source arrive as contiguous runs; the gate feeds
each run of its source through the wrapped step. The gate shares the wrapped step's stats object, so
datatrove's per-task stats show the real step.
"""

from __future__ import annotations

from itertools import groupby

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep


class SourceGate(PipelineStep):
    def __init__(self, inner: PipelineStep, source: str):
        super().__init__()
        self.inner = inner
        self.source = source
        self.name = f"{inner.name} [{source}]"
        self.type = inner.type
        self.stats = inner.stats
        self.stats.name = f"{self.type}: {self.name}"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is None:
            return
        for src, group in groupby(data, key=lambda d: d.metadata.get("source")):
            if src == self.source:
                yield from self.inner.run(group, rank, world_size)
            else:
                yield from group
