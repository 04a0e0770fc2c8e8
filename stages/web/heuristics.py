"""Classic web heuristics (Gopher quality + repetition, C4, FineWeb) as stored signals.

Every value that the classic filters compare against a threshold is stored under
``gopher__*``, ``c4__*``, ``fineweb__*``. The same values computed on prose only (fenced code blocks,
``$$..$$``/``$..$`` math, inline code and Markdown table rows removed) go under ``prose__gopher__*``,
``prose__c4__*``, ``prose__fineweb__*``, so a decision rule can keep a tutorial whose code would
trip ``c4__has_curly_bracket`` or ``fineweb__line_punct_ratio``. ``web__*`` describes how much of
the page is code/math.

Words come from a fast regex splitter (no spaCy/nltk): ``\\w+`` runs (with inner apostrophes) and
runs of punctuation, as nltk's word tokenizer would split English. Sentences for C4 are counted
with a terminal-punctuation regex. Duplicate lines/paragraphs are counted as datatrove's helper counts them; the n-gram
statistics (top 2-4-gram, duplicate 5-10-gram character fractions) follow datatrove's definitions
on integer word ids and 64-bit window hashes (numpy), several times faster on long pages.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from functools import lru_cache
from itertools import compress, repeat
import operator
from operator import itemgetter

import numpy as np
import regex
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.c4_filters import CITATION_REGEX, END_PUNCTUATION, POLICY_SUBSTRINGS
from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

from assay.stages.common.codes import first_seen_codes, pandas_hashtables
from assay.stages.common.memo import WHOLE_TEXT_MAX_CHARS, TextMemo

# ``regex``'s \w holds the combining marks (Unicode's word characters): with ``re`` a Devanagari, Bengali or
# Thai word fell apart at every vowel sign (हिन्दी -> ह ि न ् द ी: mean word length 1.3, so the Gopher
# word-length floor dropped every Hindi, Marathi and Bengali page)
_WORD_RE = regex.compile(r"\w+(?:['’]\w+)*|[^\w\s]+")
_SENT_END_RE = re.compile(r"[.!?。！？]+(?=\s|$)")

_FENCE_RE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
# an opening fence line: in what _FENCE_RE's substitution leaves, the first one is a block it could not close
_FENCE_OPEN_RE = re.compile(r"^`{3,}[^\n]*$", re.M)
_DISPLAY_MATH_RE = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH_RE = re.compile(r"(?<![\\$\w])\$(?!\s)[^$\n]{1,300}?(?<!\s)\$(?!\w)")
# an inline code span (a run of backticks, the code, the same run), the whole span as group 1 (for re.split)
_INLINE_CODE_SPLIT_RE = re.compile(r"((`+)[^`\n]+?\2)")
_TABLE_ROW_RE = re.compile(r"^\|.*\|[ \t]*$", re.M)
# a Haskell type signature on a line of its own, as Haddock renders a module's declarations (``<p class="src">``,
# not ``<pre>``: the extraction leaves it as a text line, then Haddock's ``Source #`` links): ``name :: Type``, a
# lower-case name (or names, or an operator in parentheses), `` :: `` and a type that opens with a name, ``(`` or
# ``[``. Code: libghc-aeson-doc's Data.Aeson.Key page is 0.02 code share without it and its module pages fell to the
# prose rules (alpha_words: ``::``, ``->`` and ``=>`` are words without a letter)
_HASKELL_SIG_RE = re.compile(
    r"^(?:[a-z_][A-Za-z0-9_']*|\([!#$%&*+./<=>?@^|~:\\-]{1,6}\))(?:, [a-z_][A-Za-z0-9_']*)* :: (?=[A-Za-z(\[])"
    r"[^\n]{1,400}$", re.M)

_STOP_WORDS = frozenset(STOP_WORDS)
_FINEWEB_STOP_CHARS = tuple(TERMINAL_PUNCTUATION)
_FINEWEB_STOP_SET = frozenset(_FINEWEB_STOP_CHARS)  # single characters (tests/web/test_heuristics_fast_paths.py)

GOPHER_TOP_NGRAMS = (2, 3, 4)
GOPHER_DUP_NGRAMS = (5, 6, 7, 8, 9, 10)


def split_words(text: str) -> list[str]:
    """Fast language-agnostic word splitter (words and punctuation runs)."""
    return _WORD_RE.findall(text)


_PLACEHOLDER_LETTERS = "bcdfghjklmnpqrstvwxz"


@lru_cache(maxsize=8192)  # the same spans come back on every page of a reference site
def inline_code_word(code: str) -> str:
    """The one-word stand-in for an inline code span in the prose-only text: five letters derived
    from the span (crc32), so the same code gives the same word and different code different words.

    A fixed stand-in (the earlier ``x``) turned option and column lists (one `--flag` or `name` per
    line) into runs of identical ``x`` lines: the duplicate-line, duplicate-paragraph and
    character-duplication rules then fired on reference pages with no repetition at all."""
    h = zlib.crc32(code.encode("utf-8", "surrogatepass"))
    out = []
    for _ in range(5):
        h, r = divmod(h, len(_PLACEHOLDER_LETTERS))
        out.append(_PLACEHOLDER_LETTERS[r])
    return "".join(out)


def split_prose(text: str, cut: bool = False) -> tuple[str, dict]:
    """Remove code blocks, math, inline code and table rows. Returns ``(prose, counts)``.

    ``cut``: ``text`` is the first characters of a longer text (a measuring limit cut it), so a fenced block
    still open at its end is code up to the cut: the limit, not the page, took its closing fence. Without this
    a page-wide ``<pre>`` longer than the limit (vim's help pages, a module's whole source listing) was
    measured as prose, with a code share near 0."""
    counts = {"n_code_blocks": 0, "code_chars": 0, "n_math": 0, "math_chars": 0, "table_rows": 0,
              "n_inline_code": 0, "inline_code_chars": 0}

    def _count(key_n, key_c, repl=" "):
        def f(m):
            counts[key_n] += 1
            counts[key_c] += len(m.group(0))
            return repl
        return f

    # each pattern needs its marker character(s): a text without them is left as it is
    prose = _FENCE_RE.sub(_count("n_code_blocks", "code_chars", "\n"), text) if "```" in text else text
    if cut and "```" in prose:
        # the substitution closed every block it could; the first opening line left runs past the cut
        m = _FENCE_OPEN_RE.search(prose)
        if m is not None:
            counts["n_code_blocks"] += 1
            counts["code_chars"] += len(prose) - m.start()
            prose = prose[:m.start()] + "\n"
    if " :: " in prose:
        prose = _HASKELL_SIG_RE.sub(_count("n_code_blocks", "code_chars", ""), prose)
    if "$" in prose:
        prose = _DISPLAY_MATH_RE.sub(_count("n_math", "math_chars", "\n"), prose) if "$$" in prose else prose
        prose = _INLINE_MATH_RE.sub(_count("n_math", "math_chars", "x"), prose)
    # keep the sentence shape: one word per inline code span, the same word for the same code (the spans by
    # re.split, which finds the matches re.sub replaces, the texts between them at even places: no Python
    # call per span)
    if "`" in prose:
        parts = _INLINE_CODE_SPLIT_RE.split(prose)
        if len(parts) > 1:
            spans = parts[1::3]
            counts["n_inline_code"] = len(spans)
            counts["inline_code_chars"] = sum(map(len, spans))
            parts[1::3] = map(inline_code_word, spans)
            del parts[2::3]  # (the backtick runs: the pattern's inner group)
            prose = "".join(parts)
    n_rows = len(_TABLE_ROW_RE.findall(prose)) if "|" in prose else 0
    counts["table_rows"] = n_rows
    if n_rows:
        prose = _TABLE_ROW_RE.sub("", prose)
    prose = re.sub(r"\n{3,}", "\n\n", prose).strip()
    return prose, counts


def _r(x: float) -> float:
    return round(float(x), 6)


def _alpha_ws_ratio(text: str, table: _WordTable | None = None, alpha: np.ndarray | None = None) -> float:
    """The share of whitespace-separated words (``text.split()``) with a letter. ``table``: the words of
    ``text`` (``split_words``) and ``alpha``: which of them have a letter (``table.per_word(has_alpha_flags)``);
    with them, no letter test on the whitespace words (see ``_alpha_chunks``)."""
    if table is not None and table.chunk_ids is not None:
        return _r(table.alpha_chunks() / len(table.chunk_ids))
    chunks = text.split()
    if not chunks:
        return 0.0
    if table is not None and not any(map(text.__contains__, _SPLIT_ONLY_SPACES)):
        return _r(_alpha_chunks(chunks, table, alpha) / len(chunks))
    toks = Counter(chunks)
    counts = np.fromiter(toks.values(), dtype=np.int64, count=len(toks))
    return _r(int(counts[has_alpha_flags(list(toks))].sum()) / int(counts.sum()))


# the characters at which str.split() splits and _WORD_RE does not (its \s lacks them: the information
# separators); in a text without them, the two see the same white space
_SPLIT_ONLY_SPACES = ("\x1c", "\x1d", "\x1e", "\x1f")


def _alpha_chunks(chunks: list[str], table: _WordTable, alpha: np.ndarray) -> int:
    """How many of ``chunks`` (``text.split()``) have a letter, from the words of the text: the words cover
    every character that is not white space, in order, and never span white space, so each chunk is the
    concatenation of consecutive words, and has a letter when one of them has. Offsets count the characters
    that are not white space: a word ending at offset e lies in the first chunk ending at e or later."""
    chunk_ends = np.cumsum(np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks)))
    owners = np.searchsorted(chunk_ends, np.cumsum(table.lens)[alpha])  # ascending: chunk of each letter word
    return int(np.count_nonzero(owners[1:] != owners[:-1])) + 1 if len(owners) else 0


class _WordTable:
    """Words as integer ids (first-seen order) with per-word lengths: the n-gram statistics below
    run on arrays of ids instead of joined strings (datatrove's helpers join every window)."""

    __slots__ = ("n_words", "uniq", "ids", "lens", "chunk_uniq", "chunk_ids", "chunk_alpha", "uniq_isalpha")

    def __init__(self, words: list[str]):
        self.chunk_uniq = self.chunk_ids = self.chunk_alpha = self.uniq_isalpha = None
        self.uniq, self.ids = first_seen_codes(words)
        self.n_words = len(words)
        ulen = np.fromiter(map(len, self.uniq), dtype=np.int64, count=len(self.uniq))
        self.lens = ulen[self.ids] if len(words) else np.zeros(0, dtype=np.int64)

    @classmethod
    def subsequence(cls, table: _WordTable, keep: np.ndarray) -> _WordTable:
        """The table of the words of ``table`` where ``keep`` (a bool array over its words) is true: ids
        numbered again in first-seen order, so they equal those of a table built from those words. Holds no
        distinct words (``uniq`` is None): for the n-gram statistics, which read ids and lengths only."""
        out = cls.__new__(cls)
        ids = table.ids[keep]
        out.ids = group_codes(ids.astype(np.uint64))[0].astype(np.int64, copy=False) if len(ids) else ids
        out.lens = table.lens[keep]
        out.n_words, out.uniq = len(ids), None
        out.chunk_uniq = out.chunk_ids = out.chunk_alpha = out.uniq_isalpha = None
        return out

    @classmethod
    def of_text(cls, text: str) -> _WordTable:
        """The table of ``split_words(text)``, from the white-space chunks of ``text`` (``str.split``, several
        times faster than the word regex): each distinct chunk is split once, a chunk of letters only
        (``str.isalpha``, most of them) being one word and the others split together by one regex call on
        their join. Words never span white space and cover every other character, in order, so the words of
        the text are those of its chunks in turn. The words of the distinct chunks (first-seen order) number
        the words in the order a pass over the whole text first sees them (a word first occurs in the first
        occurrence of some chunk). Keeps the chunks' numbering (``chunk_uniq``, ``chunk_ids``, ``chunk_alpha``:
        which distinct chunks are letters only) for the whitespace-word ratio; a text holding one of
        ``_SPLIT_ONLY_SPACES`` is split by the regex (the chunks and the words disagree on white space)."""
        chunks = text.split()
        if not chunks or any(map(text.__contains__, _SPLIT_ONLY_SPACES)):
            return cls(split_words(text))
        out = cls.__new__(cls)
        out.uniq_isalpha = None
        cu, cc = first_seen_codes(chunks)
        isal = np.fromiter(map(str.isalpha, cu), dtype=bool, count=len(cu))
        out.chunk_uniq, out.chunk_ids, out.chunk_alpha = cu, cc, isal
        out.n_words = len(chunks)
        if isal.all():  # every chunk one word: the chunks' numbering is the words'
            out.uniq, out.ids, out.uniq_isalpha = cu, cc, isal
        else:
            na_idx = np.flatnonzero(~isal)
            na = [cu[i] for i in na_idx.tolist()]
            toks = _WORD_RE.findall(" ".join(na))
            # the chunk of each word: offsets count the characters that are not white space (see _alpha_chunks)
            owner = np.searchsorted(np.cumsum(np.fromiter(map(len, na), dtype=np.int64, count=len(na))),
                                    np.cumsum(np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))))
            ntok = np.bincount(owner, minlength=len(na))
            k = np.ones(len(cu), dtype=np.int64)
            k[na_idx] = ntok
            ends = np.cumsum(k)
            starts = ends - k  # where each distinct chunk's words start among the words of the distinct chunks
            flat = np.empty(int(ends[-1]), dtype=object)
            flat[starts[isal]] = np.fromiter(compress(cu, isal.tolist()), dtype=object,
                                             count=len(cu) - len(na))
            tok_first = np.cumsum(ntok) - ntok
            flat[starts[na_idx][owner] + (np.arange(len(toks)) - tok_first[owner])] = np.fromiter(
                toks, dtype=object, count=len(toks))
            wu, wc = first_seen_codes(flat.tolist())
            kc = k[cc]
            n = int(kc.sum())
            # the words of each chunk occurrence: its chunk's words among the distinct chunks'
            occ = np.repeat(starts[cc] - (np.cumsum(kc) - kc), kc) + np.arange(n)
            out.uniq, out.ids = wu, wc[occ]
            out.n_words = n
        ulen = np.fromiter(map(len, out.uniq), dtype=np.int64, count=len(out.uniq))
        out.lens = ulen[out.ids]
        return out

    def alpha_chunks(self) -> int | None:
        """How many white-space chunks of the text have a letter (``of_text`` tables; else None)."""
        if self.chunk_ids is None:
            return None
        fl = self.chunk_alpha.copy()
        others = np.flatnonzero(~fl)
        if len(others):
            cu = self.chunk_uniq
            fl[others] = has_alpha_flags([cu[i] for i in others.tolist()])
        return int(np.count_nonzero(fl[self.chunk_ids]))

    def per_word(self, flags) -> np.ndarray:
        """A boolean property computed once per distinct word (``flags(words, isalpha) -> bool array``, e.g.
        :func:`has_alpha_flags`; ``isalpha``: ``str.isalpha`` of each distinct word, computed once for the
        table), spread over all positions."""
        if not self.uniq:
            return np.zeros(0, dtype=bool)
        if self.uniq_isalpha is None:
            self.uniq_isalpha = np.fromiter(map(str.isalpha, self.uniq), dtype=bool, count=len(self.uniq))
        return flags(self.uniq, self.uniq_isalpha)[self.ids]

    def word_hashes(self) -> np.ndarray:
        """A 64-bit hash of each word (of its id): the 1-word windows of :func:`extend_window_hashes`."""
        # (uint64 array arithmetic wraps around without a warning: no np.errstate needed, which costs a
        # context switch per call)
        h1 = (self.ids.astype(np.uint64) + np.uint64(1)) * _MIX1
        h1 ^= h1 >> np.uint64(31)
        h1 *= _MIX2
        return h1


def extend_window_hashes(h: np.ndarray, h1: np.ndarray, positions: np.ndarray, n: int) -> np.ndarray:
    """The hashes of the n-word windows starting at ``positions`` from those of the (n-1)-word windows
    there (``h``, aligned with ``positions``) and the word hashes ``h1``: a window's hash depends on its
    words in order, so windows of equal words have equal hashes. Every position must start an n-word window
    (``positions <= len(h1) - n``)."""
    return (h ^ (h >> np.uint64(29))) * _MIX2 + h1[positions + (n - 1)]  # (wraps around, as word_hashes)


_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)


def group_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, counts)``: each value's group number, groups numbered in first-seen order, and each
    group's size (the ``inverse`` and ``counts`` of ``np.unique``, renumbered by first occurrence). By a
    hash table (pandas' ``UInt64HashTable``, as ``pandas.factorize`` numbers uint64 values; loaded without
    the pandas package: ``pandas_hashtables``): the n-gram statistics group every window of a page, and
    sorting them cost several times more."""
    hashtable, _ = _HASHTABLES[0] if _HASHTABLES else _load_hashtables()
    if values.dtype == np.uint64:
        # pandas.factorize's own hash table, called directly: the same codes, without factorize's checks
        # of its argument (about half the time of a call on the few hundred windows of a short page)
        uniques, codes = hashtable.UInt64HashTable(len(values)).factorize(values)
        return codes, np.bincount(codes, minlength=len(uniques))
    codes, uniques = _factorize(values)
    return codes, np.bincount(codes, minlength=len(uniques))


def _factorize(values: np.ndarray):
    import pandas as pd  # noqa: PLC0415 - other dtypes than uint64 (not used by this module's statistics)

    return pd.factorize(values)


def _load_hashtables() -> tuple:
    """pandas' hash tables (``pandas_hashtables``), looked up at the first call and kept in
    ``_HASHTABLES``: importing this module (as the launching process does to build a run's phases) loads
    none of pandas."""
    _HASHTABLES[:] = [pandas_hashtables()]
    return _HASHTABLES[0]


_HASHTABLES: list = []  # filled by _load_hashtables() at the first group_codes call


def _top_duplicate_chars(h: np.ndarray, clen: np.ndarray, n: int, first_chars: int) -> tuple[int, np.ndarray]:
    """datatrove ``find_top_duplicate(get_n_grams(words, n))``: length of the most frequent n-gram
    (words joined by spaces; the first seen among ties) times its count. ``h``, ``clen``: hashes and
    word characters of the windows at some positions, in order, among them every occurrence of each window
    that repeats (see ``_all_duplicate_chars``); ``first_chars``: the word characters of the page's first
    window, the answer when nothing repeats. Returns ``(characters, which of the windows repeat)``."""
    top, chars = 1, first_chars  # nothing repeats: Counter.most_common(1) gives the first window, once
    if not len(h):
        return int(chars + n - 1), np.zeros(0, dtype=bool)
    codes, counts = group_codes(h)
    if counts.max() > 1:
        top = int(counts.max())
        # among the most frequent windows the first seen has the smallest code (first-seen numbering)
        chars = clen[np.argmax(codes == np.argmax(counts == top))]
    return int((chars + n - 1) * top), counts[codes] > 1


def _all_duplicate_chars(h: np.ndarray, clen: np.ndarray, n: int, positions: np.ndarray
                         ) -> tuple[int, np.ndarray]:
    """datatrove ``find_all_duplicate(words, n)``: greedy left-to-right scan; a window seen before
    adds its characters and skips n words. Only windows that occur more than once can match, so the
    scan visits those positions only. ``h``, ``clen``: hashes and word characters of the windows at
    ``positions`` (ascending), which must hold every occurrence of each window that repeats: the positions
    of the repeating (n-1)-word windows do (a window repeats only if its prefix does).
    Returns ``(characters, which of the windows repeat)``."""
    if not len(h):
        return 0, np.zeros(0, dtype=bool)
    codes, counts = group_codes(h)
    repeats = counts[codes] > 1
    if not repeats.any():
        return 0, repeats
    # the scan on group numbers (equal windows, equal numbers): a byte per group instead of a set of hashes;
    # a window that does not match moves the scan to the next position, where every later candidate is
    seen = bytearray(len(counts))
    rep, nxt = 0, 0
    for pos, g, ln in zip(positions[repeats].tolist(), codes[repeats].tolist(), clen[repeats].tolist()):
        if pos < nxt:
            continue
        if seen[g]:
            rep += ln
            nxt = pos + n
        else:
            seen[g] = 1
    return int(rep), repeats


_PUNCTUATION_CHARS = "".join(sorted(PUNCTUATION_SET))
# every letter (str.isalpha: categories L*) is a word character that is neither a decimal digit (Nd) nor "_";
# a few such characters are not letters (other digits and numerals: "²", "Ⅻ"), so a hit on one of those is
# checked character by character
_LETTER_OR_NUMERAL_RE = re.compile(r"[^\W\d_]")


def _is_non_symbol(w: str) -> bool:
    """Any character outside ``PUNCTUATION_SET``: what ``strip`` of those characters leaves is not empty."""
    return bool(w.strip(_PUNCTUATION_CHARS))


def _has_alpha(w: str) -> bool:
    """``any(c.isalpha() for c in w)``, by one regex search in the common cases."""
    m = _LETTER_OR_NUMERAL_RE.search(w)
    if m is None:
        return False
    return m.group().isalpha() or any(c.isalpha() for c in w)


class _PerWord(dict):
    """``fn(word)`` remembered per distinct word for the process: the words of one page come back on the next
    (a dict lookup instead of a regex search or a strip per distinct word and page). At most ``max_items``
    words of at most ``max_len`` characters are kept (emptied when full); longer ones are computed each time."""

    __slots__ = ("fn", "max_items", "max_len")

    def __init__(self, fn, max_items: int = 10_000, max_len: int = 24):
        super().__init__()
        self.fn, self.max_items, self.max_len = fn, max_items, max_len

    def __missing__(self, w: str) -> bool:
        v = self.fn(w)
        if len(w) <= self.max_len:
            if len(self) >= self.max_items:
                self.clear()
            self[w] = v
        return v


has_alpha = _PerWord(_has_alpha).__getitem__  # _has_alpha, remembered per word
is_non_symbol = _PerWord(_is_non_symbol).__getitem__  # _is_non_symbol, remembered per word


def has_alpha_flags(words: list[str], isalpha: np.ndarray | None = None) -> np.ndarray:
    """``[has_alpha(w) for w in words]`` as a bool array, at C speed for most words: a word of letters only
    (``str.isalpha``) has one, and so has a word whose letters only lack some ASCII punctuation or digits
    around them ("word,", "(see", "2nd"); the others (numbers, punctuation, "x86-64") ask :func:`has_alpha`."""
    flags = (np.fromiter(map(str.isalpha, words), dtype=bool, count=len(words)) if isalpha is None
             else isalpha.copy())  # (``isalpha``: ``str.isalpha`` of each word, if at hand)
    others = np.flatnonzero(~flags)
    if len(others):
        rest = [words[i] for i in others.tolist()]
        core = np.fromiter(map(str.isalpha, map(str.strip, rest, repeat(_ASCII_NON_LETTERS))), dtype=bool,
                           count=len(rest))
        flags[others[core]] = True
        if not core.all():
            others = others[~core]
            flags[others] = np.fromiter(map(has_alpha, compress(rest, (~core).tolist())), dtype=bool,
                                        count=len(others))
    return flags


# ASCII characters that are not letters (str.strip of them leaves a word's letters in place)
_ASCII_NON_LETTERS = "".join(c for c in map(chr, range(128)) if not c.isalpha())


def non_symbol_flags(words: list[str], isalpha: np.ndarray | None = None) -> np.ndarray:
    """``[is_non_symbol(w) for w in words]`` as a bool array: a word of letters only is not a symbol (no letter
    is in ``PUNCTUATION_SET``: tests/web/test_web_heuristics.py); the others ask :func:`is_non_symbol`."""
    flags = (np.fromiter(map(str.isalpha, words), dtype=bool, count=len(words)) if isalpha is None
             else isalpha.copy())  # (as has_alpha_flags)
    others = ~flags
    if others.any():
        flags[others] = np.fromiter(map(is_non_symbol, compress(words, others.tolist())), dtype=bool,
                                    count=int(others.sum()))
    return flags


def gopher_quality_signals(text: str, words: list[str] | None = None, table: _WordTable | None = None) -> dict:
    """Values behind datatrove's GopherQualityFilter (same definitions)."""
    table = table or _WordTable(split_words(text) if words is None else words)
    n_words = len(table.ids)
    ns = table.per_word(non_symbol_flags)
    n_ns = int(ns.sum())
    lines = text.splitlines() or [""]
    alpha = table.per_word(has_alpha_flags)
    out = {
        "n_words": n_ns,
        "mean_word_length": _r(table.lens[ns].sum() / n_ns) if n_ns else 0.0,
        "hash_word_ratio": _r(text.count("#") / n_words) if n_words else 0.0,
        "ellipsis_word_ratio": _r((text.count("...") + text.count("…")) / n_words) if n_words else 0.0,
        # (per-line tests by C-level map: the same counts as the generator over lines)
        "bullet_lines_ratio": _r(sum(map(str.startswith, map(str.lstrip, lines), repeat(("•", "-")))) / len(lines)),
        "end_ellipsis_lines_ratio": _r(sum(map(str.endswith, map(str.rstrip, lines), repeat(("...", "…"))))
                                       / len(lines)),
        "alpha_words_ratio": _r(alpha.sum() / n_words) if n_words else 0.0,
        # the Gopher paper's reading: whitespace-separated words (punctuation stays attached)
        "alpha_ws_words_ratio": _alpha_ws_ratio(text, table, alpha),
        "stop_words": len(_STOP_WORDS.intersection(map(str.lower, table.uniq))),
    }
    return out


def count_duplicates(items: list[str]) -> tuple[int, int]:
    """datatrove's ``find_duplicates(items)``: ``(elements, characters)`` of every item after the first of
    its value. Each distinct value adds (count - 1) elements and (count - 1) times its length: the totals
    less what the distinct values hold, by C-level set and length sums instead of a loop."""
    distinct = set(items)
    return len(items) - len(distinct), sum(map(len, items)) - sum(map(len, distinct))


def split_line_runs(text: str) -> list[str]:
    r"""``re.split(r"\n+", text)``: ``text.split("\n")`` without the empty pieces between consecutive line
    breaks (the first and the last piece stay, empty or not, as the regex leaves them)."""
    parts = text.split("\n")
    if len(parts) < 3:
        return parts
    out = [parts[0]]
    out += filter(None, parts[1:-1])
    out.append(parts[-1])
    return out


def split_paragraphs(stripped: str) -> list[str]:
    r"""``re.split(r"\n{2,}", stripped)`` of a text without leading or trailing white space: split at every
    "\n\n", a run of k line breaks leaves k // 2 - 1 empty pieces (dropped) and, k odd, one "\n" at the start
    of the piece after it (removed: a regex piece never starts with a line break, as the run before it is
    maximal); no piece is empty at either end, as the text is stripped."""
    if "\n\n" not in stripped:
        return [stripped]
    return [p[1:] if p[:1] == "\n" else p for p in stripped.split("\n\n") if p]


def gopher_repetition_signals(text: str, words: list[str] | None = None, table: _WordTable | None = None) -> dict:
    """Values behind datatrove's GopherRepetitionFilter (same definitions; n-grams compared as word
    sequences, where datatrove compares the words joined without separators)."""
    out: dict = {}
    stripped = text.strip()
    n_chars = max(len(text), 1)
    paragraphs = split_paragraphs(stripped) if stripped else []
    if paragraphs:
        pd, pc = count_duplicates(paragraphs)
        out["dup_para_frac"] = _r(pd / len(paragraphs))
        out["dup_para_char_frac"] = _r(pc / n_chars)
    else:
        out["dup_para_frac"] = out["dup_para_char_frac"] = 0.0
    lines = split_line_runs(text) if text else []
    if lines:
        ld, lc = count_duplicates(lines)
        out["dup_line_frac"] = _r(ld / len(lines))
        out["dup_line_char_frac"] = _r(lc / n_chars)
    else:
        out["dup_line_frac"] = out["dup_line_char_frac"] = 0.0
    table = table or _WordTable(split_words(text) if words is None else words)
    for n in GOPHER_TOP_NGRAMS:
        out[f"top_{n}gram_char_frac"] = 0.0
    for n in GOPHER_DUP_NGRAMS:
        out[f"dup_{n}gram_char_frac"] = 0.0
    m = len(table.ids)
    if not m:
        return out
    # a window of n words can only repeat where both its (n-1)-word prefix (at the same position) and its
    # (n-1)-word suffix (at the next one) repeat: each n hashes and groups only the windows at those positions,
    # starting from the words that repeat
    cs = np.concatenate(([0], np.cumsum(table.lens)))
    h1 = table.word_hashes()
    h, positions = h1, np.arange(m)
    repeats = np.bincount(table.ids)[table.ids] > 1
    starts_repeat = np.zeros(m + 1, dtype=bool)  # whether the (n-1)-word window at a position repeats
    for n in range(2, min(max(GOPHER_DUP_NGRAMS), m) + 1):
        positions, h = positions[repeats], h[repeats]
        if not len(positions) and n > max(GOPHER_TOP_NGRAMS):
            break  # no window repeats: every further duplicate fraction stays 0
        starts_repeat[positions] = True
        suffix = starts_repeat[positions + 1]  # (then the window fits: positions + 1 <= m - (n - 1))
        starts_repeat[positions] = False  # (cleared where set: the array stays all false between lengths)
        positions = positions[suffix]
        h = extend_window_hashes(h[suffix], h1, positions, n)
        clen = cs[positions + n] - cs[positions]
        if n in GOPHER_TOP_NGRAMS:
            chars, repeats = _top_duplicate_chars(h, clen, n, int(cs[n]))
            out[f"top_{n}gram_char_frac"] = _r(chars / n_chars)
        if n in GOPHER_DUP_NGRAMS:
            chars, repeats = _all_duplicate_chars(h, clen, n, positions)
            out[f"dup_{n}gram_char_frac"] = _r(chars / n_chars)
    return out


_LOREM_FILLER_RE = re.compile(r"lorem\W+ipsum\W+dolor")


def c4_signals(text: str) -> dict:
    """Values behind C4's page/line rules (datatrove C4QualityFilter, split on lines).

    The line rules by whole-list operations (``_c4_line_values``: C-level maps, one sentence-end search over the
    kept lines joined) instead of a loop over lines (tests/web/test_web_heuristics.py has that loop)."""
    lines = list(filter(None, map(str.strip, text.splitlines())))
    n_lines = len(lines)
    lower = text.lower()
    # a line (citations removed, lower-cased) holds "javascript" or a policy phrase only when the whole text
    # (citations removed, lower-cased) does: a citation never spans lines, and neither does a phrase
    cited = "[" in text
    text_nc = CITATION_REGEX.sub("", text).lower() if cited else lower
    kept, n_sentences, js, policy, too_long = _c4_line_values(lines, cited, "javascript" in text_nc,
                                                              _has_policy(text_nc))
    return {
        "n_lines": n_lines,
        "kept_lines_frac": _r(kept / n_lines) if n_lines else 0.0,
        "n_sentences": n_sentences,
        "has_lorem_ipsum": "lorem ipsum" in lower,
        # the placeholder text itself ("Lorem ipsum dolor sit amet", across line breaks too), not a mention of
        # it ("generates some lorem ipsum for the template": Jinja's lipsum() reference)
        "has_lorem_ipsum_filler": "lorem" in lower and _LOREM_FILLER_RE.search(lower) is not None,
        "has_curly_bracket": "{" in text,
        "javascript_lines_frac": _r(js / n_lines) if n_lines else 0.0,
        "policy_lines_frac": _r(policy / n_lines) if n_lines else 0.0,
        "too_long_word_lines": too_long,
    }


def _has_policy(text: str) -> bool:
    """Whether ``text`` holds one of C4's policy phrases (``POLICY_SUBSTRINGS``): one substring search per
    phrase, several times faster than the search of their alternation (a regex) over a whole page."""
    return any(map(text.__contains__, POLICY_SUBSTRINGS))


def _c4_line_values(lines: list[str], cited: bool, check_js: bool, check_policy: bool) -> tuple[int, ...]:
    """``(kept, n_sentences, javascript, policy, too_long)`` of C4's line rules over the (stripped, not empty)
    ``lines``. A line with a word over 1,000 characters counts as too long only; the others are tested with
    citations removed (``cited``: the text holds a "["), and counted as holding "javascript" or a policy
    phrase (only searched for where the whole text holds one: ``check_js``, ``check_policy``); a line that
    holds neither, ends with end punctuation but not "...", and has at least 3 words is kept, with at least one
    sentence. Lines hold no line break, so the sentence ends of the kept lines are found in one search over
    them joined by line breaks: a line break after a run of end punctuation is white space, as the end of a
    line is; the runs never span a line break (not end punctuation)."""
    too_long = 0
    if any(map(1000 .__lt__, map(len, lines))):
        long = {i for i, ln in enumerate(lines) if len(ln) > 1000 and max(map(len, ln.split())) > 1000}
        if long:
            too_long = len(long)
            lines = [ln for i, ln in enumerate(lines) if i not in long]
    if cited:
        nc = [CITATION_REGEX.sub("", ln) if "[" in ln else ln for ln in lines]
    else:
        nc = lines
    js = policy = 0
    if check_js or check_policy:
        low = list(map(str.lower, nc))
        flag_js = list(map(str.__contains__, low, repeat("javascript"))) if check_js else [False] * len(low)
        flag_pol = list(map(_has_policy, low)) if check_policy else [False] * len(low)
        js, policy = sum(flag_js), sum(flag_pol)
        if js or policy:
            out = list(map(operator.or_, flag_js, flag_pol))
            lines = [ln for ln, o in zip(lines, out) if not o]
            nc = [ln for ln, o in zip(nc, out) if not o]
    ends = list(map(str.endswith, nc, repeat(END_PUNCTUATION)))
    cand = [(ln, c) for ln, c, e in zip(lines, nc, ends) if e and not c.endswith("...")]
    kept_nc = [c for ln, c in cand if len(ln.split(None, 2)) == 3]
    if not kept_nc:
        return 0, 0, js, policy, too_long
    n_sentences = len(_SENT_END_RE.findall("\n".join(kept_nc)))
    # a kept line ends with end punctuation: one sentence end at least, unless it ends with a quote
    n_sentences += sum(1 for c in kept_nc if c.endswith(_QUOTES) and _SENT_END_RE.search(c) is None)
    return len(kept_nc), n_sentences, js, policy, too_long


_QUOTES = tuple(p for p in END_PUNCTUATION if p not in ".!?。！？")


def fineweb_signals(text: str, words: list[str] | None = None, short_line_length: int = 30,
                    n_words: int | None = None) -> dict:
    """Values behind datatrove's FineWebQualityFilter. Of the words (``split_words(text)`` unless given)
    only their number is read: ``n_words`` gives it instead."""
    lines = list(filter(str.strip, text.split("\n")))  # the lines that are not blank
    if not lines:
        return {"line_punct_ratio": 0.0, "short_line_ratio": 0.0, "char_dup_ratio": 0.0, "list_ratio": 0.0}
    if n_words is None:
        n_words = len(split_words(text) if words is None else words)
    no_nl = max(len(text.replace("\n", "")), 1)
    return {
        # (a line's last character among the stop characters: line.endswith(_FINEWEB_STOP_CHARS), which tries
        # each of them in turn; lines are not empty)
        "line_punct_ratio": _r(sum(map(_FINEWEB_STOP_SET.__contains__, map(itemgetter(-1), lines))) / len(lines)),
        "short_line_ratio": _r(sum(map(short_line_length.__ge__, map(len, lines))) / len(lines)),
        "char_dup_ratio": _r(count_duplicates(lines)[1] / no_nl),
        "list_ratio": _r(text.count("\n") / n_words) if n_words else 0.0,
    }


def classic_signals(text: str, prefix: str = "") -> dict:
    """All classic signals for ``text`` as flat ``<prefix>gopher__*``, ``c4__*``, ``fineweb__*`` keys."""
    return _classic_signals(text, prefix)[0]


def _classic_signals(text: str, prefix: str = "") -> tuple[dict, _WordTable]:
    """``classic_signals`` and the words of ``text`` (for the reference signals of the same text)."""
    table = _WordTable.of_text(text)
    out = {}
    for k, v in gopher_quality_signals(text, table=table).items():
        out[f"{prefix}gopher__{k}"] = v
    for k, v in gopher_repetition_signals(text, table=table).items():
        out[f"{prefix}gopher__{k}"] = v
    for k, v in c4_signals(text).items():
        out[f"{prefix}c4__{k}"] = v
    for k, v in fineweb_signals(text, n_words=table.n_words).items():
        out[f"{prefix}fineweb__{k}"] = v
    return out, table


# a page carries reference material when this much of it is code, or it has this many inline code
# spans or table rows
REFERENCE_CODE_FRAC = 0.05
REFERENCE_INLINE_CODE = 5
REFERENCE_TABLE_ROWS = 5
_LABEL_MAX_WORDS = 4
_LIST_MARKS = ("• ", "- ", "* ", "+ ", "◦ ", "▪ ")
_VERSION_NOTE_RE = re.compile(r"(New|Changed|Added|Deprecated|Removed)( in| since)? (version|v?\d)", re.I)


def code_share(counts: dict, n_chars: int) -> float:
    """``web__code_share``: the share of the page's characters in code, fenced blocks and inline code
    spans together (``split_prose`` counts). Reference documentation carries its code in both: an API
    page of signatures and parameter names in inline code has few blocks but a large share, while
    general web pages have almost none (2 of 251 pages of the bench_e2e web pages reach 0.05, 223 of 274
    documentation pages do). Decision rules that judge prose (the web quality floor, character
    duplication, the word-count floor) take this share into account."""
    return _r((counts.get("code_chars", 0) + counts.get("inline_code_chars", 0)) / max(n_chars, 1))


_IDW = r"[A-Za-z0-9_]"
# an API identifier, as reference documentation writes its names in signatures, member tables and prose: a call or
# declaration (``name(...)``, ``name ()``), a qualified name (``a::b``, ``a->b``), a dotted path of three parts or
# more that is not a host name (``org.apache.commons.lang3``), snake_case (``size_t``, ``Autolink_Test``) or
# camelCase starting lower-case (``wxDialog``, ``getValue``). Not PascalCase alone: brand and user names
# (VeriSign, GratefulDead) carry general-web registries and forum listings. ASCII names, whole tokens only.
_IDENTIFIER_RE = re.compile(rf"""
  (?<![A-Za-z0-9_.])(?=[A-Za-z_~](?:[a-z0-9]*+[A-Z]|[A-Za-z0-9]*+[_(:\-. ]))(?:
    [A-Za-z_~]{_IDW}*+(?:::|->)[A-Za-z_~]{_IDW}*+(?:(?:::|->)[A-Za-z_~]{_IDW}*+)*(?:\(\)?)?
  | [A-Za-z_~]{_IDW}*+(?:\((?=[^()\n]{{0,200}}+\))|\s?\(\))
  | (?!www\.)[a-z_]{_IDW}*+(?:\.[A-Za-z_]{_IDW}*+){{2,}}(?<!\.com)(?<!\.org)(?<!\.net)(?<!\.html)(?<!\.php)
  | [A-Za-z][A-Za-z0-9]*+_{_IDW}++
  | [a-z][a-z0-9]*+[A-Z]{_IDW}*+
  )(?:(?<=\()|(?![A-Za-z0-9_]))
""", re.X)
# The matches of the backtracking form it was (tests/web/test_identifier_share.py keeps it as the oracle), with
# possessive runs (``*+``): in every match a run ends where no word character follows (``::``, ``(``, ``.``, the
# name's end), so a shorter run never matches; snake_case takes its first underscore where the backtracking form
# went back to the last one followed by a word character (the same whole name either way).
#
# Where a match can start: each alternative needs a mark in or right after its name: ``_`` before a word character
# (snake_case), a lower-case letter or digit before a capital (camelCase, lower-case up to it), ``(`` or a blank and
# ``()`` (a call), ``::`` or ``->`` (a qualified name), ``.part.part`` (a dotted path). On the reversed text,
# _IDENTIFIER_MARK_REV_RE goes from each mark back to the start of its name, where _IDENTIFIER_RE's look-behind
# holds; between marks it moves at the speed of one character class. _IDENTIFIER_RE is then tried at those starts
# in order, those inside the match before skipped: what ``findall`` finds, at 6-15 ns a character instead of 55-70
# (a match tried at every position). A ``~`` is the start where a call or a qualified name follows (the only
# alternatives that take it); where nothing matches from it, the name after it is tried.
_NAME_START = r"[A-Za-z0-9_]*+(?:~|(?<=[A-Za-z_]))"
_IDENTIFIER_MARK_REV_RE = re.compile(rf"""[_(:>.A-Z](?:
    (?<=[A-Z])[a-z0-9]++(?<=[a-z])
  | (?<![A-Z])(?:
      (?<=[A-Za-z0-9_]_)[A-Za-z0-9_]*+(?<=[A-Za-z])
    | (?<=\()(?:(?<=\)\()\s)?+{_NAME_START}
    | (?<=:):{_NAME_START}
    | (?<=>)-{_NAME_START}
    | (?<=[A-Za-z_]\.)[A-Za-z0-9_]*+\.(?<=[A-Za-z_]\.)[A-Za-z0-9_]*+(?<=[a-z_])))
  (?![A-Za-z0-9_.])""", re.X)


def identifier_share(text: str) -> float:
    """``web__identifier_share``: the share of the page's characters in API identifiers (``_IDENTIFIER_RE``), in
    code, tables and prose alike. Doxygen and Javadoc member listings and parameter tables carry their names
    in table cells, not in code blocks or inline code, so their code share stays near 0 while this share is
    high: 0.11 or more on 261 of the 262 Doxygen/wxWidgets/gtk-doc pages that the web quality floor alone
    excluded (of 1,999 pages of doxygen-doc, wx3.2-doc, libgtk-3-doc, libcommons-lang3-java-doc, libfmt-doc),
    at most 0.078 on the general-web pages of the bench_e2e train/dev splits that the floor alone excluded (16
    of 531: archive.org navigation, IANA registries; 99% of those 531 pages are under 0.053).

    The characters of ``_IDENTIFIER_RE.findall(text)``, with the pattern tried only where a name can start
    (``_IDENTIFIER_MARK_REV_RE``)."""
    n = len(text)
    starts = [n - m.end() for m in _IDENTIFIER_MARK_REV_RE.finditer(text[::-1])]
    found = end = 0
    match = _IDENTIFIER_RE.match
    for q in reversed(starts):
        if q < end:  # inside the identifier before
            continue
        m = match(text, q)
        if m is None and text[q] == "~":  # no call or qualified name after the tilde: the name alone may be one
            q += 1
            m = match(text, q)
        if m is not None:
            end = m.end()
            found += end - q
    return _r(found / max(n, 1))


def is_reference_page(counts: dict, n_chars: int) -> bool:
    """Whether a page carries code or tables (``split_prose`` counts): reference documentation."""
    return (counts.get("code_chars", 0) >= REFERENCE_CODE_FRAC * max(n_chars, 1)
            or counts.get("n_inline_code", 0) >= REFERENCE_INLINE_CODE
            or counts.get("table_rows", 0) >= REFERENCE_TABLE_ROWS)


def strip_label_lines(prose: str) -> str:
    """Prose without the structure that repeats once per entry of an API reference: short label
    lines (at most four words: "Examples", "Returns", "History", "Added in: v10.6.0", "source",
    "Read-only."), version notes ("New in version 1.3.", "Changed in version 2.0: ...",
    "Deprecated since version 3.1") and list items (parameter lists: "- options <Object>", "• ttl
    <boolean> Retrieves the Time-To-Live value ..." repeat for every function taking them)."""
    lines = prose.split("\n")
    return _join_kept_lines(list(compress(lines, _kept_lines(lines))))


def _kept_lines(lines: list[str]) -> list[bool]:
    """Which of the lines ``strip_label_lines`` keeps (blank lines are kept)."""
    # (at most _LABEL_MAX_WORDS words: split(None, _LABEL_MAX_WORDS) gives at most that many pieces)
    return [not (s and (len(s.split(None, _LABEL_MAX_WORDS)) <= _LABEL_MAX_WORDS or s.startswith(_LIST_MARKS)
                        or _VERSION_NOTE_RE.match(s))) for s in map(str.strip, lines)]


def _join_kept_lines(kept: list[str]) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def _label_free_body(prose: str, table: _WordTable | None) -> tuple[str, _WordTable]:
    """``strip_label_lines(prose)`` and its words. With ``table`` (the words of ``prose``), the words are
    those of the kept lines, taken from ``table``: a word never spans a line break (white space), and
    joining lines, collapsing blank lines and stripping change white space only. Each word's line: offsets
    count the characters that are not white space, a word ending at offset e lies in the first line ending
    at e or later (as for ``_alpha_chunks``; ``str.split`` and the words' ``\\s`` agree on white space
    unless the prose holds one of ``_SPLIT_ONLY_SPACES``: then the body's words are split again)."""
    lines = prose.split("\n")
    kept = _kept_lines(lines)
    body = _join_kept_lines(list(compress(lines, kept)))
    if table is None or any(map(prose.__contains__, _SPLIT_ONLY_SPACES)):
        return body, _WordTable(split_words(body))
    line_ends = np.cumsum(np.fromiter(map(len, map("".join, map(str.split, lines))), dtype=np.int64,
                                      count=len(lines)))
    owner = np.searchsorted(line_ends, np.cumsum(table.lens))
    return body, _WordTable.subsequence(table, np.array(kept, dtype=bool)[owner])


def reference_repetition_signals(prose: str, counts: dict, n_chars: int, prose_signals: dict,
                                 prose_table: _WordTable | None = None) -> dict:
    """``ref__*``: the repetition signals (Gopher duplicate lines/paragraphs/n-grams, FineWeb
    character duplication) of a reference page measured on its prose without label lines
    (``strip_label_lines``), character fractions relative to the whole page; on other pages the
    prose values themselves. So one threshold keeps API references whose
    "Parameters"/"Returns"/"Examples" labels repeat per entry, and still catches a page that repeats
    its sentences. ``prose_table``: the words of ``prose``, if at hand (the body's words are taken from them)."""
    keys = [k for k in prose_signals if k.startswith(("prose__gopher__dup_", "prose__gopher__top_"))]
    keys.append("prose__fineweb__char_dup_ratio")
    ref = is_reference_page(counts, n_chars)
    if ref:
        body, table = _label_free_body(prose, prose_table)
        # character fractions relative to the whole page (its code included), as Gopher defines them
        # on the page text: a code listing's few repeated navigation words are not the page
        scale = len(body) / max(n_chars, len(body), 1)
        vals = {f"gopher__{k}": (_r(v * scale) if "char_frac" in k else v)
                for k, v in gopher_repetition_signals(body, table=table).items()}
        vals["fineweb__char_dup_ratio"] = (_r(fineweb_signals(body, n_words=table.n_words)["char_dup_ratio"] * scale)
                                           if body else 0.0)
        out = {"ref__" + k[len("prose__"):]: vals[k[len("prose__"):]] for k in keys}
    else:
        out = {"ref__" + k[len("prose__"):]: prose_signals[k] for k in keys}
    out["web__reference_page"] = ref
    return out


def web_heuristic_signals(text: str, cut: bool = False) -> dict:
    """Classic signals on the full text, the same on prose only (``prose__``), and ``web__`` shares.

    ``cut``: ``text`` is a prefix of the page (see :func:`split_prose`)."""
    out, table = _classic_signals(text)
    prose, counts = split_prose(text, cut=cut)
    if prose == text.strip() and prose == text:  # nothing removed: the prose values are the classic ones
        out.update({f"prose__{k}": v for k, v in list(out.items())})
    else:
        prose_out, table = _classic_signals(prose, prefix="prose__")
        out.update(prose_out)
    out.update(reference_repetition_signals(prose, counts, len(text), out, table))
    n = max(len(text), 1)
    out["web__n_code_blocks"] = counts["n_code_blocks"]
    out["web__code_char_frac"] = _r(counts["code_chars"] / n)
    out["web__code_share"] = code_share(counts, len(text))
    out["web__identifier_share"] = identifier_share(text)
    out["web__n_math"] = counts["n_math"]
    out["web__math_char_frac"] = _r(counts["math_chars"] / n)
    out["web__table_rows"] = counts["table_rows"]
    out["web__n_inline_code"] = counts["n_inline_code"]
    out["web__prose_char_frac"] = _r(len(prose) / n) if text else 0.0
    return out


# classic signals measured on a whole text, for the web quality step of the same worker (it reads the
# stored values instead of computing them again: ``assay.stages.web.quality.stored_classic_signals``);
# only texts that step can use (its first 20,000 characters are the whole text)
MEASURED = TextMemo(max_chars=WHOLE_TEXT_MAX_CHARS)


class WebHeuristicSignals(PipelineStep):
    """Store Gopher/C4/FineWeb signals (full text and prose only). Never drops documents.

    Args:
        sources: ``metadata["source"]`` values to process (default ``["web"]``; pdf text works too).
        max_chars: only the first ``max_chars`` characters are measured (bounds the n-gram work on
            giant pages; ``web__measured_chars`` records how much was measured). A fenced block that the cut
            leaves open is measured as code up to the cut (``split_prose(..., cut=True)``).
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
                sig = web_heuristic_signals(text[: self.max_chars], cut=len(text) > self.max_chars)
            sig["web__measured_chars"] = min(len(text), self.max_chars)
            meta.update(sig)
            if len(text) <= self.max_chars:
                MEASURED.put(doc.id, text, True)
            self.stat_update("measured")
            yield doc
