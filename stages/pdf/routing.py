"""Per-page routing: text layer or VLM OCR, decided by a small logistic-regression model.

The model (``stages/pdf/models/router.json``) is trained by
``python -m assay.stages.pdf.train_router --out stages/pdf/models/router.json`` on pages of
``../shared/data/pdf`` (labelled from ``PDF_INVENTORY.tsv`` plus per-file labels for known bad text
layers) and synthetic scans of born-digital pages (see ``stages/pdf/train_router.py``). It is a
plain numpy dot product over features the text-layer step already stores in ``pdf__pages``.

Public API: ``route_pages(path) -> list["text" | "ocr"]`` and ``page_vector`` / ``RouterModel``.

``PdfRouter`` writes ``pdf__route`` (JSON list), ``pdf__route_scores`` (JSON list of P(ocr)),
``pdf__ocr_pages``, ``pdf__ocr_share``; stats ``pages/text`` and ``pages/ocr``.
"""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

DEFAULT_MODEL = os.path.join(os.path.dirname(__file__), "models", "router.json")

FEATURE_NAMES = (
    "log_chars", "few_chars_with_image", "few_chars_no_image", "tcov", "icov", "full_image", "inv_ratio",
    "bad_glyph_ratio", "garb", "alpha", "vowel_deviation", "ink", "ink_no_text", "visible_text_on_image",
    "scanner", "type3", "mwl", "short_words",
)


def page_vector(f: dict, scanner: bool = False) -> list[float]:
    """Feature vector of one page (``f``: one entry of ``pdf__pages``)."""
    chars = float(f.get("chars", 0))
    words = float(f.get("words", 0))
    ink = float(f.get("ink") or 0.0)
    icov = float(f.get("icov", 0.0))
    inv = float(f.get("inv_ratio", 0.0))
    bad = float(f.get("repl", 0) + f.get("pua", 0) + f.get("ctrl", 0))
    mwl = float(f.get("mwl", 0.0))
    few = 1.0 if chars < 20 else 0.0
    vowel = f.get("vowel")
    return [
        math.log1p(chars) / 8.0,
        few * (1.0 if icov > 0.05 else 0.0),
        few * (1.0 if icov <= 0.05 else 0.0),
        float(f.get("tcov", 0.0)),
        icov,
        1.0 if icov > 0.85 else 0.0,
        inv,
        min(1.0, bad / max(chars, 1.0) * 10.0),
        float(f.get("garb", 0.0)),
        float(f.get("alpha", 0.0)),
        abs(float(vowel) - 0.38) if vowel is not None else 0.0,
        ink,
        (1.0 if ink > 0.005 else 0.0) * (1.0 if chars < 20 else 0.0),
        icov * (1.0 - inv) * (1.0 if chars > 0 else 0.0),
        1.0 if scanner else 0.0,
        1.0 if f.get("type3") else 0.0,
        min(mwl, 15.0) / 10.0,
        (1.0 if 0 < mwl < 3.0 else 0.0),
    ]


class RouterModel:
    """Standardised logistic regression stored as JSON."""

    def __init__(self, weights: list[float], bias: float, mean: list[float], std: list[float], threshold: float = 0.5,
                 meta: dict | None = None):
        self.weights = list(weights)
        self.bias = float(bias)
        self.mean = list(mean)
        self.std = list(std)
        self.threshold = float(threshold)
        self.meta = meta or {}

    @classmethod
    def load(cls, path: str = DEFAULT_MODEL) -> "RouterModel":
        with open(path) as fh:
            d = json.load(fh)
        if d.get("features") != list(FEATURE_NAMES):
            raise ValueError(f"router model {path} was trained on other features; retrain it")
        return cls(d["weights"], d["bias"], d["mean"], d["std"], d.get("threshold", 0.5), d.get("meta"))

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            json.dump({"kind": "logistic_regression", "features": list(FEATURE_NAMES), "weights": self.weights,
                       "bias": self.bias, "mean": self.mean, "std": self.std, "threshold": self.threshold,
                       "meta": self.meta}, fh, indent=1)

    def score(self, vec: list[float]) -> float:
        z = self.bias
        for x, m, s, w in zip(vec, self.mean, self.std, self.weights):
            z += w * (x - m) / s
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def route(self, f: dict, scanner: bool = False) -> tuple[str, float]:
        if "error" in f:
            return "ocr", 1.0
        # a blank page (no ink, no text) has nothing to OCR
        if (f.get("ink") is not None and f["ink"] < 0.0005) and f.get("chars", 0) == 0:
            return "text", 0.0
        p = self.score(page_vector(f, scanner))
        return ("ocr" if p >= self.threshold else "text"), p


@lru_cache(maxsize=4)
def load_router(path: str = DEFAULT_MODEL) -> RouterModel:
    return RouterModel.load(path)


def route_features(features: list[dict], scanner: bool = False, model: RouterModel | None = None) -> tuple[list[str], list[float]]:
    model = model or load_router()
    routes, scores = [], []
    for f in features:
        r, p = model.route(f, scanner)
        routes.append(r)
        scores.append(round(p, 4))
    return routes, scores


def route_pages(path: str, *, model_path: str | None = None) -> list[str]:
    """``"text"`` or ``"ocr"`` for each page of the PDF at ``path``."""
    from assay.stages.pdf._pdfdoc import extract_document, scanner_hint

    d = extract_document(path)
    if d.get("error"):
        raise ValueError(f"cannot route {path}: {d['error']}")
    model = load_router(model_path or DEFAULT_MODEL)
    routes, _ = route_features(d["features"], scanner_hint(d["producer"], d["creator"]), model)
    return routes


class PdfRouter(PipelineStep):
    """Route each page of a PDF document to the text layer or to OCR (needs ``PdfTextLayer`` first)."""

    name = "🧭 PDF page router"
    type = "🔢 - SIGNALS"

    def __init__(self, model_path: str | None = None, threshold: float | None = None):
        super().__init__()
        self.model_path = model_path
        self.threshold = threshold

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        model = None
        for doc in data:
            self.stat_update("documents")
            pages = doc.metadata.get("pdf__pages")
            if doc.metadata.get("reject_reason") or not pages:
                yield doc
                continue
            if model is None:
                model = RouterModel.load(self.model_path or DEFAULT_MODEL)
                if self.threshold is not None:
                    model.threshold = float(self.threshold)
            with self.track_time():
                feats = json.loads(pages)
                routes, scores = route_features(feats, bool(doc.metadata.get("pdf__scanner_hint")), model)
            n_ocr = routes.count("ocr")
            doc.metadata["pdf__route"] = json.dumps(routes)
            doc.metadata["pdf__route_scores"] = json.dumps(scores)
            doc.metadata["pdf__ocr_pages"] = n_ocr
            doc.metadata["pdf__ocr_share"] = round(n_ocr / len(routes), 4) if routes else 0.0
            self.stat_update("pages/ocr", value=n_ocr)
            self.stat_update("pages/text", value=len(routes) - n_ocr)
            yield doc
