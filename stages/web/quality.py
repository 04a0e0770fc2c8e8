"""The web quality order: ``quality_score(texts)`` and the signal step that stores it.

One implementation for notebooks and the batch run. For every text it computes the same features
(language ID with lid.176, a few Gopher/C4/FineWeb heuristics from :func:`web_heuristic_signals`, the
LDNOOBW adult-word share, and the fastText quality models **only for the languages they were trained
and calibrated on**), then the learned combination (a logistic regression fitted on human labels,
``classifiers/models/web_quality.json``, trained by
``python -m assay.classifiers train --config classifiers/configs/web_quality.yaml --out classifiers/models/``).

Language awareness: a model's feature is its logit where the detected language is in the model's
``langs`` (from the combiner file) and exactly 0 elsewhere, together with a 0/1 "covered" indicator. A text
whose detected language no model covers is scored by the combiner's *fallback*: a logistic regression over
the language-independent signals only (heuristics, lid confidence, adult-word share and the text-shape
signals of :func:`shape_features`; each as its raw value and as its rank, the empirical CDF at quantiles of the
fallback's training rows), fitted on the human labels of HPLT and Turku in every language (train+dev splits).
Where a model covers the language, the main regression combines the logit of a second such regression
(``stack_fallback``: all labelled sources) with the model logits (stacked; fitted on the dev split, where that
logit is cross-fitted and the models are out of sample). That is the documented neutral treatment: no model
ever ranks text in a language it was not trained on, and uncovered languages are still ordered by signals that
mean the same in every language.

``WebQualityScore`` stores ``quality__web_score`` (probability of "good" in [0, 1]),
``quality__web_pct`` (its token-weighted percentile on the reference sample of the combiner file) and
``quality__lang``; the default recipe tiers web documents by ``quality__web_pct`` alone.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections import Counter
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from pathlib import Path

import numpy as np
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.common.memo import ByText

COMBINER = "web_quality"
TEXT_MAX_CHARS = 20_000

# language-independent signals (name -> how to read it from web_heuristic_signals / the text)
HEURISTICS = ("log_chars", "log_words", "mean_word_length", "alpha_ws_words_ratio", "dup_line_frac",
              "dup_5gram_char_frac", "top_2gram_char_frac", "line_punct_ratio", "short_line_ratio", "list_ratio",
              "bullet_lines_ratio", "ellipsis_word_ratio", "sentences_per_word", "upper_frac", "digit_frac",
              "lid_score", "adult_share")
# language-agnostic text-shape signals (added in v2): script mixing, navigation separators, keyword
# stuffing, vocabulary variety, capitalised-word share, mojibake; see :func:`shape_features`
SHAPE = ("script_mix", "separator_ratio", "top_word_share", "type_token_ratio", "capitalised_ratio", "mojibake",
         "punct_density", "url_ratio", "term_punct_ratio", "top10_word_share")
_SEPARATORS = frozenset("|»›>-–—•·/:«‹<~*")
_MOJIBAKE_RE = re.compile("Ã[\x80-\xbf]|Â[\x80-\xbf]|â€|\ufffd")
# a token of one or two separator characters; a token that looks like a URL or an address
_SEPARATOR_TOKEN = re.compile("[" + re.escape("".join(sorted(_SEPARATORS))) + "]{1,2}")
_URLISH = re.compile(r"http|www\.|@|\.com")
_WORD_STRIP = ".,;:!?\"'()[]«»“”„‘’।॥؟،"


@lru_cache(maxsize=1)
def _terminal_punctuation() -> frozenset:
    """Sentence-final punctuation of every script (datatrove's list: . ! ? and the danda, 。, ؟, ۔, ። ...)."""
    from datatrove.utils.text import TERMINAL_PUNCTUATION  # noqa: PLC0415

    return frozenset(TERMINAL_PUNCTUATION)


def _script_block(ch: str) -> int:
    """A letter's script, cheaply: its 128-code-point block, every Latin block (< U+0250 and the Latin
    Extended Additional block) counted as one."""
    o = ord(ch)
    return 0 if o < 0x250 or 0x1E00 <= o < 0x1F00 else o >> 7


_LAST_COUNTS: list = [None, None]  # (text, {character: count}): heuristic_features then shape_features


def _char_counts(t: str) -> dict[str, int]:
    """``dict(Counter(t))`` (in code point order, not first-seen: its readers only sum the counts), counted once for the
    two feature functions that both read the same text: by a sort of the code points (about 4x faster than
    ``Counter`` on web pages)."""
    if _LAST_COUNTS[0] is not t and _LAST_COUNTS[0] != t:
        if t.isascii():
            n = np.bincount(np.frombuffer(t.encode("ascii"), dtype=np.uint8), minlength=128)
            cps = np.flatnonzero(n)
            counts = n[cps]
        else:
            cps, counts = np.unique(np.frombuffer(t.encode("utf-32-le", "surrogatepass"), dtype=np.uint32),
                                    return_counts=True)
        _LAST_COUNTS[:] = [t, dict(zip(map(chr, cps.tolist()), counts.tolist()))]
    return _LAST_COUNTS[1]


def shape_features(text: str) -> list[float]:
    """Language-agnostic shape signals of one text, in the order of ``SHAPE``."""
    t = text[:TEXT_MAX_CHARS]
    # per-character counts once (C speed); the per-character tests then run once per distinct character
    chars = _char_counts(t)
    blocks: Counter = Counter()
    punct = 0
    for c, k in chars.items():
        if c.isalpha():
            blocks[_script_block(c)] += k
        elif not c.isalnum() and not c.isspace():
            punct += k
    n_letters = sum(blocks.values())
    script_mix = 1.0 - max(blocks.values()) / n_letters if n_letters else 0.0
    toks = t.split()
    n = len(toks) or 1
    # every token test once per distinct token, weighted by its count, by C-level calls (the sums and the
    # counters below depend on the multiset of tokens only; the type-token window alone reads them in order)
    from assay.stages.common.codes import first_seen_codes  # noqa: PLC0415
    from assay.stages.web.heuristics import has_alpha_flags  # noqa: PLC0415 - any(c.isalpha() for c in w), per word

    tok_counts = Counter(toks)
    keys = list(tok_counts)
    k = np.fromiter(tok_counts.values(), dtype=np.int64, count=len(keys))

    def weighted(flags) -> int:
        return int(k[np.fromiter(map(bool, flags), dtype=bool, count=len(keys))].sum())

    seps = weighted(map(_SEPARATOR_TOKEN.fullmatch, keys))
    caps = weighted(map(str.isupper, map(itemgetter(0), keys)))
    url_toks = weighted(_urlish_flags(keys))
    term = weighted(map(_terminal_punctuation().__contains__, map(itemgetter(-1), keys)))
    is_alpha = has_alpha_flags(keys)
    alpha_keys = [w for w, a in zip(keys, is_alpha.tolist()) if a]
    ka = k[is_alpha]
    n_words = int(ka.sum())
    low = list(map(str.lower, alpha_keys))
    long = np.fromiter(map(len, low), dtype=np.int64, count=len(low)) >= 4
    top = 0.0
    if long.any() and n_words:
        _, codes = first_seen_codes([w for w, g in zip(low, long.tolist()) if g])
        top = int(np.bincount(codes, weights=ka[long]).max()) / n_words
    # Counter(w.strip(_WORD_STRIP) for w in words) without its "" key: one weighted count per stripped word
    stripped, codes = first_seen_codes(list(map(str.strip, low, repeat(_WORD_STRIP))))
    word_counts = np.bincount(codes, weights=ka, minlength=len(stripped)).astype(np.int64)
    if "" in stripped:
        word_counts = np.delete(word_counts, stripped.index(""))
    alpha = set(alpha_keys)
    window = []
    for w in toks:
        if w in alpha:
            window.append(w.lower())
            if len(window) == 300:
                break
    ttr = len(set(window)) / len(window) if window else 0.0
    caps /= n
    moj = len(_MOJIBAKE_RE.findall(t)) * 1000.0 / (len(t) or 1)
    punct /= (len(t) or 1)
    urls = url_toks / n
    # v3: sentence ends per word in any script (C4's sentence count knows only . ! ?), and the share of words
    # taken by the ten most frequent ones (function words in running text of any language; keyword lists,
    # product listings and navigation spread over many words): both chosen by leave-one-language-out CV
    term /= n
    top10 = int(np.sort(word_counts)[-10:].sum()) / (int(word_counts.sum()) or 1)
    return [script_mix, seps / n, top, ttr, caps, math.log1p(moj), punct, urls, term, top10]


def _urlish_flags(keys: list[str]):
    """``map(_URLISH.search, keys)`` as truth values: a token holding "http", "www.", "@" or ".com", by one
    C-level substring pass per marker instead of a regex search per token."""
    flags = map(operator.contains, keys, repeat("http"))
    for marker in _URLISH_MARKERS[1:]:
        flags = map(operator.or_, flags, map(operator.contains, keys, repeat(marker)))
    return flags


_URLISH_MARKERS = ("http", "www.", "@", ".com")  # the alternatives of _URLISH


def _clip(x, lo, hi) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return lo
    if x != x:
        return lo
    return min(max(x, lo), hi)


def heuristic_features(text: str, lang_score: float, lang: str, signals: dict | None = None) -> list[float]:
    """The language-independent features of one text, in the order of ``HEURISTICS``.

    ``signals``: ``classic_signals`` of ``text[:TEXT_MAX_CHARS]`` when already known (the values the
    ``web_heuristics_v1`` step stored for this very text; see :func:`stored_classic_signals`)."""
    from assay.stages.web.heuristics import classic_signals  # noqa: PLC0415
    from assay.stages.web.safety import adult_word_share  # noqa: PLC0415

    t = text[:TEXT_MAX_CHARS]
    # the full-text values of web_heuristic_signals (gopher__/c4__/fineweb__)
    s = signals if signals is not None else classic_signals(t)
    n_words = max(1, int(s.get("gopher__n_words") or 0))
    counts = _char_counts(t)  # per-character tests once per distinct character
    letters = sum(k for c, k in counts.items() if c.isalpha()) or 1
    chars = len(t) or 1
    return [
        math.log1p(len(t)),
        math.log1p(n_words),
        _clip(s.get("gopher__mean_word_length"), 0, 15),
        _clip(s.get("gopher__alpha_ws_words_ratio"), 0, 1),
        _clip(s.get("gopher__dup_line_frac"), 0, 1),
        _clip(s.get("gopher__dup_5gram_char_frac"), 0, 1),
        _clip(s.get("gopher__top_2gram_char_frac"), 0, 1),
        _clip(s.get("fineweb__line_punct_ratio"), 0, 1),
        _clip(s.get("fineweb__short_line_ratio"), 0, 1),
        _clip(s.get("fineweb__list_ratio"), 0, 1),
        _clip(s.get("gopher__bullet_lines_ratio"), 0, 1),
        _clip(s.get("gopher__ellipsis_word_ratio"), 0, 1),
        _clip((s.get("c4__n_sentences") or 0) / n_words, 0, 1),
        sum(k for c, k in counts.items() if c.isupper()) / letters,
        sum(k for c, k in counts.items() if c.isdigit()) / chars,
        _clip(lang_score, 0, 1),
        math.log1p(1000.0 * adult_word_share(t, lang)),
    ]


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


@lru_cache(maxsize=4)
def load_combiner(path: str | None = None) -> dict:
    """The combiner file (feature names, standardisation, coefficients, model languages, calibration)."""
    from assay.classifiers.model import MODELS_DIR  # noqa: PLC0415

    p = Path(path) if path else MODELS_DIR / f"{COMBINER}.json"
    if not p.exists():
        raise FileNotFoundError(f"no web quality combiner at {p}; train it with `python -m assay.classifiers train "
                                f"--config classifiers/configs/{COMBINER}.yaml --out classifiers/models/`")
    with open(p) as f:
        return json.load(f)


def quality_features(texts: list[str], models: dict[str, list[str]] | None = None, *,
                     signals: list[dict | None] | None = None,
                     languages: list[tuple[str, float] | None] | None = None,
                     scores: list[dict[str, float] | None] | None = None,
                     scored_lines: list[dict[str, tuple[str, str | None, float]] | None] | None = None,
                     lines: list[dict | None] | None = None,
                     ) -> tuple[np.ndarray, list[str], list[str]]:
    """Feature matrix (n x k), feature names and detected languages for ``texts``.

    ``models``: ``{model name: [languages it covers]}`` (default: the combiner file's). Each model adds
    ``<model>__logit`` (0 outside its languages) and ``<model>__covered`` (0/1).
    ``signals`` / ``languages`` / ``scores``: per text, values already computed for exactly this text
    (``None`` where not): ``classic_signals(text[:TEXT_MAX_CHARS])``, ``detect_language(text[:TEXT_MAX_CHARS])``
    and ``{model path: load(model).score([text[:TEXT_MAX_CHARS]])[0]}``. ``scored_lines``: per text
    ``{model path: (normalised line, prose view line, score)}`` measured on some text of the document (a longer
    prefix): used where ``text[:TEXT_MAX_CHARS]`` gives that very line and view line (a model's score is a function
    of the two). ``lines``: per text ``{Normalization: normalize(text, it)}`` of the whole text (``None`` where not
    known): a model whose line can be read from them (``assay.classifiers.text.line_from_known``) is not normalised
    again. The features are the same either way; the batch step passes what earlier steps measured."""
    import assay.classifiers  # noqa: PLC0415
    from assay.stages.web.langid import detect_language  # noqa: PLC0415

    if models is None:
        models = load_combiner()["models"]
    texts = [t if isinstance(t, str) else "" for t in texts]
    signals = signals if signals is not None else [None] * len(texts)
    languages = languages if languages is not None else [None] * len(texts)
    langs, rows = [], []
    for t, sig, known in zip(texts, signals, languages):
        code, score = known if known is not None else detect_language(t[:TEXT_MAX_CHARS])
        langs.append(code)
        rows.append(heuristic_features(t, score, code, sig) + shape_features(t))
    names = list(HEURISTICS) + list(SHAPE)
    cols = [np.asarray(rows, dtype=np.float64).reshape(len(texts), len(names))]
    for m, covered in models.items():
        cov = np.array([lang in covered for lang in langs], dtype=bool)
        logit = np.zeros(len(texts))
        if cov.any():
            idx = np.flatnonzero(cov)
            model = assay.classifiers.load(m)
            path = str(model.path)
            probs = np.array([(scores[i] or {}).get(path, np.nan) if scores is not None else np.nan for i in idx])
            todo = np.flatnonzero(np.isnan(probs))
            if len(todo):
                probs[todo] = _score_texts(model, [texts[idx[j]][:TEXT_MAX_CHARS] for j in todo],
                                           [(scored_lines[idx[j]] or {}).get(path) for j in todo]
                                           if scored_lines is not None else None,
                                           [lines[idx[j]] for j in todo] if lines is not None else None)
            logit[idx] = _logit(probs)
        cols += [logit[:, None], cov.astype(np.float64)[:, None]]
        names += [f"{m}__logit", f"{m}__covered"]
    return np.hstack(cols), names, langs


def _score_texts(model, texts: list[str], known: list[tuple[str, str | None, float] | None] | None,
                 known_lines: list[dict | None] | None = None) -> np.ndarray:
    """``model.score(texts)``, taking the score of a text from ``known`` (``(line, prose view line, score)`` or None
    per text, as ``QualityModel.prose_lines`` gives the view) where the text normalises to that line and that view
    line: a model's score is a function of the two. ``known_lines``: per text ``{Normalization: line}`` of the
    whole text, from which its line is read where ``line_from_known`` can (not normalised again)."""
    from assay.classifiers.text import line_from_known, normalize  # noqa: PLC0415

    lines = None
    if known_lines is not None and any(known_lines):
        lines = [line_from_known(model.normalization, len(t), k) for t, k in zip(texts, known_lines)]
        lines = [normalize(t, model.normalization) if v is None else v for t, v in zip(texts, lines)]
    if known is None or not any(known):
        if lines is None:
            return model.score(texts)
        return model.score_normalized(lines, raw=texts)
    if lines is None:
        lines = [normalize(t, model.normalization) for t in texts]
    views = model.prose_lines(texts)
    out = np.full(len(lines), np.nan)
    miss = []
    for i, (line, view, k) in enumerate(zip(lines, views, known)):
        if k is not None and k[0] == line and k[1] == view:
            out[i] = k[2]
        else:
            miss.append(i)
    if miss:
        out[miss] = model.score_normalized([lines[i] for i in miss], views=[views[i] for i in miss])
    return out


_CLASSIC_PREFIXES = ("gopher__", "c4__", "fineweb__")


def stored_classic_signals(doc: Document) -> dict | None:
    """The classic signals the ``web_heuristics_v1`` step stored for this document, where they are
    exactly ``classic_signals(doc.text[:TEXT_MAX_CHARS])``: the step measured this very text (unchanged
    since: ``assay.stages.web.heuristics.MEASURED``) and all of it (no longer than
    ``TEXT_MAX_CHARS``). ``None`` otherwise (the caller computes them)."""
    from assay.stages.web.heuristics import MEASURED  # noqa: PLC0415

    text = doc.text or ""
    meta = doc.metadata
    if (MEASURED.take(doc.id, text) is None or len(text) > TEXT_MAX_CHARS
            or meta.get("web__measured_chars") != len(text)):
        return None
    return {k: v for k, v in meta.items() if k.startswith(_CLASSIC_PREFIXES)}


def stored_model_scores(doc: Document) -> dict[str, float] | None:
    """``{model path: score}`` of the fastText quality models the ``quality_scores_v1`` step ran on exactly
    ``doc.text[:TEXT_MAX_CHARS]`` (its whole text) in this worker (``assay.stages.signals.quality.SCORED``)."""
    from assay.stages.signals.quality import SCORED  # noqa: PLC0415

    return SCORED.take(doc.id, (doc.text or "")[:TEXT_MAX_CHARS])


def stored_model_lines(doc: Document) -> dict[str, tuple[str, str | None, float]] | None:
    """``{model path: (normalised line, prose view line, score)}`` of the fastText quality models the ``quality_scores_v1``
    step ran on a document too long for :func:`stored_model_scores` (``assay.stages.signals.quality.SCORED_LINES``);
    ``quality_features`` uses a score where the text it scores gives the same line and prose view line."""
    from assay.stages.signals.quality import SCORED_LINES  # noqa: PLC0415

    hit = SCORED_LINES.pop(doc.id)
    return None if hit is None else hit[1]


def stored_lines(doc: Document) -> dict | None:
    """``{Normalization: normalised line}`` of the fastText quality models the ``quality_scores_v1`` step ran on
    exactly ``doc.text[:TEXT_MAX_CHARS]`` (its whole text) in this worker (``assay.stages.signals.quality.LINES``)."""
    from assay.stages.signals.quality import LINES  # noqa: PLC0415

    return LINES.take(doc.id, (doc.text or "")[:TEXT_MAX_CHARS])


def _memos() -> list:
    """The per-worker memos this step reads (``assay.stages.common.memo``)."""
    from assay.stages.signals.quality import LINES, SCORED, SCORED_LINES  # noqa: PLC0415
    from assay.stages.web.heuristics import MEASURED  # noqa: PLC0415
    from assay.stages.web.langid import RECENT  # noqa: PLC0415

    return [MEASURED, RECENT, SCORED, SCORED_LINES, LINES]


def _drop_handed_over(doc: Document) -> None:
    """Forget what earlier steps handed over for ``doc`` (``_memos``), for a document whose values this step did not
    compute (a copy of a text it scored before): each entry is read once, and one left behind would hold its text
    until pushed out."""
    for memo in _memos():
        memo.pop(doc.id)


def stored_language(doc: Document) -> tuple[str, float] | None:
    """``detect_language(doc.text[:TEXT_MAX_CHARS])`` (default model) as the ``language_id_v1`` step
    computed it for this very text, unrounded (:func:`assay.stages.web.langid.recent_detection`);
    ``None`` where that step did not see exactly this text."""
    from assay.stages.web.langid import recent_detection  # noqa: PLC0415

    return recent_detection(doc.id, (doc.text or "")[:TEXT_MAX_CHARS])


def combine(X: np.ndarray, names: list[str], combiner: dict) -> np.ndarray:
    """Probability of "good" from the feature matrix: the combiner's logistic regression where a model
    covers the text's language, its ``fallback`` (language-independent features only) where none does."""
    if list(names) != list(combiner["features"]):
        raise ValueError(f"feature names {names} do not match the combiner's {combiner['features']}")
    from assay.classifiers.predict import predict_combined  # noqa: PLC0415

    return predict_combined(combiner, X, names)


def quality_score(texts: list[str], *, combiner_path: str | None = None) -> np.ndarray:
    """Web quality of extracted texts, higher = better: exactly the number by which the default
    recipe tiers web documents (its percentile, ``quality__web_pct``, is a monotone map of it)."""
    comb = load_combiner(combiner_path)
    if not texts:
        return np.zeros(0)
    X, names, _ = quality_features(list(texts), comb["models"])
    return combine(X, names, comb)


def quality_percentile(scores, *, combiner_path: str | None = None) -> np.ndarray:
    """Token-weighted percentile of combined scores on the combiner's reference sample."""
    from assay.classifiers.calibrate import percentile  # noqa: PLC0415

    return percentile(load_combiner(combiner_path)["calibration"], scores)


class WebQualityScore(PipelineStep):
    """Store ``quality__web_score``, ``quality__web_pct`` and ``quality__lang`` for web documents.

    Args:
        combiner_path: combiner JSON (default: the shipped ``classifiers/models/web_quality.json``).
        sources: ``metadata["source"]`` values scored (default ``["web"]``).
        batch_size: documents per model batch (scores do not depend on it; 128 bounds the documents a
            worker holds at once, as ``QualityScores``'s).
    Documents with a ``reject_reason`` or no text get ``None``; nothing is dropped."""

    name = "🏅 web quality"
    type = "📊 - SIGNALS"

    def __init__(self, combiner_path: str | None = None, sources: list[str] | None = None, batch_size: int = 128):
        super().__init__()
        self.combiner_path = str(combiner_path) if combiner_path else None
        self.sources = list(sources) if sources is not None else ["web"]
        self.batch_size = max(1, int(batch_size))
        self._by_text: ByText | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_by_text"] = None
        return state

    def _score(self, batch: list[Document]) -> None:
        idx = []
        for i, doc in enumerate(batch):
            meta = doc.metadata
            if meta.get("source") not in self.sources:
                continue
            meta["quality__web_score"] = None
            meta["quality__web_pct"] = None
            meta["quality__lang"] = None
            if not meta.get("reject_reason") and (doc.text or "").strip():
                idx.append(i)
        if not idx:
            return
        comb = load_combiner(self.combiner_path)
        by_text = getattr(self, "_by_text", None)
        with self.track_time(unit="batch"):
            # each distinct text's features once: a copy of a text met earlier in this run (``by_text``: its feature
            # row and language) or in this batch takes that row. The regression still runs on every document's row,
            # in batch order, as without copies (its matrix product's last bit depends on the rows around)
            keys = [by_text.key(batch[i].text) if by_text is not None else None for i in idx]
            rows: list = [None] * len(idx)  # (feature row bytes, language) per document, where known
            fresh: list[int] = []  # positions in idx whose features are computed
            first: dict[tuple, int] = {}  # key -> position of the first fresh document of that text
            for j, key in enumerate(keys):
                known = by_text.get(key) if key is not None else None
                if known is not None:
                    rows[j] = known
                elif key is not None and key in first:
                    rows[j] = first[key]  # a position: the row is read once that document's features exist
                else:
                    if key is not None:
                        first[key] = j
                    fresh.append(j)
            docs = [batch[idx[j]] for j in fresh]
            Xf, names, langs_f = quality_features([d.text for d in docs], comb["models"],
                                                  signals=[stored_classic_signals(d) for d in docs],
                                                  languages=[stored_language(d) for d in docs],
                                                  scores=[stored_model_scores(d) for d in docs],
                                                  scored_lines=[stored_model_lines(d) for d in docs],
                                                  lines=[stored_lines(d) for d in docs])
            if len(fresh) == len(idx):
                X, langs = Xf, langs_f
            else:
                X = np.empty((len(idx), len(names)), dtype=np.float64)
                langs = [None] * len(idx)
                at = {j: r for r, j in enumerate(fresh)}
                for j, known in enumerate(rows):
                    if known is None:
                        X[j], langs[j] = Xf[at[j]], langs_f[at[j]]
                        continue
                    if isinstance(known, int):
                        X[j], langs[j] = Xf[at[known]], langs_f[at[known]]
                    else:
                        X[j], langs[j] = np.frombuffer(known[0], dtype=np.float64), known[1]
                    _drop_handed_over(batch[idx[j]])
            for key, j in first.items():
                by_text.put(key, (X[j].tobytes(), langs[j]))
            scores = combine(X, names, comb)
            pct = quality_percentile(scores, combiner_path=self.combiner_path)
        for i, s, p, lang in zip(idx, scores, pct, langs):
            meta = batch[i].metadata
            meta["quality__web_score"] = float(s)
            meta["quality__web_pct"] = float(p)
            meta["quality__lang"] = lang
        self.stat_update("scored", value=len(idx))
        if len(fresh) < len(idx):
            self.stat_update("copies", value=len(idx) - len(fresh))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.common.batching import batched

        memos = _memos()
        for memo in memos:  # earlier steps of this worker hand over what they computed on the same texts
            memo.open()
        self._by_text = ByText()  # (score, percentile, language) by text: a page's copies are scored once
        try:
            yield from batched(data, self.batch_size, self._score, lambda: self.stat_update("documents"))
        finally:
            self._by_text = None
            for memo in memos:
                memo.close()
