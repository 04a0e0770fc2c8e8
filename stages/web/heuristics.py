"""Classic web heuristics (Gopher quality + repetition, C4, FineWeb) as stored signals.

Every value that the classic filters compare against a threshold is stored under
``gopher__*``, ``c4__*``, ``fineweb__*``. The same values computed on prose only (fenced code blocks,
``$$..$$``/``$..$`` math, inline code and Markdown table rows removed) go under ``prose__gopher__*``,
``prose__c4__*``, ``prose__fineweb__*``, so a decision rule can keep a tutorial whose code would
trip ``c4__has_curly_bracket`` or ``fineweb__line_punct_ratio``. ``web__*`` describes how much of
the page is code/math.

Words come from a fast regex splitter (no spaCy/nltk): ``\\w+`` runs (with inner apostrophes) and
runs of punctuation, as nltk's word tokenizer would split English. Sentences for C4 are counted
with a terminal-punctuation regex. The duplicate/n-gram helpers are datatrove's own.
"""

from __future__ import annotations

import re

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.c4_filters import CITATION_REGEX, END_PUNCTUATION, POLICY_SUBSTRINGS
from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
from datatrove.pipeline.filters.gopher_repetition_filter import (
    find_all_duplicate,
    find_duplicates,
    find_top_duplicate,
    get_n_grams,
)
from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]+", re.UNICODE)
_SENT_END_RE = re.compile(r"[.!?。！？]+(?=\s|$)")
_PARA_RE = re.compile(r"\n{2,}")
_LINE_RE = re.compile(r"\n+")

_FENCE_RE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
_DISPLAY_MATH_RE = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH_RE = re.compile(r"(?<![\\$\w])\$(?!\s)[^$\n]{1,300}?(?<!\s)\$(?!\w)")
_INLINE_CODE_RE = re.compile(r"(`+)[^`\n]+?\1")
_TABLE_ROW_RE = re.compile(r"^\|.*\|[ \t]*$", re.M)

_STOP_WORDS = frozenset(STOP_WORDS)
_FINEWEB_STOP_CHARS = tuple(TERMINAL_PUNCTUATION)

GOPHER_TOP_NGRAMS = (2, 3, 4)
GOPHER_DUP_NGRAMS = (5, 6, 7, 8, 9, 10)


def split_words(text: str) -> list[str]:
    """Fast language-agnostic word splitter (words and punctuation runs)."""
    return _WORD_RE.findall(text)


def split_prose(text: str) -> tuple[str, dict]:
    """Remove code blocks, math, inline code and table rows. Returns ``(prose, counts)``."""
    counts = {"n_code_blocks": 0, "code_chars": 0, "n_math": 0, "math_chars": 0, "table_rows": 0}

    def _count(key_n, key_c, repl=" "):
        def f(m):
            counts[key_n] += 1
            counts[key_c] += len(m.group(0))
            return repl
        return f

    prose = _FENCE_RE.sub(_count("n_code_blocks", "code_chars", "\n"), text)
    prose = _DISPLAY_MATH_RE.sub(_count("n_math", "math_chars", "\n"), prose)
    prose = _INLINE_MATH_RE.sub(_count("n_math", "math_chars", "x"), prose)
    prose = _INLINE_CODE_RE.sub(lambda m: "x", prose)  # keep the sentence shape: one word
    n_rows = len(_TABLE_ROW_RE.findall(prose))
    counts["table_rows"] = n_rows
    if n_rows:
        prose = _TABLE_ROW_RE.sub("", prose)
    prose = re.sub(r"\n{3,}", "\n\n", prose).strip()
    return prose, counts


def _r(x: float) -> float:
    return round(float(x), 6)


def _alpha_ws_ratio(text: str) -> float:
    toks = text.split()
    return _r(sum(any(c.isalpha() for c in t) for t in toks) / len(toks)) if toks else 0.0


def gopher_quality_signals(text: str, words: list[str] | None = None) -> dict:
    """Values behind datatrove's GopherQualityFilter (same definitions)."""
    words = split_words(text) if words is None else words
    n_words = len(words)
    non_symbol = [w for w in words if any(ch not in PUNCTUATION_SET for ch in w)]
    n_ns = len(non_symbol)
    lines = text.splitlines() or [""]
    out = {
        "n_words": n_ns,
        "mean_word_length": _r(sum(len(w) for w in non_symbol) / n_ns) if n_ns else 0.0,
        "hash_word_ratio": _r(text.count("#") / n_words) if n_words else 0.0,
        "ellipsis_word_ratio": _r((text.count("...") + text.count("…")) / n_words) if n_words else 0.0,
        "bullet_lines_ratio": _r(sum(s.lstrip().startswith(("•", "-")) for s in lines) / len(lines)),
        "end_ellipsis_lines_ratio": _r(sum(s.rstrip().endswith(("...", "…")) for s in lines) / len(lines)),
        "alpha_words_ratio": _r(sum(any(c.isalpha() for c in w) for w in words) / n_words) if n_words else 0.0,
        # the Gopher paper's reading: whitespace-separated words (punctuation stays attached)
        "alpha_ws_words_ratio": _alpha_ws_ratio(text),
        "stop_words": len(_STOP_WORDS.intersection(w.lower() for w in words)),
    }
    return out


def gopher_repetition_signals(text: str, words: list[str] | None = None) -> dict:
    """Values behind datatrove's GopherRepetitionFilter (same definitions)."""
    out: dict = {}
    stripped = text.strip()
    n_chars = max(len(text), 1)
    paragraphs = _PARA_RE.split(stripped) if stripped else []
    if paragraphs:
        pd, pc = find_duplicates(paragraphs)
        out["dup_para_frac"] = _r(pd / len(paragraphs))
        out["dup_para_char_frac"] = _r(pc / n_chars)
    else:
        out["dup_para_frac"] = out["dup_para_char_frac"] = 0.0
    lines = _LINE_RE.split(text) if text else []
    if lines:
        ld, lc = find_duplicates(lines)
        out["dup_line_frac"] = _r(ld / len(lines))
        out["dup_line_char_frac"] = _r(lc / n_chars)
    else:
        out["dup_line_frac"] = out["dup_line_char_frac"] = 0.0
    words = split_words(text) if words is None else words
    for n in GOPHER_TOP_NGRAMS:
        grams = get_n_grams(words, n)
        out[f"top_{n}gram_char_frac"] = _r(find_top_duplicate(grams) / n_chars) if grams else 0.0
    for n in GOPHER_DUP_NGRAMS:
        out[f"dup_{n}gram_char_frac"] = _r(find_all_duplicate(words, n) / n_chars) if len(words) >= n else 0.0
    return out


def c4_signals(text: str) -> dict:
    """Values behind C4's page/line rules (datatrove C4QualityFilter, split on lines)."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    n_lines = len(lines)
    kept = 0
    n_sentences = 0
    js = policy = too_long = 0
    lower = text.lower()
    for line in lines:
        words = line.split()
        if any(len(w) > 1000 for w in words):
            too_long += 1
            continue
        line_nc = CITATION_REGEX.sub("", line)
        ll = line_nc.lower()
        if "javascript" in ll:
            js += 1
        if any(p in ll for p in POLICY_SUBSTRINGS):
            policy += 1
        if not line_nc.endswith(END_PUNCTUATION) or line_nc.endswith("..."):
            continue
        if len(words) < 3 or "javascript" in ll or any(p in ll for p in POLICY_SUBSTRINGS):
            continue
        kept += 1
        n_sentences += max(1, len(_SENT_END_RE.findall(line_nc)))
    return {
        "n_lines": n_lines,
        "kept_lines_frac": _r(kept / n_lines) if n_lines else 0.0,
        "n_sentences": n_sentences,
        "has_lorem_ipsum": "lorem ipsum" in lower,
        "has_curly_bracket": "{" in text,
        "javascript_lines_frac": _r(js / n_lines) if n_lines else 0.0,
        "policy_lines_frac": _r(policy / n_lines) if n_lines else 0.0,
        "too_long_word_lines": too_long,
    }


def fineweb_signals(text: str, words: list[str] | None = None, short_line_length: int = 30) -> dict:
    """Values behind datatrove's FineWebQualityFilter."""
    lines = [ln for ln in text.split("\n") if ln.strip() != ""]
    if not lines:
        return {"line_punct_ratio": 0.0, "short_line_ratio": 0.0, "char_dup_ratio": 0.0, "list_ratio": 0.0}
    words = split_words(text) if words is None else words
    no_nl = max(len(text.replace("\n", "")), 1)
    return {
        "line_punct_ratio": _r(sum(1 for ln in lines if ln.endswith(_FINEWEB_STOP_CHARS)) / len(lines)),
        "short_line_ratio": _r(sum(1 for ln in lines if len(ln) <= short_line_length) / len(lines)),
        "char_dup_ratio": _r(find_duplicates(lines)[1] / no_nl),
        "list_ratio": _r(text.count("\n") / len(words)) if words else 0.0,
    }


def classic_signals(text: str, prefix: str = "") -> dict:
    """All classic signals for ``text`` as flat ``<prefix>gopher__*``, ``c4__*``, ``fineweb__*`` keys."""
    words = split_words(text)
    out = {}
    for k, v in gopher_quality_signals(text, words).items():
        out[f"{prefix}gopher__{k}"] = v
    for k, v in gopher_repetition_signals(text, words).items():
        out[f"{prefix}gopher__{k}"] = v
    for k, v in c4_signals(text).items():
        out[f"{prefix}c4__{k}"] = v
    for k, v in fineweb_signals(text, words).items():
        out[f"{prefix}fineweb__{k}"] = v
    return out


def web_heuristic_signals(text: str) -> dict:
    """Classic signals on the full text, the same on prose only (``prose__``), and ``web__`` shares."""
    out = classic_signals(text)
    prose, counts = split_prose(text)
    out.update(classic_signals(prose, prefix="prose__"))
    n = max(len(text), 1)
    out["web__n_code_blocks"] = counts["n_code_blocks"]
    out["web__code_char_frac"] = _r(counts["code_chars"] / n)
    out["web__n_math"] = counts["n_math"]
    out["web__math_char_frac"] = _r(counts["math_chars"] / n)
    out["web__table_rows"] = counts["table_rows"]
    out["web__prose_char_frac"] = _r(len(prose) / n) if text else 0.0
    return out


class WebHeuristicSignals(PipelineStep):
    """Store Gopher/C4/FineWeb signals (full text and prose only). Never drops documents.

    Args:
        sources: ``metadata["source"]`` values to process (default ``["web"]``; pdf text works too).
        max_chars: only the first ``max_chars`` characters are measured (bounds the n-gram work on
            giant pages; ``web__measured_chars`` records how much was measured).
    Documents with a ``reject_reason`` pass through without signals.
    """

    name = "📏 assay web heuristics"
    type = "🔢 - SIGNAL"

    def __init__(self, sources: list[str] | None = None, max_chars: int = 300_000):
        super().__init__()
        self.sources = list(sources) if sources is not None else ["web"]
        self.max_chars = max_chars

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            if meta.get("source") not in self.sources or meta.get("reject_reason"):
                self.stat_update("passthrough")
                yield doc
                continue
            text = doc.text or ""
            with self.track_time():
                sig = web_heuristic_signals(text[: self.max_chars])
            sig["web__measured_chars"] = min(len(text), self.max_chars)
            meta.update(sig)
            self.stat_update("measured")
            yield doc
