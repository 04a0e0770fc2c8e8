"""Quality classifier scores as signals: ``fasttext_<name>__score`` and ``fasttext_<name>__pct``.

Wraps :mod:`classifiers` (which never imports datatrove). Models are loaded once per worker,
lazily inside ``run()``; documents are scored in batches. Never drops a document.
"""
from __future__ import annotations

from typing import Iterable

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.common.memo import WHOLE_TEXT_MAX_CHARS, ByText, TextMemo

# {model path: score} of the documents scored on their whole text, for the web quality step of the same
# worker, which scores the same texts with the English model again (``assay.stages.web.quality``)
SCORED = TextMemo(max_chars=WHOLE_TEXT_MAX_CHARS)
# {model path: (normalised line, prose view line, score)} of the documents too long for ``SCORED``: the web quality
# step reads a prefix of their text, and where that prefix gives the same line (the models read the first few
# thousand characters) and the same prose view line (``QualityModel.prose_lines``: the lines of 10+ words, which a
# longer prefix may add to), the score is the same number
SCORED_LINES = TextMemo()
# {Normalization: normalised line} of the documents scored on their whole text, for the web quality step, whose
# models normalise the same text (``assay.classifiers.text.line_from_known``: the multilingual web model's line is
# the stem model's cut shorter)
LINES = TextMemo(max_chars=WHOLE_TEXT_MAX_CHARS)

# which models apply to which source (only models listed in ``models`` are ever loaded/used)
DEFAULT_SOURCES: dict[str, list[str]] = {"web": ["web", "stem"], "code": ["code", "code_corruption"],
                                         "pdf": ["web", "stem", "pdf"]}


def signal_name(model: str) -> str:
    """``"web"`` -> ``"fasttext_web"``; a model path -> ``fasttext_<file stem>``."""
    from pathlib import Path  # noqa: PLC0415

    stem = Path(str(model)).stem if str(model).endswith((".ftz", ".bin")) else str(model)
    return f"fasttext_{stem}"


class QualityScores(PipelineStep):
    """Score documents with fastText quality classifiers.

    Args:
        models: shipped model names (``web``, ``code``, ``stem``, ``code_corruption``, ``pdf``) or model paths.
        batch_size: documents per prediction batch (scores do not depend on it). 128: a batch holds its
            documents while the steps before it fill it, so it bounds how many long pages a worker holds at
            once (bench_e2e 5x, largest process: 467 MiB at 512, 449 at 128, 450 at 64; outputs identical).
        sources: which models apply to which ``metadata["source"]``; default
            ``{"web": ["web", "stem"], "code": ["code", "code_corruption"], "pdf": ["web", "stem", "pdf"]}``. Only models listed in
            ``models`` are used; a document whose source is not in the map gets every model, and a
            model that no entry mentions (e.g. a custom model path) applies to every source.
        text_max_chars: text is cut to this many characters before normalisation (bounds the work).

    Writes, for every model in ``models`` and every document, ``fasttext_<name>__score`` (float in
    [0, 1], higher = better) and ``fasttext_<name>__pct`` (token-weighted percentile on the model's
    reference sample), both ``None`` where the model does not apply to the document's source, the
    document already has a ``reject_reason``, or its text is empty.
    """

    name = "🏅 quality scores"
    type = "📊 - SIGNALS"

    def __init__(self, models: list[str] | None = None, batch_size: int = 128,
                 sources: dict[str, list[str]] | None = None, text_max_chars: int = 100_000):
        super().__init__()
        self.models = list(models) if models is not None else ["web"]
        if not self.models:
            raise ValueError("QualityScores: models must not be empty")
        self.batch_size = max(1, int(batch_size))
        self.sources = {k: list(v) for k, v in (sources if sources is not None else DEFAULT_SOURCES).items()}
        self.text_max_chars = int(text_max_chars)
        self.keys = {m: signal_name(m) for m in self.models}
        self._loaded: dict | None = None
        self._by_text: ByText | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_loaded"] = None  # never pickle fastText handles
        state["_by_text"] = None
        return state

    def _load(self, m: str):
        """Model ``m``, loaded on first use: a worker that only sees web documents never loads the code
        and PDF models."""
        if self._loaded is None:
            self._loaded = {}
        if m not in self._loaded:
            import assay.classifiers  # noqa: PLC0415

            self._loaded[m] = assay.classifiers.load(m)
        return self._loaded[m]

    def _mentioned(self, m: str, names: list[str]) -> bool:
        return m in names or self.keys[m].removeprefix("fasttext_") in names

    def models_for(self, source: str | None) -> list[str]:
        """Models that apply to documents of ``source``. A model the source map never mentions
        (e.g. a custom model path) applies to every source; so does every model for a source the
        map does not list."""
        if source in self.sources:
            wanted = self.sources[source]
            return [m for m in self.models if self._mentioned(m, wanted)
                    or not any(self._mentioned(m, v) for v in self.sources.values())]
        return list(self.models)

    def _score_batch(self, batch: list[Document]) -> None:
        """Score ``batch``: each distinct text once (``_score_texts``), a copy of a text scored earlier in this run or
        in this batch (same source) takes that text's values."""
        by_text = getattr(self, "_by_text", None)
        if by_text is None:
            return self._score_texts(batch)
        out = [f"{self.keys[m]}__{v}" for m in self.models for v in ("score", "pct")]
        fresh: list[Document] = []
        first: dict[tuple, Document] = {}  # key -> the batch's first document of that text
        copies: list[tuple[Document, Document]] = []
        for doc in batch:
            meta = doc.metadata
            key = None
            if not meta.get("reject_reason") and doc.text and doc.text.strip():
                key = by_text.key(doc.text, meta.get("source"))
            known = by_text.get(key)
            if known is not None:
                meta.update(zip(out, known))
                self.stat_update("copies")
            elif key in first:
                copies.append((doc, first[key]))
            else:
                if key is not None:
                    first[key] = doc
                fresh.append(doc)
        if fresh:
            self._score_texts(fresh)
        for key, doc in first.items():
            by_text.put(key, tuple(doc.metadata[k] for k in out))
        for doc, orig in copies:
            doc.metadata.update((k, orig.metadata[k]) for k in out)
            self.stat_update("copies")

    def _score_texts(self, batch: list[Document]) -> None:
        from assay.classifiers.calibrate import percentile  # noqa: PLC0415
        from assay.classifiers.text import normalize  # noqa: PLC0415

        normalized: dict[tuple, list[str]] = {}  # one normalisation pass per distinct config (web+stem share)
        known: dict[int, dict[str, float]] = {}  # batch index -> {model path: score}, for SCORED
        known_lines: dict[int, dict[str, tuple[str, str | None, float]]] = {}  # with the line and view line, for SCORED_LINES
        lines: dict[int, dict] = {}  # batch index -> {Normalization: line}, for LINES
        for m in self.models:
            key = self.keys[m]
            idx = []
            for i, doc in enumerate(batch):
                doc.metadata[f"{key}__score"] = None
                doc.metadata[f"{key}__pct"] = None
                if doc.metadata.get("reject_reason") or not doc.text or not doc.text.strip():
                    continue
                if m in self.models_for(doc.metadata.get("source")):
                    idx.append(i)
            if not idx:
                continue
            model = self._load(m)
            with self.track_time(unit="batch"):
                nkey = (tuple(sorted(model.normalization.to_dict().items())), tuple(idx))
                if nkey not in normalized:
                    normalized[nkey] = [normalize(batch[i].text[: self.text_max_chars], model.normalization) for i in idx]
                views = model.prose_lines([batch[i].text[: self.text_max_chars] for i in idx])
                scores = model.score_normalized(normalized[nkey], views=views)
            try:
                pct = percentile(model.path, scores)
            except FileNotFoundError:
                pct = [None] * len(idx)
            for j, (i, s, p) in enumerate(zip(idx, scores, pct)):
                batch[i].metadata[f"{key}__score"] = float(s)
                batch[i].metadata[f"{key}__pct"] = None if p is None else float(p)
                if SCORED.active:
                    known.setdefault(i, {})[str(model.path)] = float(s)
                if SCORED_LINES.active and len(batch[i].text) > WHOLE_TEXT_MAX_CHARS:
                    known_lines.setdefault(i, {})[str(model.path)] = (normalized[nkey][j], views[j], float(s))
                if LINES.active and len(batch[i].text) <= WHOLE_TEXT_MAX_CHARS:
                    lines.setdefault(i, {})[model.normalization] = normalized[nkey][j]
            self.stat_update(f"scored/{m}", value=len(idx))
        for i, by_model in known.items():
            text = batch[i].text
            if len(text) <= self.text_max_chars:  # scored on the whole text
                SCORED.put(batch[i].id, text, by_model)
        for i, by_model in known_lines.items():
            SCORED_LINES.put(batch[i].id, batch[i].text, by_model)
        for i, by_norm in lines.items():
            text = batch[i].text
            if len(text) <= self.text_max_chars:  # normalised from the whole text
                LINES.put(batch[i].id, text, by_norm)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.common.batching import batched

        self._by_text = ByText()  # each model's score and percentile by (text, source): a page's copies are scored once
        try:
            yield from batched(data, self.batch_size, self._score_batch, lambda: self.stat_update("documents"))
        finally:
            self._by_text = None


def score_documents(docs: Iterable[Document], models: list[str], **kwargs) -> list[Document]:
    """Convenience for notebooks/tests: run :class:`QualityScores` over an iterable of documents."""
    return list(QualityScores(models=models, **kwargs).run(iter(docs)))
