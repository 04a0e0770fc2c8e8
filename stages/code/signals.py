"""``code_signals_v1``: per-file code signals (language, flags with evidence, numeric stats).

Never drops a document. Writes (all keys prefixed ``code__``):
``language``, ``language_method``, ``family``, ``flags`` (comma-joined), one bool per flag
(``generated``, ``vendored``, ``minified``, ``lockfile``, ``data``, ``encoded``, ``binary``),
``evidence`` (JSON object flag -> list of labels) and the numeric signals of
``assay.stages.code.inspection.compute_signals``. No verdict is stored: the decision step applies the
per-language rule files the recipe names (``decisions.code_rules``) to these signals.
"""

from __future__ import annotations

import json

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

__all__ = ["CodeSignals", "signals_to_metadata"]

PREFIX = "code__"


def signals_to_metadata(sig: dict, flags: set[str], evidence: dict) -> dict:
    """Flatten ``compute_signals`` output into scalar ``code__*`` metadata keys."""
    out = {}
    for k, v in sig.items():
        if isinstance(v, float):
            v = round(v, 6)
        out[PREFIX + k] = v
    out[PREFIX + "flags"] = ",".join(sorted(flags))
    out[PREFIX + "evidence"] = json.dumps({k: v for k, v in sorted(evidence.items())}, sort_keys=True)
    return out


class CodeSignals(PipelineStep):
    """Compute code signals for documents with ``metadata["source"] == "code"`` (others pass through).

    Args:
        only_code: skip documents whose ``source`` is not ``code`` (default True).
        max_chars: files longer than this are analysed on their first ``max_chars`` characters and get
            ``code__truncated_analysis = True``.
    """

    name = "🧮 Code signals"
    type = "🔢 - SIGNALS"

    def __init__(self, *, only_code: bool = True, max_chars: int = 2_000_000, timeout_s: float = 20.0):
        super().__init__()
        self.only_code = only_code
        self.max_chars = int(max_chars)
        self.timeout_s = float(timeout_s)  # per document; past it: reject_reason code_signals_timeout

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.code.inspection import SignalsTimeout, compute_signals, time_limit

        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            if self.only_code and meta.get("source") not in (None, "code"):
                yield doc
                continue
            if meta.get("reject_reason"):
                # binary/oversized/... files: record the flag, nothing to analyse
                if meta["reject_reason"] == "code_binary":
                    meta[PREFIX + "binary"] = True
                yield doc
                continue
            with self.track_time():
                text = doc.text or ""
                truncated = len(text) > self.max_chars
                try:
                    with time_limit(self.timeout_s):
                        sig, flags, evidence = compute_signals(meta.get("path") or doc.id or "", text[: self.max_chars])
                except SignalsTimeout:
                    meta["reject_reason"] = "code_signals_timeout"
                    self.stat_update("reject/code_signals_timeout")
                    yield doc
                    continue
                except Exception:  # noqa: BLE001 - a signal step must not crash a task
                    meta["reject_reason"] = "code_signal_error"
                    self.stat_update("reject/code_signal_error")
                    yield doc
                    continue
                meta.update(signals_to_metadata(sig, flags, evidence))
                meta[PREFIX + "truncated_analysis"] = truncated
                for f in flags:
                    self.stat_update(f"flag/{f}")
                self.stat_update(f"language/{sig.get('language')}")
            yield doc
