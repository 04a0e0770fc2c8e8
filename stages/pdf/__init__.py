"""PDF family: ingestion, text layer, per-page OCR routing, VLM OCR, artifact detectors.

Public notebook API (light imports; pymupdf is loaded lazily):
``detect_artifacts(text, *, finish_reason="stop", text_layer=None, ink=None) -> list[str]`` and
``route_pages(path) -> list[str]``.
"""

from assay.stages.pdf.artifacts import DETECTORS, detect_artifacts
from assay.stages.pdf.routing import route_pages

__all__ = ["DETECTORS", "detect_artifacts", "route_pages"]
