"""Registry of stage kinds: versioned names -> step classes.

Recipes never name module paths; they name a kind from this table. A new behaviour gets a new
version (`..._v2`) so old recipes keep meaning what they meant.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from assay.pipeline.recipe import RecipeError, StepSpec


@dataclass(frozen=True)
class StageKind:
    name: str
    target: str  # "module:Class"
    role: str  # reader | parse | signal | output
    summary: str

    def load(self) -> type:
        module, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise RecipeError(f"stage kind '{self.name}' is not available: {e}") from None


_KINDS = [
    StageKind("warc_reader_v1", "assay.stages.web.warc:WarcReader", "reader", "WARC/ARC/WET records -> HTML documents"),
    StageKind("html_extract_v1", "assay.stages.web.extract:HtmlExtractor", "parse", "HTML -> text, keeping code and math"),
    StageKind("language_id_v1", "assay.stages.web.langid:LanguageId", "signal", "fastText lid.176 language and score"),
    StageKind("web_heuristics_v1", "assay.stages.web.heuristics:WebHeuristicSignals", "signal",
              "Gopher/C4/FineWeb signals, classic and prose-only"),
    StageKind("code_reader_v1", "assay.stages.code.reader:CodeReader", "reader", "source trees, archives, Stack-style tables"),
    StageKind("code_signals_v1", "assay.stages.code.signals:CodeSignals", "signal",
              "language, generated/vendored/minified/encoded flags, code statistics"),
    StageKind("decontamination_v1", "assay.stages.code.decontam:Decontamination", "signal",
              "n-gram/substring overlap with evaluation sets"),
    StageKind("pdf_reader_v1", "assay.stages.pdf.reader:PdfReader", "reader", "PDF files, directories and WARC records"),
    StageKind("pdf_text_layer_v1", "assay.stages.pdf.textlayer:PdfTextLayer", "parse", "per-page text layer and page features"),
    StageKind("pdf_router_v1", "assay.stages.pdf.routing:PdfRouter", "signal", "per-page text-layer vs OCR routing"),
    StageKind("pdf_ocr_v1", "assay.stages.pdf.ocr:PdfOcr", "parse", "VLM OCR of routed pages (vLLM or endpoint)"),
    StageKind("pdf_artifacts_v1", "assay.stages.pdf.artifacts:PdfArtifactSignals", "signal",
              "detectors for malformed reconstructions"),
    StageKind("quality_scores_v1", "assay.stages.signals.quality:QualityScores", "signal",
              "fastText quality classifiers (web, code, stem) and calibrated percentiles"),
    StageKind("web_quality_v1", "assay.stages.web.quality:WebQualityScore", "signal",
              "learned web quality order: quality__web_score, quality__web_pct, quality__lang"),
    StageKind("url_safety_v1", "assay.stages.web.safety:UrlSafety", "signal",
              "UT1-format domain/URL blocklists and banned URL words: safety__url_blocked, safety__url_reason"),
    StageKind("adult_content_v1", "assay.stages.web.safety:AdultContent", "signal",
              "LDNOOBW adult-word share per language: safety__adult_share, safety__adult_words"),
    StageKind("normalize_v1", "assay.stages.output.normalize:TextNormalizer", "parse", "NFC, mojibake repair, newlines"),
]

REGISTRY: dict[str, StageKind] = {k.name: k for k in _KINDS}


def get_kind(name: str) -> StageKind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise RecipeError(f"unknown stage kind '{name}' (known: {', '.join(sorted(REGISTRY))})") from None


def check_params(cls: type, kind: str, params: dict[str, Any]) -> None:
    """Reject parameters the step's constructor does not take, naming them."""
    sig = inspect.signature(cls.__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    allowed = {n for n in sig.parameters if n != "self"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise RecipeError(f"stage '{kind}': unknown parameter(s) {unknown} (takes: {sorted(allowed)})")


def build_step(spec: StepSpec, *, resolve: Any = None):
    """Instantiate one step from its spec. `resolve` maps parameter values (e.g. `sample:web` paths)."""
    kind = get_kind(spec.kind)
    cls = kind.load()
    params = dict(spec.params)
    check_params(cls, spec.kind, params)
    if resolve is not None:
        params = {k: resolve(v) for k, v in params.items()}
    try:
        return cls(**params)
    except (TypeError, ValueError) as e:
        raise RecipeError(f"stage '{spec.kind}': {e}") from None
