"""Text-layer extraction per page with page features (signals).

Signals written (document level, flat scalars):

``pdf__n_pages``          pages in the PDF
``pdf__pages``            JSON list, one dict per page: chars, words, vis/inv (visible/invisible
                          glyphs), inv_ratio, repl (U+FFFD / unmapped glyphs), pua, ctrl, type3,
                          tcov (text area share), icov (image area share), imgs, alpha, garb
                          (garbled-word share), mwl (mean word length), ink (dark-pixel share of a
                          24 dpi render), rot, w, h, tables
``pdf__text_coverage``    mean page text-area share
``pdf__image_coverage``   mean page image-area share
``pdf__replacement_chars``  U+FFFD + private-use + control glyphs in the text layer
``pdf__invisible_text``   share of glyphs drawn invisibly (render mode 3: OCR layers)
``pdf__font_problems``    pages with unmapped glyphs, Type3 fonts or > 20% garbled words
``pdf__garbled_share``    garbled-word share over the document
``pdf__producer``         producer (and creator) metadata
``pdf__scanner_hint``     producer/creator names a scanner / scan-to-PDF / OCR tool
``pdf__text_chars``       non-space characters in the text layer

Reject reasons: ``pdf_timeout``, ``pdf_oversized`` (memory limit), ``pdf_corrupt``,
``pdf_encrypted`` (same codes as the reader; the extraction runs isolated too).
"""

from __future__ import annotations

import json
from functools import partial

from loguru import logger

from datatrove.data import DocumentsPipeline, Media, MediaType
from datatrove.pipeline.base import PipelineStep

from assay.stages.pdf import _isolate
from assay.stages.pdf._pdfdoc import PAGE_SEP, PAGE_TEXTS, extract_document, pdf_media, pdf_source, scanner_hint


def page_signals(features: list[dict], producer: str, creator: str = "") -> dict:
    """Document aggregates of per-page features (plain function, used by notebooks)."""
    n = len(features)
    good = [f for f in features if "error" not in f]
    tot_glyphs = sum(f["vis"] + f["inv"] for f in good)
    words = sum(f["words"] for f in good)
    return {
        "pdf__n_pages": n,
        "pdf__pages": json.dumps(features, separators=(",", ":")),
        "pdf__text_coverage": round(sum(f["tcov"] for f in good) / n, 4) if n else 0.0,
        "pdf__image_coverage": round(sum(f["icov"] for f in good) / n, 4) if n else 0.0,
        "pdf__replacement_chars": int(sum(f["repl"] + f["pua"] + f["ctrl"] for f in good)),
        "pdf__invisible_text": round(sum(f["inv"] for f in good) / tot_glyphs, 4) if tot_glyphs else 0.0,
        "pdf__font_problems": int(sum(1 for f in good if f["repl"] + f["pua"] > 0 or f["type3"] or f["garb"] > 0.2)),
        "pdf__garbled_share": round(sum(f["garb"] * f["words"] for f in good) / words, 4) if words else 0.0,
        "pdf__producer": " / ".join(x for x in (producer, creator) if x)[:200],
        "pdf__scanner_hint": scanner_hint(producer, creator),
        "pdf__text_chars": int(sum(f["chars"] for f in good)),
        "pdf__page_errors": n - len(good),
    }


class PdfTextLayer(PipelineStep):
    """Extract the text layer of each PDF page (reading order, two-column layouts, optional tables).

    Args:
        tables: run pymupdf's table finder and emit tables as Markdown (about 0.3 s per page with
            ruling lines; off by default, the OCR route emits HTML tables).
        ink_dpi: resolution of the ink probe render (0 disables the ``ink`` feature).
        timeout_s / max_memory_mb: per-document limits of the isolated extraction.
        isolate: run extraction in a forked child (default True).
    """

    name = "📄 PDF text layer"
    type = "🔢 - SIGNALS"

    def __init__(self, tables: bool = False, ink_dpi: int = 24, timeout_s: float = 120.0, max_memory_mb: int = 2048,
                 isolate: bool = True, max_pages: int | None = None):
        super().__init__()
        self.tables = bool(tables)
        self.ink_dpi = int(ink_dpi)
        self.timeout_s = float(timeout_s)
        self.max_memory_mb = int(max_memory_mb)
        self.isolate = bool(isolate)
        self.max_pages = max_pages

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pymupdf  # noqa: F401 - import once in the parent, forked children inherit it

        for doc in data:
            self.stat_update("documents")
            if doc.metadata.get("reject_reason") or doc.metadata.get("source", "pdf") != "pdf":
                yield doc
                continue
            src = pdf_source(doc)
            if src is None:
                doc.metadata["reject_reason"] = "pdf_corrupt"
                self.stat_update("reject/pdf_corrupt")
                yield doc
                continue
            with self.track_time():
                status, value = _isolate.run_isolated(
                    partial(extract_document, tables=self.tables, ink_dpi=self.ink_dpi, max_pages=self.max_pages), src,
                    timeout_s=self.timeout_s, max_memory_mb=self.max_memory_mb, isolate=self.isolate,
                )
            reason = None
            if status == _isolate.TIMEOUT:
                reason = "pdf_timeout"
            elif status == _isolate.MEMORY:
                reason = "pdf_oversized"
            elif status != _isolate.OK:
                reason = "pdf_corrupt"
                logger.warning(f"PDF text layer failed for {doc.id}: {status} {value}")
            elif value.get("error") == "encrypted":
                reason = "pdf_encrypted"
            if reason:
                doc.metadata["reject_reason"] = reason
                self.stat_update(f"reject/{reason}")
                yield doc
                continue
            texts, feats = value["texts"], value["features"]
            m = pdf_media(doc)
            if m is None:
                m = Media(id=doc.id, type=MediaType.DOCUMENT, url=doc.metadata.get("url") or doc.id,
                          path=doc.metadata.get("path"))
                doc.media.append(m)
            m.metadata[PAGE_TEXTS] = texts
            doc.text = PAGE_SEP.join(t for t in texts if t.strip())
            doc.metadata.update(page_signals(feats, value["producer"], value["creator"]))
            self.stat_update("pages", value=len(texts))
            self.update_doc_stats(doc)
            yield doc
