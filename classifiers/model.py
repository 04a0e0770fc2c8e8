"""Prediction: a loaded fastText quality model with ``score(texts) -> np.ndarray`` in [0, 1]."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from assay.classifiers.text import Normalization, normalize, normalize_all, prose_view

MODELS_DIR = Path(__file__).resolve().parent / "models"
SHIPPED = ("web", "code", "stem", "code_corruption", "pdf", "web_ml")
POSITIVE_LABEL = "__label__1"


def _import_fasttext():
    try:
        import fasttext  # noqa: PLC0415
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("classifiers needs fastText: pip install fasttext-numpy2==0.10.4") from e
    # fastText prints a warning to stderr on every load_model; silence it
    fasttext.FastText.eprint = lambda *a, **k: None
    return fasttext


def resolve_model_path(name_or_path: str | os.PathLike) -> Path:
    """``"web"`` -> shipped ``classifiers/models/web.ftz``; anything else is a path."""
    s = str(name_or_path)
    if s in SHIPPED or (os.sep not in s and not s.endswith((".ftz", ".bin"))):
        p = MODELS_DIR / f"{s}.ftz"
        if not p.exists():
            raise FileNotFoundError(
                f"no shipped model {s!r} at {p}; train it with "
                f"`python -m assay.classifiers train --config classifiers/configs/{s}.yaml --out classifiers/models/`")
        return p
    p = Path(s)
    if not p.exists():
        raise FileNotFoundError(f"model file not found: {p}")
    return p


def member_normalization(base: Normalization, overrides: dict | None) -> Normalization | None:
    """The normalisation an ensemble member applies to text already normalised by ``base`` (None: none)."""
    return Normalization.from_dict({**base.to_dict(), **overrides}) if overrides else None


def _fasttext_positive(model, lines: list[str]) -> np.ndarray:
    labels, probs = model.predict(lines, k=-1, threshold=0.0)
    out = np.empty(len(lines), dtype=np.float64)
    for i, (lab, pr) in enumerate(zip(labels, probs)):
        p = 0.0
        for lb, v in zip(lab, pr):
            if lb == POSITIVE_LABEL:
                p = float(v)
                break
        out[i] = p
    return np.clip(out, 0.0, 1.0)


class QualityModel:
    """A binary fastText classifier; ``score`` returns P(label == 1), higher = better.

    An *ensemble* (card key ``ensemble``, recipe key ``ensemble``) is several fastText models trained on the same
    examples, each seeing the text with its own normalisation applied on top of the model's ``normalization``
    (e.g. digits kept or mapped to 0, punctuation split or not); the score is their mean probability. ``path`` is
    the first member; the others lie beside it (``<name>.m1.ftz``, ...).

    A *prose view* (card key ``prose_view``: ``{"min_words": k}``) scores a text as the mean of its whole-text
    probability and the probability of its lines of at least k words (``text.prose_view``); it needs the raw text
    (line breaks), so ``score_normalized`` applies it only when given ``raw``."""

    def __init__(self, path: str | os.PathLike, *, name: str | None = None,
                 normalization: Normalization | None = None,
                 members: list[tuple[str | os.PathLike, dict | None]] | None = None,
                 prose_min_words: int | None = None):
        self.path = Path(path)
        self.name = name or self.path.stem
        card_path = self.path.with_name(self.path.stem + ".card.json")
        self.card: dict = {}
        if card_path.exists():
            with open(card_path) as f:
                self.card = json.load(f)
        if normalization is None:
            normalization = Normalization.from_dict(self.card.get("normalization"))
        self.normalization = normalization
        if members is None:  # from the card: [(file beside path, normalisation on top of the model's)]
            members = [(self.path.with_name(m["model_file"]), m.get("normalization"))
                       for m in self.card.get("ensemble") or []] or [(self.path, None)]
        ft = _import_fasttext()
        self._members = []  # (fastText model, Normalization applied to the normalised text, or None)
        for mpath, mnorm in members:
            model = ft.load_model(str(mpath))
            labels = model.get_labels()
            if POSITIVE_LABEL not in labels:
                raise ValueError(f"{mpath}: not a binary quality model (labels {labels}, need {POSITIVE_LABEL})")
            self._members.append((model, member_normalization(normalization, mnorm)))
        self._ft = self._members[0][0]
        self.prose_min_words = int((self.card.get("prose_view") or {}).get("min_words") or 0) if prose_min_words is None \
            else int(prose_min_words)
        self.threshold = float(self.card.get("threshold", 0.5))

    def __repr__(self) -> str:
        return f"QualityModel(name={self.name!r}, path={str(self.path)!r})"

    def _positive_probs(self, lines: list[str]) -> np.ndarray:
        out = np.zeros(len(lines), dtype=np.float64)
        if not lines:
            return out
        mnorms = [mnorm for _, mnorm in self._members if mnorm]
        # each line's member normalisations at once (normalize_all: the steps they share run once)
        variants = iter(zip(*[normalize_all(t, mnorms) for t in lines]))
        for model, mnorm in self._members:
            out += _fasttext_positive(model, list(next(variants)) if mnorm else lines)
        return out / len(self._members)

    def score(self, texts: list[str]) -> np.ndarray:
        """One float in [0, 1] per text (higher = better). Non-string texts are scored as the empty
        string (the model's prior), never NaN."""
        lines = [normalize(t, self.normalization) for t in texts]
        return self.score_normalized(lines, raw=[t if isinstance(t, str) else "" for t in texts])

    def prose_lines(self, raw: list[str]) -> list[str | None]:
        """Per text, its normalised prose view (``text.prose_view``), or ``None`` where the card has no prose view or
        the view is the text itself (every line qualifies, or none does): what :meth:`score_normalized` scores beside
        the whole text. A text's score is a function of its normalised line and this view line."""
        if not self.prose_min_words:
            return [None] * len(raw)
        out: list[str | None] = []
        for t in raw:
            v = prose_view(t, self.prose_min_words)
            out.append(None if v is t else normalize(v, self.normalization))
        return out

    def score_normalized(self, lines: list[str], raw: list[str] | None = None, *,
                         views: list[str | None] | None = None) -> np.ndarray:
        """Score already-normalised single-line texts; ``raw``: the texts they were normalised from, for the prose
        view (without it, or without a prose view in the card, the whole text alone); ``views``: the prose view
        lines of :meth:`prose_lines` when already computed (instead of ``raw``)."""
        if not lines:
            return np.zeros(0, dtype=np.float64)
        p = self._positive_probs(lines)
        if views is None and raw is not None:
            views = self.prose_lines(raw)
        if views is not None:
            # texts that lose a line, and whose view line is not the whole text's line (only blank lines lost): the
            # score of that one is p itself, (p + p) / 2 == p exactly
            j = [i for i, v in enumerate(views) if v is not None and v != lines[i]]
            if j:
                pv = self._positive_probs([views[i] for i in j])
                p[j] = (p[j] + pv) / 2
        return p

    def percentile(self, scores) -> np.ndarray:
        from assay.classifiers.calibrate import percentile  # noqa: PLC0415

        return percentile(self.path, scores)


_CACHE: dict[str, QualityModel] = {}


def load(name: str | os.PathLike, *, cache: bool = True) -> QualityModel:
    """Load a shipped model by name (``"web"``, ``"code"``, ``"stem"``, ...) or a model path."""
    path = resolve_model_path(name)
    key = str(path.resolve())
    if cache and key in _CACHE:
        return _CACHE[key]
    m = QualityModel(path, name=str(name) if str(name) in SHIPPED else None)
    if cache:
        _CACHE[key] = m
    return m
