"""Signal step: the size of every document, stored so later phases never re-read text to count it.

`doc__bytes` (UTF-8 bytes of the text) and `doc__tokens` (`assay.stages.output.tokens.estimate_tokens`)
feed mixture planning (`decisions.rebalance` with `unit: bytes | tokens`) and the manifest's mixture
report. `dedup__doc_key` is the document's position in the signal store (`rank << 32 | index`), the key
`MinhashSignatures` gives it when the dedup phase reads the store back rank by rank, so the store joins
the dedup clusters without matching on ids (which need not be unique).
"""

from __future__ import annotations

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.output.tokens import estimate_tokens

BYTES = "doc__bytes"
TOKENS = "doc__tokens"
STORE_KEY = "dedup__doc_key"


class DocumentSize(PipelineStep):
    name = "document size"
    type = "📊 - SIGNAL"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for i, doc in enumerate(data or ()):
            text = doc.text if isinstance(doc.text, str) else ""
            with self.track_time():
                doc.metadata[BYTES] = len(text.encode("utf-8", "surrogatepass"))
                doc.metadata[TOKENS] = estimate_tokens(text)
                doc.metadata[STORE_KEY] = (rank << 32) | i
            yield doc
