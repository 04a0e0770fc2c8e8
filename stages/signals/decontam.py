"""Decontamination against evaluation sets given as files (``decontamination_v1``), for every source.

Web pages, PDF text and code are checked the same way (the default recipe runs it as a common
step). Text mode first normalises what differs between a benchmark file and the same words in a
web page or a PDF text layer: Unicode NFKC (ligatures such as U+FB01 become ``fi``, full-width
forms fold), soft hyphens removed, and words hyphenated across a line break joined
(``experi-\nment`` -> ``experiment``); the item side gets the same normalisation.

Eval sets: JSONL (optionally .gz/.zst), JSON arrays, Parquet, CSV (MMLU layout without header),
and tar/zip archives of those (MMLU ``data/test/*.csv``). Directories are expanded.

Each record yields *items*: code-like string fields of a record are joined into one code item
(tests become a separate item); other string fields (questions, answers, problems, solutions,
choices) are text items. Matching is per item:

* text mode: lower-cased word n-grams (default 13 words) -> whitespace/case-insensitive;
* code mode: lexical-token n-grams (default ``2 * ngram`` tokens) where every non-keyword
  identifier is replaced by the distance to its previous occurrence inside the window
  (parameterised matching), so consistent identifier renaming and whitespace edits still match.

An item matches a document when at least ``min_overlap`` (default 0.6) of its distinct n-grams
occur in the document (and at least ``min(3, n)`` of them); items shorter than one n-gram are
matched as a whole: text items as a whitespace/case-normalised lexical-token substring
(punctuation kept, so ``Simplify $\\sqrt{192}$.`` is 9 tokens), code items as a renamed token
sequence when they have at least ``min_code_item_tokens`` (16) tokens and verbatim (whitespace/case
normalised) below that: a renamed ``def f(x): return min(x)`` is not attributable to one benchmark.

Signals: ``decont__match`` (bool), ``decont__benchmark`` (str|None), ``decont__overlap`` (float,
best item coverage), ``decont__item`` (str|None, id of the best item), ``decont__mode``.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import keyword
import os
import re
import tarfile
import unicodedata
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep


__all__ = ["Decontamination", "EvalIndex", "EvalItem", "load_eval_items", "build_index", "missing_eval_sets",
           "normalize_prose", "cached_index", "ensure_index_cached", "write_index", "read_index"]


def missing_eval_sets(eval_sets: Iterable[str]) -> list[str]:
    """Entries of ``eval_sets`` whose path does not exist."""
    out = []
    for spec in eval_sets:
        path = spec.split("=", 1)[1] if "=" in spec and not os.path.exists(spec) else spec
        if not os.path.exists(path):
            out.append(path)
    return out

_TEXT_TOKEN = re.compile(r"\w+")
_CODE_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|[^\s\w]")
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_LOOKS_CODE = re.compile(
    r"^\s*(def |class |func |fn |function |#include|package |import |from \S+ import |public |private |static |"
    r"return\b|assert |using |let |var |const |local |end\b|\}|<\?php|sub |module |impl |pub |val |object )",
    re.M,
)
_TEST_KEYS = {"test", "tests", "test_list", "challenge_test_list", "test_setup_code", "test_imports"}
_SKIP_KEYS = {"task_id", "name", "original", "language", "idx", "id", "type", "level", "entry_point",
              "prompt_terminology", "doctests", "stop_tokens", "answer_idx", "subject", "source", "url", "ID",
              "Type", "solution_type", "formula", "Equation", "unique_id"}
# keywords / builtins shared by common languages stay literal in code mode
_KEYWORDS = set(keyword.kwlist) | {
    # words reserved in the common C-like languages; types and builtins stay renamable
    "func", "fn", "function", "var", "let", "const", "public", "private", "protected", "static", "struct",
    "interface", "package", "namespace", "template", "typename", "sizeof", "nil", "null", "true", "false",
    "impl", "pub", "extends", "implements", "throws", "throw", "catch", "new", "this", "self", "include", "define",
}


@dataclass(frozen=True)
class EvalItem:
    benchmark: str
    item_id: str
    mode: str  # "text" | "code"
    text: str


# ------------------------------------------------------------------------------------------------ loading
def _looks_like_code(s: str) -> bool:
    return s.count("\n") >= 1 and _LOOKS_CODE.search(s) is not None


def _record_items(rec: dict, benchmark: str, rid: str) -> Iterator[EvalItem]:
    code_parts: dict[str, str] = {}
    test_parts: list[str] = []
    list_parts: list[str] = []
    for k, v in rec.items():
        if k in _SKIP_KEYS:
            continue
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            if k in _TEST_KEYS:
                test_parts.append("\n".join(v))
            else:
                list_parts.append("\n".join(v))
            continue
        if not isinstance(v, str) or len(v) < 20:
            continue
        if k in _TEST_KEYS:
            test_parts.append(v)
        elif _looks_like_code(v) or k in ("canonical_solution", "code"):
            code_parts[k] = v
        else:
            yield EvalItem(benchmark, f"{rid}:{k}", "text", v)
    if list_parts:  # multiple-choice options: one text item with the question when present
        q = rec.get("question") or rec.get("Question") or ""
        yield EvalItem(benchmark, f"{rid}:choices", "text", (q + "\n" if isinstance(q, str) else "") + "\n".join(list_parts))
    # HumanEval-style records: the solution completes the prompt, so they form one item
    if "canonical_solution" in code_parts and "prompt" in code_parts:
        code_parts["prompt"] = code_parts["prompt"] + code_parts.pop("canonical_solution")
    for k, v in code_parts.items():
        yield EvalItem(benchmark, f"{rid}:{k}", "code", v)
    if test_parts:
        yield EvalItem(benchmark, f"{rid}:test", "code", "\n".join(test_parts))


def _csv_items(data: bytes, benchmark: str, name: str) -> Iterator[EvalItem]:
    text = data.decode("utf-8", "replace")
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        if not row:
            continue
        if i == 0 and [c.lower() for c in row[:2]] in (["question", "a"], ["id", "question"]):
            continue
        # MMLU layout: question, A, B, C, D, answer-letter
        body = row[:-1] if len(row) >= 3 and len(row[-1]) <= 2 else row
        yield EvalItem(benchmark, f"{name}#{i}", "text", "\n".join(body))


def _records_from_bytes(name: str, data: bytes) -> Iterator[dict]:
    low = name.lower()
    if low.endswith(".gz"):
        data = gzip.decompress(data)
        low = low[:-3]
    elif low.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
        low = low[:-4]
    if low.endswith((".jsonl", ".ndjson")):
        for line in data.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj
    elif low.endswith(".json"):
        try:
            obj = json.loads(data)
        except ValueError:
            return
        rows = obj if isinstance(obj, list) else obj.get("data", obj.get("examples", [])) if isinstance(obj, dict) else []
        for r in rows:
            if isinstance(r, dict):
                yield r
    elif low.endswith(".parquet"):
        import pyarrow.parquet as pq

        yield from pq.read_table(io.BytesIO(data)).to_pylist()


def _benchmark_name(path: str, member: str | None = None) -> str:
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    stem = os.path.basename(member or path)
    for suf in (".gz", ".zst", ".jsonl", ".json", ".ndjson", ".parquet", ".csv", ".tar", ".zip"):
        if stem.lower().endswith(suf):
            stem = stem[: -len(suf)]
    return f"{parent}:{stem}" if parent else stem


def _items_from_member(path: str, member: str, data: bytes, bench: str) -> Iterator[EvalItem]:
    if member.lower().endswith((".csv", ".csv.gz")):
        if member.lower().endswith(".gz"):
            data = gzip.decompress(data)
        yield from _csv_items(data, bench, os.path.basename(member))
        return
    for i, rec in enumerate(_records_from_bytes(member, data)):
        rid = str(rec.get("task_id") or rec.get("name") or rec.get("idx", i))
        yield from _record_items(rec, bench, f"{os.path.basename(member)}#{rid}")


def load_eval_items(eval_sets: Iterable[str], *, missing: str = "error") -> list[EvalItem]:
    """Load items from eval-set files, archives or directories.

    An entry may be ``name=path`` to force the benchmark name. Archive members under ``train/`` or
    ``auxiliary_train/`` are skipped (test, dev and validation splits are all indexed).
    ``missing="skip"`` leaves out paths that do not exist (they are listed by ``missing_eval_sets``);
    ``"error"`` raises ``FileNotFoundError``.
    """
    items: list[EvalItem] = []
    for spec in eval_sets:
        forced = None
        if "=" in spec and not os.path.exists(spec):
            forced, spec = spec.split("=", 1)
        if not os.path.exists(spec):
            if missing == "skip":
                continue
            raise FileNotFoundError(f"eval set not found: {spec} (set missing: skip to run without it)")
        paths = []
        if os.path.isdir(spec):
            for dp, _dn, fns in os.walk(spec):
                paths.extend(os.path.join(dp, f) for f in sorted(fns))
        else:
            paths.append(spec)
        for p in sorted(paths):
            low = p.lower()
            if low.endswith((".tar", ".tar.gz", ".tgz", ".tar.zst", ".tzst", ".zip")):
                for member, data in _archive_members(p):
                    if not member.lower().endswith((".csv", ".jsonl", ".json", ".jsonl.gz", ".parquet")):
                        continue
                    bench = forced or _benchmark_name(p)
                    items.extend(_items_from_member(p, member, data, bench))
            elif low.endswith((".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".json.gz", ".ndjson", ".parquet")):
                with open(p, "rb") as fh:
                    data = fh.read()
                items.extend(_items_from_member(p, p, data, forced or _benchmark_name(p)))
    return items


def _archive_members(path: str) -> Iterator[tuple[str, bytes]]:
    if path.lower().endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    yield info.filename, zf.read(info)
        return
    if path.lower().endswith((".zst", ".tzst")):
        import zstandard

        fh = open(path, "rb")
        tf = tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(fh), mode="r|")
    else:
        fh = None
        tf = tarfile.open(path, "r:*")
    try:
        for m in tf:
            if m.isfile() and "/auxiliary_train/" not in m.name and "/train/" not in m.name:
                f = tf.extractfile(m)
                if f is not None:
                    yield m.name, f.read()
    finally:
        tf.close()
        if fh is not None:
            fh.close()


# ------------------------------------------------------------------------------------------------ hashing
_RNG = np.random.default_rng(0xA55A7)
_COEF = (_RNG.integers(1, 2**63 - 1, size=256, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1))
_DIST = _RNG.integers(1, 2**63 - 1, size=1024, dtype=np.int64).astype(np.uint64)  # identifier back-reference codes
_NEW_ID = np.uint64(0x9E3779B97F4A7C15)

# token hashes (``token_hashes``): a sum over the token's code points of a 64-bit mix of (code point, offset),
# then mixed with its length; computed alike from a list of token strings and, without making them, from the
# runs of word characters of a text (``word_hashes``)
_MIX1, _MIX2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S33, _S21 = np.uint64(33), np.uint64(21)
_TOKEN_SEED, _TOKEN_LEN = np.uint64(0x243F6A8885A308D3), np.uint64(0x9E3779B97F4A7C15)


def _fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser (a bijection of uint64), in place."""
    x ^= x >> _S33
    x *= _MIX1
    x ^= x >> _S33
    x *= _MIX2
    x ^= x >> _S33
    return x


def _run_hashes(cps: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The hash of each token, given the code points of the tokens one after another (``cps``) and each
    token's length in code points (``lens``): ``fmix64(sum_j fmix64((c_j | j << 21) ^ seed) + len * k)`` mod 2**64
    (``j``: the offset of code point ``c_j`` in its token; a code point is below 2**21)."""
    lens = np.asarray(lens, dtype=np.int64)
    ends = np.cumsum(lens)
    starts = ends - lens
    v = cps.astype(np.uint64)
    with np.errstate(over="ignore"):
        v |= (np.arange(len(v), dtype=np.uint64) - np.repeat(starts.astype(np.uint64), lens)) << _S21
        v ^= _TOKEN_SEED
        _fmix64(v)
        cs = np.empty(len(v) + 1, dtype=np.uint64)
        cs[0] = 0
        np.cumsum(v, out=cs[1:])
        out = cs[ends] - cs[starts]
        out += lens.astype(np.uint64) * _TOKEN_LEN
        return _fmix64(out)


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def token_hashes(tokens: list[str]) -> np.ndarray:
    """The 64-bit hash of each token (``_run_hashes`` of its code points)."""
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    return _run_hashes(_code_points("".join(tokens)), np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)))


# per code point, the character classes that ``_TEXT_TOKEN`` and ``_CODE_TOKEN`` tell apart, as bits (each
# distinct code point asked once per process, by the patterns themselves; 0: not looked at yet)
_CHAR_CLASS = np.zeros(0x110000, dtype=np.uint8)
_C_SEEN, _C_WORD, _C_ALPHA, _C_DIGIT, _C_SPACE = 1, 2, 4, 8, 16  # seen, \w, [A-Za-z_], \d, \s
_CLASS_RES = ((_C_WORD, re.compile(r"\w")), (_C_ALPHA, re.compile(r"[A-Za-z_]")), (_C_DIGIT, re.compile(r"\d")),
              (_C_SPACE, re.compile(r"\s")))


def _char_classes(cp: np.ndarray) -> np.ndarray:
    """The ``_CHAR_CLASS`` bits of each code point."""
    c = _CHAR_CLASS[cp]
    new = c == 0
    if new.any():
        for u in np.unique(cp[new]).tolist():
            ch = chr(u)
            _CHAR_CLASS[u] = _C_SEEN | sum(bit for bit, r in _CLASS_RES if r.match(ch))
        c = _CHAR_CLASS[cp]
    return c


def _word_chars(cp: np.ndarray) -> np.ndarray:
    """Whether each code point is a word character of ``_TEXT_TOKEN``."""
    return (_char_classes(cp) & _C_WORD) != 0


def word_hashes(text: str) -> np.ndarray:
    """``token_hashes(_TEXT_TOKEN.findall(text))`` without making the words: the runs of word characters of
    the text's code points, hashed by array operations."""
    cp = _code_points(text)
    w = _word_chars(cp)
    edge = np.diff(w.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    return _run_hashes(cp[w], np.flatnonzero(edge == -1) - np.flatnonzero(edge == 1))


def _run_edges(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in ``mask`` (ends exclusive)."""
    n = len(mask)
    if not n:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    m = mask.view(np.int8)
    edge = np.empty(n + 1, dtype=np.int8)
    edge[0], edge[n] = m[0], m[n - 1]
    np.not_equal(m[1:], m[:-1], out=edge[1:n].view(bool))
    e = np.flatnonzero(edge)  # (run starts and ends alternate)
    return e[0::2], e[1::2]


_DOT = ord(".")
_NO_POS = np.empty(0, dtype=np.intp)


def _inside(runs_start: np.ndarray, runs_end: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Whether each of the positions ``pos`` lies in one of the sorted disjoint runs ``[start, end)``."""
    k = np.searchsorted(runs_start, pos, "right") - 1
    return (k >= 0) & (runs_end[np.maximum(k, 0)] > pos)


_KEYWORD_HASHES: np.ndarray | None = None


def _is_keyword(h: np.ndarray) -> np.ndarray:
    """Whether each token hash is that of one of ``_KEYWORDS`` (an identifier sharing a 64-bit hash with a keyword
    would count as one)."""
    global _KEYWORD_HASHES
    if _KEYWORD_HASHES is None:
        _KEYWORD_HASHES = np.unique(token_hashes(sorted(_KEYWORDS)))
    kw = _KEYWORD_HASHES
    pos = np.minimum(np.searchsorted(kw, h), len(kw) - 1)
    return kw[pos] == h


_LOWER_CP: dict[int, int] = {}


def _lowered_code_points(cp: np.ndarray) -> np.ndarray:
    """Each code point lower-cased (``ord(chr(c).lower())``), for code points whose lower case is one character
    (``_lower_safe``: where ``lowering_keeps_code_tokens`` holds)."""
    out = cp + ((cp >= 65) & (cp <= 90)).astype(np.uint32) * np.uint32(32)
    big = np.flatnonzero(cp > 127)
    if len(big):
        u, inv = np.unique(cp[big], return_inverse=True)
        low = [_LOWER_CP.get(x) for x in u.tolist()]
        for j, x in enumerate(u.tolist()):
            if low[j] is None:
                lc = chr(x).lower()
                if len(lc) != 1:
                    raise ValueError(f"U+{x:04X} is not lower-cased to one character")
                low[j] = _LOWER_CP[x] = ord(lc)
        out[big] = np.array(low, dtype=np.uint32)[inv]
    return out


class _CodeSpans:
    """The tokens of ``_CODE_TOKEN.findall(text)`` as spans of the text's code points, found by array operations
    (no token strings): ``start``/``end`` of each token, whether it is an identifier (``[A-Za-z_]\\w*``), and the
    mask of the code points inside a token. ``findall`` scans left to right, so in each run of ``\\w`` characters
    the first ``[A-Za-z_]`` starts an identifier that ends with the run; before it each maximal run of ``\\d``
    is a number; other word characters (letters of other scripts) belong to no token; each character that
    is neither ``\\w`` nor ``\\s`` is a token; a number followed by ``.`` and a digit takes them and the run of
    digits after the dot (``\\d+(?:\\.\\d+)?``), which then starts no number of its own: in a chain
    ``1.2.3.4`` the numbers are ``1.2`` and ``3.4``, in ``1.2.3`` ``1.2``, ``.`` and ``3``."""

    __slots__ = ("cp", "start", "end", "ident", "inside")

    def __init__(self, text: str):
        cp = self.cp = _code_points(text)
        n = len(cp)
        c = _char_classes(cp)
        word = (c & _C_WORD) != 0
        alpha = (c & _C_ALPHA) != 0
        # identifiers: the first [A-Za-z_] of each \\w run (the first of its runs of [A-Za-z_]), to the run's end
        w_start, w_end = _run_edges(word)
        a_start, _ = _run_edges(alpha)
        if len(a_start):
            run = np.searchsorted(w_start, a_start, "right") - 1  # (every [A-Za-z_] is \\w: inside a run)
            first = np.ones(len(run), dtype=bool)
            np.not_equal(run[1:], run[:-1], out=first[1:])
            id_start, id_end = a_start[first], w_end[run[first]]
        else:
            id_start = id_end = _NO_POS
        # numbers: the maximal runs of digits outside identifiers (a run of digits lies wholly inside one or
        # outside all); a run merges into the number before it when a dot alone separates them and that
        # number is not itself a merged run (every other run of a chain)
        d_start, d_end = _run_edges((c & _C_DIGIT) != 0)
        if len(d_start) and len(id_start):
            out = ~_inside(id_start, id_end, d_start)
            d_start, d_end = d_start[out], d_end[out]
        cand = np.zeros(len(d_start), dtype=bool)
        if len(d_start) > 1:
            s = d_start[1:]
            cand[1:] = (d_end[:-1] == s - 1) & (cp[s - 1] == _DOT)
        punct = (c & (_C_WORD | _C_SPACE)) == 0
        if cand.any():
            idx = np.arange(len(cand))
            last_off = np.maximum.accumulate(np.where(cand, -1, idx))  # the last run before each that is no candidate
            merged = cand & ((idx - last_off) % 2 == 1)
            ends = d_end.copy()
            ends[np.flatnonzero(merged) - 1] = d_end[merged]
            punct[d_start[merged] - 1] = False  # (the dots: inside the numbers)
            d_start, d_end = d_start[~merged], ends[~merged]
        # tokens do not overlap: their starts and their ends, each sorted, pair up
        is_start = punct.copy()
        is_start[d_start] = True
        is_start[id_start] = True
        is_end = np.zeros(n + 1, dtype=bool)
        is_end[1:] = punct
        is_end[d_end] = True
        is_end[id_end] = True
        start = self.start = np.flatnonzero(is_start)
        self.end = np.flatnonzero(is_end)
        self.ident = np.zeros(len(start), dtype=bool)
        if len(id_start):
            self.ident[np.searchsorted(start, id_start)] = True
        # inside a token: every character but whitespace and the other word characters outside identifiers
        inside = (c & _C_SPACE) == 0
        other = np.flatnonzero((c & (_C_WORD | _C_ALPHA | _C_DIGIT)) == _C_WORD)
        if len(other):
            inside[other[~_inside(id_start, id_end, other)] if len(id_start) else other] = False
        self.inside = inside

    def hashes(self, cp: np.ndarray | None = None) -> np.ndarray:
        """``token_hashes`` of the tokens (of their code points mapped to ``cp``: e.g. lower-cased)."""
        if not len(self.start):
            return np.empty(0, dtype=np.uint64)
        return _run_hashes((self.cp if cp is None else cp)[self.inside], self.end - self.start)


class _Vocab:
    """Every token met in this process -> an id, with each id's hash (``h``, ``token_hashes``) and whether it is a
    renamable identifier (``ident``: an identifier that is not a keyword) in arrays: a text's tokens become
    one array of ids by one dict lookup each, and their hashes and flags are read by index."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.tokens: list[str] = []
        self.h = np.empty(1024, dtype=np.uint64)
        self.ident = np.empty(1024, dtype=bool)
        self.low = np.full(1024, -1, dtype=np.int64)  # each id's lower-cased token's id (-1: not asked yet)

    def lookup(self, tokens: list[str]) -> np.ndarray:
        """The id of each of ``tokens`` (int64), adding the tokens not seen before."""
        ids = np.fromiter(map(self.ids.get, tokens, itertools.repeat(-1)), dtype=np.int64, count=len(tokens))
        miss = np.flatnonzero(ids < 0)
        if len(miss):
            missing = list(map(tokens.__getitem__, miss.tolist()))
            new = list(dict.fromkeys(missing))
            start, stop = len(self.tokens), len(self.tokens) + len(new)
            self.ids.update(zip(new, range(start, stop)))
            self.tokens.extend(new)
            if stop > len(self.h):
                size = max(stop, 2 * len(self.h))
                self.h = np.concatenate([self.h[:start], np.empty(size - start, dtype=np.uint64)])
                self.ident = np.concatenate([self.ident[:start], np.empty(size - start, dtype=bool)])
                self.low = np.concatenate([self.low[:start], np.full(size - start, -1, dtype=np.int64)])
            self.h[start:stop] = token_hashes(new)
            self.ident[start:stop] = np.fromiter((bool(_IDENT.match(t)) and t not in _KEYWORDS for t in new),
                                                 dtype=bool, count=len(new))
            ids[miss] = np.fromiter(map(self.ids.__getitem__, missing), dtype=np.int64, count=len(missing))
        return ids

    def lowered(self, ids: np.ndarray) -> np.ndarray:
        """The ids of the tokens ``ids`` lower-cased (each id's lower-cased id is looked up once, the first time
        it is asked for, and kept in ``low``)."""
        out = self.low[ids]
        miss = out < 0
        if miss.any():
            uniq = np.unique(ids[miss])
            low = self.lookup([t.lower() for t in map(self.tokens.__getitem__, uniq.tolist())])
            self.low[uniq] = low  # (lookup may have grown the arrays: ``self.low`` is read after it)
            out = self.low[ids]
        return out


_VOCAB = _Vocab()
_VOCAB_MAX = 30_000  # tokens kept between texts (about 4 MiB); more: the next text starts a new vocabulary


def _bound_vocab() -> None:
    """Start a new ``_VOCAB`` when the current one holds more than ``_VOCAB_MAX`` tokens (between texts:
    a ``_Prepared`` keeps the vocabulary its ids refer to)."""
    global _VOCAB
    if len(_VOCAB.tokens) > _VOCAB_MAX:
        _VOCAB = _Vocab()


def _token_info(t: str) -> tuple[int, bool]:
    """(the token's hash (``token_hashes``), whether it is an identifier that is not a keyword)."""
    i = _VOCAB.lookup([t])[0]
    return int(_VOCAB.h[i]), bool(_VOCAB.ident[i])


_CODE_TOKEN_CLASSES = (re.compile(r"[A-Za-z_]"), re.compile(r"\d"), re.compile(r"\s"), re.compile(r"\w"))
_LOWER_SAFE: dict[str, bool] = {}


def _lower_safe(c: str) -> bool:
    """Whether lower-casing the character ``c`` keeps ``_CODE_TOKEN``'s view of it: one character, in the
    same character classes of the pattern (``[A-Za-z_]``, ``\\d``, ``\\s``, ``\\w``, ``.``), and lowered
    without context (``str.lower`` maps only the capital sigma by its neighbours: final sigma)."""
    ok = _LOWER_SAFE.get(c)
    if ok is None:
        lc = c.lower()
        ok = c != "\u03a3" and len(lc) == 1 and (c == ".") == (lc == ".") and all(
            bool(r.match(c)) == bool(r.match(lc)) for r in _CODE_TOKEN_CLASSES)
        _LOWER_SAFE[c] = ok
    return ok


def lowering_keeps_code_tokens(text: str) -> bool:
    """Whether ``_CODE_TOKEN.findall(text.lower())`` equals ``[t.lower() for t in code_tokens(text)]``:
    true when every character of ``text`` is ``_lower_safe`` (then every character keeps its classes, so
    the pattern matches the same spans, each lowered character by character). Plain ASCII always is."""
    return text.isascii() or all(map(_lower_safe, set(text)))


_LINE_HYPHEN = re.compile(r"(\w)-[ \t]*\r?\n[ \t]*(?=\w)")
_HYPHEN_BREAK = re.compile(r"-[ \t]*\r?\n")  # in every match of _LINE_HYPHEN; searched from "-" only


def normalize_prose(text: str) -> str:
    """What web/PDF text does to benchmark words: NFKC, soft hyphens, line-break hyphenation."""
    import unicodedata

    if not text.isascii():
        if not unicodedata.is_normalized("NFKC", text):  # (a quick check: about half of non-ASCII pages already are)
            text = unicodedata.normalize("NFKC", text)
        text = text.replace("\u00ad", "")
    if "-" in text and _HYPHEN_BREAK.search(text):  # (_LINE_HYPHEN tries a match at every word character)
        text = _join_line_hyphens(text)
    return text


_WORD_CHAR = re.compile(r"\w")
_SPACES_TABS = re.compile(r"[ \t]*")


def _join_line_hyphens(text: str) -> str:
    """``_LINE_HYPHEN.sub(r"\1", text)`` from the line-end hyphens (``_HYPHEN_BREAK``, a search for "-"): each is
    removed with the line break and the spaces around it where a word character precedes it and one follows the
    spaces after the break. The regex tries a match at every word character of the text (a page of code: a
    hyphen at the end of many lines, "--" or "->", and none joined). A match of the regex holds one hyphen, and
    the word character after it is not part of it: the hyphens decide alone, in any order."""
    out, last = [], 0
    for m in _HYPHEN_BREAK.finditer(text):
        h = m.start()
        if h and _WORD_CHAR.match(text, h - 1):
            after = _SPACES_TABS.match(text, m.end()).end()
            if _WORD_CHAR.match(text, after):
                out.append(text[last:h])
                last = after
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# whitespace characters that NFKC maps to a plain space (no-break, figure, thin, ideographic ... spaces): every
# pattern here treats all whitespace alike, so replacing one of them by a space changes no token
_NFKC_SPACES = tuple(c for c in "\xa0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
                     if c.isspace() and unicodedata.normalize("NFKC", c) == " ")


def only_spaces_differ(normalized: str, text: str) -> bool:
    """Whether ``normalized`` is ``text`` with some of ``_NFKC_SPACES`` replaced by spaces (``normalize_prose``
    of a page whose only NFKC change is its no-break spaces: ``&nbsp;`` is common in web pages), so that
    ``_CODE_TOKEN`` and ``_TEXT_TOKEN`` find the same tokens in both."""
    if len(normalized) != len(text):
        return False
    for c in _NFKC_SPACES:
        if c in text:
            text = text.replace(c, " ")
    return text == normalized


def text_tokens(text: str) -> list[str]:
    return _TEXT_TOKEN.findall(normalize_prose(text).lower())


def short_tokens(text: str) -> list[str]:
    """Lexical tokens of lower-cased text (punctuation kept): whole-item matching of short items."""
    return _CODE_TOKEN.findall(normalize_prose(text).lower())


def code_tokens(text: str) -> list[str]:
    return _CODE_TOKEN.findall(text)


_SPACE = re.compile(r"\s")
_CHUNK_CHARS = 1 << 16  # best_match reads a text by spans of about this many characters
_SPAN_END_OK: dict[str, bool] = {}


def _span_end_ok(c: str) -> bool:
    """Whether a span may end with the character ``c`` (followed by whitespace): a letter or digit whose NFKC
    form ends with one (not a hyphen: ``normalize_prose`` joins ``-`` and a line break across whitespace)."""
    ok = _SPAN_END_OK.get(c)
    if ok is None:
        nc = unicodedata.normalize("NFKC", c)
        ok = _SPAN_END_OK[c] = c.isalnum() and nc[-1:].isalnum() and unicodedata.combining(c) == 0
    return ok


def _spans(text: str, size: int, stop: int | None = None) -> Iterator[tuple[int, int]]:
    """``(start, end)`` spans that cover ``text[:stop]`` in order, each one but the last at least ``size`` characters
    long and followed by whitespace after a letter or digit (``_span_end_ok``). A text reads the same span by
    span: no token of ``_TEXT_TOKEN`` or ``_CODE_TOKEN`` holds whitespace; ``normalize_prose`` of the text is
    that of its spans joined (NFKC neither composes nor reorders across a whitespace character, none of which
    is a combining one, and every one stays whitespace; a line-break hyphen lies before a whitespace run, here
    a letter or digit does) and so is its ``str.lower`` (a final sigma looks past case-ignorable characters
    only, which whitespace is not)."""
    pos, n = 0, len(range(len(text))[:stop])  # (the length of text[:stop], not copied)
    size = max(1, size)
    while pos < n:
        end, at = n, pos + size
        while at < n:
            m = _SPACE.search(text, at, n)
            if m is None:
                break
            if _span_end_ok(text[m.start() - 1]):
                end = m.start()
                break
            at = m.end()
        yield pos, end
        pos = end


def _weighted_windows(vals: np.ndarray, n: int, chunk: int = 8192) -> np.ndarray:
    """``sum(vals[s + j] * _COEF[j] for j < n)`` (mod 2**64) for every window start ``s``: per chunk of starts,
    one multiply-add of a shifted slice per offset ``j`` (no window-by-offset temporary: about 4x faster
    than a sum over ``sliding_window_view`` on long texts)."""
    count = len(vals) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    out = np.empty(count, dtype=np.uint64)
    tmp = np.empty(min(count, chunk), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for s in range(0, count, chunk):
            e = min(count, s + chunk)
            o, t = out[s:e], tmp[: e - s]
            np.multiply(vals[s:e], _COEF[0], out=o)
            for j in range(1, n):
                np.multiply(vals[s + j: e + j], _COEF[j], out=t)
                o += t
    return out


def _previous(tok: np.ndarray, ident: np.ndarray) -> np.ndarray:
    """Each identifier's previous occurrence (the position of the previous identifier with the same ``tok``: a
    token id or hash), about ``-10**9`` where there is none and for the other tokens: the identifiers'
    positions grouped by token (a stable sort keeps each token's positions ascending), each one's predecessor."""
    prev = np.full(len(tok), -(10**9), dtype=np.int64)
    pos = np.flatnonzero(ident)
    if len(pos):
        t = tok[pos]
        order = np.argsort(t, kind="stable")
        later, earlier = order[1:], order[:-1]
        same = t[later] == t[earlier]
        prev[pos[later[same]]] = pos[earlier[same]]
    return prev


class _Prepared:
    """Token hashes (and, for code, identifier back-references) computed once per text (or span of a text),
    from its tokens or their ids in ``_VOCAB``."""

    __slots__ = ("h", "is_id", "prev", "n", "ids", "voc", "_vocab")

    def __init__(self, tokens: list[str] | None, code: bool, *, ids: np.ndarray | None = None):
        if tokens is None and ids is None:
            raise ValueError("tokens or their ids are needed")
        voc = self.voc = _VOCAB
        self.ids = voc.lookup(tokens) if ids is None else ids  # each token's id in voc
        self.n = len(self.ids)
        self._vocab = None
        self.h = voc.h[self.ids]
        self.is_id = None
        self.prev = None
        if code:
            self.is_id = voc.ident[self.ids]
            self.prev = _previous(self.ids, self.is_id)

    @classmethod
    def of_code(cls, h: np.ndarray, is_id: np.ndarray) -> "_Prepared":
        """The code-mode ``_Prepared`` of tokens given by their hashes and identifier flags (``_CodeSpans``): an
        identifier's previous occurrence is the previous identifier of the same hash (no ids, no vocabulary)."""
        prep = cls.of_hashes(h)
        prep.is_id = is_id
        prep.prev = _previous(h, is_id)
        return prep

    @classmethod
    def of_hashes(cls, h: np.ndarray) -> "_Prepared":
        """The text-mode ``_Prepared`` of tokens given by their hashes only (``word_hashes``): no ids, no vocabulary."""
        prep = cls.__new__(cls)
        prep.h, prep.n = h, len(h)
        prep.ids = prep.voc = prep._vocab = prep.is_id = prep.prev = None
        return prep

    @property
    def vocab(self) -> dict[str, int]:
        """The distinct tokens in first-seen order -> their index."""
        if self._vocab is None:
            uniq, first = np.unique(self.ids, return_index=True)
            distinct = map(self.voc.tokens.__getitem__, uniq[np.argsort(first)].tolist())
            self._vocab = dict(zip(distinct, range(len(uniq))))
        return self._vocab

    def lowered(self) -> "_Prepared":
        """The text-mode ``_Prepared`` of these tokens lower-cased (``_Prepared([t.lower() for t in
        tokens], code=False)``), from the distinct tokens only."""
        return _Prepared(None, code=False, ids=self.voc.lowered(self.ids))

    def windows(self, n: int, chunk: int = 8192) -> np.ndarray:
        m = self.n
        if m < n:
            return np.empty(0, dtype=np.uint64)
        if self.is_id is None:
            return _weighted_windows(self.h, n, chunk)
        # A token's value in a window: its hash, or for an identifier the distance code of its previous
        # occurrence when that lies inside the window, else _NEW_ID. Only identifiers whose previous
        # occurrence is closer than n tokens ("close") have a value that depends on the window start: the
        # windows starting at or before that occurrence see the distance code, the g = p - prev[p] windows
        # starting after it see _NEW_ID. So: one weighted sum over the values as the earliest windows see
        # them, plus, per close identifier and offset j < g, the change for the window starting at p - j
        # (same hashes as the per-window formula, modulo 2**64; no n-wide copy per window).
        p = np.arange(m)
        gap = p - self.prev  # about 10**9 where there is no previous occurrence
        close = self.is_id & (gap < n)
        code = np.clip(gap, 0, len(_DIST) - 1)
        base = np.where(self.is_id, np.where(close, _DIST[code], _NEW_ID), self.h)
        out = _weighted_windows(base, n, chunk)
        with np.errstate(over="ignore"):
            pos = np.flatnonzero(close)
            if len(pos):
                g = gap[pos]
                change = _NEW_ID - _DIST[code[pos]]
                last = m - n
                for j in range(int(g.max())):
                    if j:
                        keep = g > j
                        pos, g, change = pos[keep], g[keep], change[keep]
                    start = pos - j  # distinct for one j: plain fancy-index addition is exact
                    ok = start <= last
                    out[start[ok]] += _COEF[j] * change[ok]
        return out


    def windows_by_length(self, lengths: Iterable[int]) -> Iterator[tuple[int, np.ndarray]]:
        """``(k, self.windows(k))`` for each ``k`` of ``lengths`` (ascending), built incrementally: the
        window hash is a weighted sum over positions, so the hashes of length ``k`` are those of length
        ``k - 1`` plus one term each (``O(tokens)`` per length instead of ``O(tokens * k)``)."""
        m = self.n
        acc = None
        k0 = 0
        for k in sorted(lengths):
            if k > m or k < 1:
                continue
            if acc is None:
                acc, k0 = self.windows(k), k
            while k0 < k:  # extend every window by its token at offset k0
                acc = acc[:-1]
                if self.is_id is None:
                    vals = self.h[k0: k0 + len(acc)]
                else:
                    starts = np.arange(len(acc))
                    p = starts + k0
                    pm = self.prev[p]
                    d = np.clip(p - pm, 0, len(_DIST) - 1)
                    idv = np.where(pm >= starts, _DIST[d], _NEW_ID)
                    vals = np.where(self.is_id[p], idv, self.h[p])
                with np.errstate(over="ignore"):
                    acc = acc + vals * _COEF[k0]
                k0 += 1
            yield k, acc


def _window_hashes_text(tokens: list[str], n: int) -> np.ndarray:
    return _Prepared(tokens, code=False).windows(n)


def _window_hashes_code(tokens: list[str], n: int) -> np.ndarray:
    return _Prepared(tokens, code=True).windows(n)


# ------------------------------------------------------------------------------------------------ index
_BITMAP_BITS = 20  # short-item prefilter: 2**20 bits (128 KiB) per mode (a few thousand keys: about 0.5% false candidates)
_BITMAP_SHIFT = np.uint64(64 - _BITMAP_BITS)
_MAIN_BITMAP_BITS = 24  # n-gram prefilter: at most 2**24 bits (2 MiB) per mode (about 10% false candidates at 1.8M
# n-grams). Lookups read it at random, so all of it is resident in every worker: 2**25 bits (4 MiB) halved the false
# candidates, each one a block read of ``top`` (``_FencedTop``); on the own 1x corpus's 525 documents, 2**24 costs
# +0.14 CPU-s of lookups (3.22 -> 3.36) and saves 2 MiB of every worker, the same matches
_MAIN_BITMAP_SHIFT = np.uint64(64 - _MAIN_BITMAP_BITS)


def _set_bits(bitmap: np.ndarray, hashes: np.ndarray, shift: np.uint64) -> None:
    """Set bit ``top & 7`` of byte ``top >> 3`` of ``bitmap`` for the top bits ``top`` of each hash."""
    top = hashes >> shift  # (np.unique of 2M values costs far more than either way below)
    if len(hashes) >= _PACKED_SET_MIN:
        # one byte per bit, then packed: bit j of byte i is element 8 * i + j (little bit order), so the
        # same bits as the per-hash OR below, about 4x faster on a million hashes (np.bitwise_or.at is
        # slow); the byte-per-bit array (8 bytes per bitmap byte) lives only for this call
        bits = np.zeros(len(bitmap) * 8, dtype=bool)
        bits[top.astype(np.intp)] = True
        bitmap |= np.packbits(bits, bitorder="little")
        return
    np.bitwise_or.at(bitmap, (top >> np.uint64(3)).astype(np.int64), np.uint8(1) << (top & np.uint64(7)).astype(np.uint8))


_PACKED_SET_MIN = 100_000


def _in_bitmap(hashes: np.ndarray, bitmap: np.ndarray, shift: np.uint64) -> np.ndarray:
    """The hashes whose top bits are set in ``bitmap`` (a superset of those in the set it was built from)."""
    top = (hashes >> shift).astype(np.intp)  # (the top bits as indexes: a third faster than uint64 arithmetic)
    return hashes[(bitmap[top >> 3] >> (top & 7).astype(np.uint8)) & 1 == 1]

@dataclass
class _ModeIndex:
    hashes: np.ndarray  # sorted uint64
    items: np.ndarray  # item index per row (int32)
    n_windows: np.ndarray  # distinct windows per item (0 for whole-item rows)
    top: np.ndarray | None = None  # the top 32 bits of ``hashes`` (uint32): the lookup reads it, not ``hashes``
    bitmap: np.ndarray | None = None  # n-gram prefilter: bitmap of the top bits of ``hashes``
    shift: np.uint64 = _MAIN_BITMAP_SHIFT


def _main_bitmap_bits(n: int) -> int:
    """Bits of a mode's n-gram prefilter: at least 16 bits per n-gram (about 5% false candidates), at most
    ``_MAIN_BITMAP_BITS`` (2 MiB), at least 2**16 bits."""
    return int(min(_MAIN_BITMAP_BITS, max(16, int(np.ceil(np.log2(max(1, 16 * n)))))))


class _FileArray:
    """A 1-d array of the cached index file read on demand (``os.pread``), for the arrays a lookup reads
    only where a document hits (full n-gram hashes, owners, the items' ids and texts): a mapping would
    make them resident in every worker, the kernel mapping 16 pages around each page read."""

    __slots__ = ("fd", "offset", "dtype", "n")

    def __init__(self, fd: int, offset: int, dtype: np.dtype, n: int):
        self.fd, self.offset, self.dtype, self.n = fd, offset, dtype, n

    def __len__(self) -> int:
        return self.n

    def _read(self, start: int, stop: int) -> np.ndarray:
        size = self.dtype.itemsize
        data = os.pread(self.fd, (stop - start) * size, self.offset + start * size)
        if len(data) != (stop - start) * size:
            raise OSError("decontamination index file shorter than its header says")
        return np.frombuffer(data, dtype=self.dtype)

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.n)
            if step != 1:
                raise IndexError("only contiguous slices")
            return self._read(start, max(start, stop))
        if isinstance(key, (int, np.integer)):
            k = int(key) + (self.n if key < 0 else 0)
            if not 0 <= k < self.n:
                raise IndexError(key)
            return self._read(k, k + 1)[0]
        rows = np.asarray(key, dtype=np.int64)  # positions: one read per run of consecutive distinct positions
        if not len(rows):
            return np.empty(0, dtype=self.dtype)
        if rows.min() < 0 or rows.max() >= self.n:
            raise IndexError("index out of range")
        uniq, inv = np.unique(rows, return_inverse=True)
        breaks = np.flatnonzero(np.diff(uniq) != 1) + 1
        parts = [self._read(int(run[0]), int(run[-1]) + 1) for run in np.split(uniq, breaks)]
        return np.concatenate(parts)[inv]

    def __array__(self, dtype=None, copy=None):
        a = self._read(0, self.n)
        return a.astype(dtype) if dtype is not None else a

    def read_runs(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """The values of positions ``starts[i]`` to ``stops[i] - 1`` for each ``i`` in order, concatenated
        (in-range runs, none empty), one read per run straight into the result."""
        size = self.dtype.itemsize
        out = np.empty(int(np.sum(stops - starts)), dtype=self.dtype)
        mv, pos = memoryview(out).cast("B"), 0
        for a, b in zip(starts.tolist(), stops.tolist()):
            k = (b - a) * size
            if os.preadv(self.fd, [mv[pos: pos + k]], self.offset + a * size) != k:
                raise OSError("decontamination index file shorter than its header says")
            pos += k
        return out


class _FencedTop:
    """The top 32 bits of a mode's sorted n-gram hashes (``_ModeIndex.top``) of the cached index, read on
    demand (``_FileArray``) through a resident fence array (every ``block``-th value: 27 KiB for the 1.8M
    n-gram rows of the e2e recipes' eval sets, against 6.8 MiB for the whole array mapped): a lookup
    reads only the blocks of the array that can hold its windows' tops, one ``pread`` per run of adjacent
    blocks, where a mapping would make the whole array (MiBs) resident in every worker."""

    __slots__ = ("values", "block", "fences")

    def __init__(self, values: _FileArray, block: int = 256, chunk: int = 1 << 20):
        self.values, self.block = values, int(block)
        n = len(values)
        chunk = max(self.block, chunk // self.block * self.block)  # (a multiple of the block: fences stay aligned)
        self.fences = np.concatenate([values[i: min(n, i + chunk)][:: self.block] for i in range(0, n, chunk)]
                                     or [np.empty(0, dtype=values.dtype)])

    def __len__(self) -> int:
        return len(self.values)

    def __array__(self, dtype=None, copy=None):
        return self.values.__array__(dtype)

    def ranges(self, tops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, cnt)`` for sorted ``tops``: ``lo`` = ``np.searchsorted(array, tops, "left")`` and ``cnt`` the
        number of values equal to each top, as on the whole array.

        With ``s``/``r`` the left/right positions of a top among the fences (``fences[j]`` is value ``j*B``),
        every value before position ``(s-1)*B`` is below the top and every value from ``r*B`` on above it
        (a run of equal values may span blocks), so both positions in the array lie in blocks ``max(s-1, 0)``
        to ``r-1``. The values of the union of those blocks, in position order, are sorted like the array and
        hold every value equal to a top with all those before it below it: searched there, the positions
        differ from the array's by the gap before the top's run of blocks."""
        n, b = len(self.values), self.block
        tops = np.asarray(tops, dtype=self.fences.dtype)
        if not len(tops) or not n:
            return np.zeros(len(tops), dtype=np.intp), np.zeros(len(tops), dtype=np.intp)
        first = np.maximum(np.searchsorted(self.fences, tops, "left") - 1, 0)
        stop = np.searchsorted(self.fences, tops, "right")  # (0: below every value; blocks first..stop-1)
        nb = len(self.fences)
        has = stop > first
        # blocks needed: +1 at a range's first block, -1 after its last
        need = np.bincount(first[has], minlength=nb + 1) - np.bincount(stop[has], minlength=nb + 1)
        used = np.cumsum(need[:nb]) > 0
        used = np.concatenate(([False], used, [False]))
        edges = np.flatnonzero(used[1:] != used[:-1])
        run_first, run_stop = edges[0::2], edges[1::2]  # runs of needed blocks: first, one after the last
        if not len(run_first):
            return np.zeros(len(tops), dtype=np.intp), np.zeros(len(tops), dtype=np.intp)
        starts, ends = run_first * b, np.minimum(run_stop * b, n)
        buf = self.values.read_runs(starts, ends)
        gap = starts - (np.cumsum(ends - starts) - (ends - starts))  # array position minus buffer position, per run
        left = np.searchsorted(buf, tops, "left")
        cnt = np.searchsorted(buf, tops, "right") - left
        run = np.maximum(np.searchsorted(run_first, first, "right") - 1, 0)
        lo = np.where(has, left + gap[run], 0)  # (no block: below every value, position 0)
        return lo.astype(np.intp), np.where(has, cnt, 0).astype(np.intp)


class _ItemTable(Sequence):
    """The eval items as arrays (benchmark and mode codes, ids and texts as UTF-8 blobs with offsets):
    ``table[i]`` is the ``EvalItem``; matching reads only ``info(i)`` of the best item of a document."""

    _MODES = ("text", "code")

    def __init__(self, arrays: dict[str, np.ndarray], benchmarks: list[str]):
        self._a = arrays
        self._benchmarks = benchmarks

    @classmethod
    def arrays_of(cls, items: list[EvalItem]) -> tuple[dict[str, np.ndarray], list[str]]:
        names = list(dict.fromkeys(it.benchmark for it in items))
        code = {b: i for i, b in enumerate(names)}
        out = {"item.bench": np.array([code[it.benchmark] for it in items], dtype=np.int32),
               "item.mode": np.array([cls._MODES.index(it.mode) for it in items], dtype=np.uint8)}
        for field in ("item_id", "text"):
            enc = [getattr(it, field).encode("utf-8", "surrogatepass") for it in items]
            out[f"item.{field}"] = np.frombuffer(b"".join(enc), dtype=np.uint8)
            out[f"item.{field}.off"] = np.concatenate([[0], np.cumsum([len(e) for e in enc], dtype=np.int64)]).astype(np.int64)
        return out, names

    def __len__(self) -> int:
        return len(self._a["item.bench"])

    def _str(self, field: str, i: int) -> str:
        off = self._a[f"item.{field}.off"]
        return self._a[f"item.{field}"][off[i]: off[i + 1]].tobytes().decode("utf-8", "surrogatepass")

    def info(self, i: int) -> tuple[str, str]:
        """(benchmark, item id) of item ``i``."""
        return self._benchmarks[int(self._a["item.bench"][i])], self._str("item_id", i)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        bench, item_id = self.info(i)
        return EvalItem(bench, item_id, self._MODES[int(self._a["item.mode"][i])], self._str("text", i))

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, tuple, _ItemTable)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented


class EvalIndex:
    """n-gram index over eval items (text and code modes) with per-item coverage lookup.

    Held as numpy arrays only (``_arrays``; no Python object per item or n-gram), so that the cached
    index is one file that workers map (``cached_index``): a worker's resident share is the pages its
    lookups read (the n-gram prefilter bitmaps and the whole-item tables), not the whole index and the
    items' texts (read only for the item a document matches); the top 32 bits of the n-gram hashes are read
    by blocks through a small resident fence array (``_FencedTop``)."""

    def __init__(self, items: list[EvalItem], *, ngram: int = 13, code_ngram: int | None = None,
                 min_item_tokens: int = 6, min_code_item_tokens: int = 16):
        ngram = int(ngram)
        code_ngram = int(code_ngram or 2 * ngram)
        min_item_tokens = int(min_item_tokens)
        min_code_item_tokens = int(min_code_item_tokens)
        short: dict[str, dict[int, dict[int, int]]] = {"text": {}, "code": {}}
        n_windows = np.zeros(len(items), dtype=np.int32)
        rows: dict[str, list[tuple[np.ndarray, int]]] = {"text": [], "code": []}
        for idx, it in enumerate(items):
            toks = text_tokens(it.text) if it.mode == "text" else code_tokens(it.text)
            n = ngram if it.mode == "text" else code_ngram
            if len(toks) >= n:
                hs = np.unique(_window_hashes_text(toks, n) if it.mode == "text" else _window_hashes_code(toks, n))
                n_windows[idx] = len(hs)
                rows[it.mode].append((hs, idx))
            elif it.mode == "text" and len(short_tokens(it.text)) >= min_item_tokens:
                toks = short_tokens(it.text)
                k = len(toks)
                short[it.mode].setdefault(k, {})[int(_window_hashes_text(toks, k)[0])] = idx
            elif it.mode == "code" and len(toks) < min_code_item_tokens:
                # too short to attribute after identifier normalisation: verbatim (whitespace/case-normalised)
                toks = short_tokens(it.text)
                if len(toks) >= min_item_tokens:
                    short["text"].setdefault(len(toks), {})[int(_window_hashes_text(toks, len(toks))[0])] = idx
            elif it.mode == "code":
                k = len(toks)
                short[it.mode].setdefault(k, {})[int(_window_hashes_code(toks, k)[0])] = idx
        arrays, benchmarks = _ItemTable.arrays_of(items)
        arrays["n_windows"] = n_windows
        anchors = {}
        for mode in ("text", "code"):
            lst = rows[mode]
            if lst:
                hashes = np.concatenate([h for h, _ in lst])
                owners = np.concatenate([np.full(len(h), i, dtype=np.int32) for h, i in lst])
                order = np.argsort(hashes, kind="stable")
                hashes, owners = hashes[order], owners[order]
            else:
                hashes, owners = np.empty(0, np.uint64), np.empty(0, np.int32)
            bits = _main_bitmap_bits(len(hashes))
            bitmap = np.zeros(1 << (bits - 3), dtype=np.uint8)
            _set_bits(bitmap, hashes, np.uint64(64 - bits))
            arrays.update({f"{mode}.hashes": hashes, f"{mode}.owners": owners, f"{mode}.bitmap": bitmap,
                           f"{mode}.top": (hashes >> np.uint64(32)).astype(np.uint32)})
            # whole-item tables: per length (in the order the tables were filled), keys and owners in insertion order
            tables = short[mode]
            arrays[f"{mode}.short.k"] = np.array(list(tables), dtype=np.int64)
            arrays[f"{mode}.short.bounds"] = np.concatenate([[0], np.cumsum([len(t) for t in tables.values()])]).astype(np.int64)
            arrays[f"{mode}.short.keys"] = np.array([h for t in tables.values() for h in t], dtype=np.uint64)
            arrays[f"{mode}.short.owners"] = np.array([i for t in tables.values() for i in t.values()], dtype=np.int32)
            anchors[mode] = _anchors_by_length(mode, tables, items)
        meta = {"format": INDEX_FORMAT, "ngram": ngram, "code_ngram": code_ngram, "min_item_tokens": min_item_tokens,
                "min_code_item_tokens": min_code_item_tokens, "benchmarks": benchmarks, "anchors": anchors}
        self._set(arrays, meta)

    def _set(self, arrays: dict[str, np.ndarray], meta: dict) -> None:
        self._arrays, self._meta = arrays, meta
        self.ngram = int(meta["ngram"])
        self.code_ngram = int(meta["code_ngram"])
        self.min_item_tokens = int(meta["min_item_tokens"])
        self.min_code_item_tokens = int(meta["min_code_item_tokens"])
        self.items = _ItemTable(arrays, list(meta["benchmarks"]))
        self.n_windows = arrays["n_windows"]
        self.modes = {}
        self._short_arrays = {}
        self._anchor_lengths = {}
        for mode in ("text", "code"):
            bitmap = arrays[f"{mode}.bitmap"]
            bits = int(np.log2(len(bitmap) * 8))
            top = arrays[f"{mode}.top"]
            top = _FencedTop(top) if isinstance(top, _FileArray) else top  # (read from the file: see read_index)
            self.modes[mode] = _ModeIndex(arrays[f"{mode}.hashes"], arrays[f"{mode}.owners"], self.n_windows,
                                          top, bitmap, np.uint64(64 - bits))
            ks, bounds = arrays[f"{mode}.short.k"], arrays[f"{mode}.short.bounds"]
            keys, owners = arrays[f"{mode}.short.keys"], arrays[f"{mode}.short.owners"]
            self._short_arrays[mode] = {int(k): (keys[bounds[j]: bounds[j + 1]], owners[bounds[j]: bounds[j + 1]])
                                        for j, k in enumerate(ks)}
            # anchor token -> {k: its distinct tuples of further tokens} (see _anchors_by_length)
            self._anchor_lengths[mode] = {a: {int(k): [tuple(r) for r in rests] for k, rests in by_k}
                                          for a, by_k in meta["anchors"][mode].items()}

    @property
    def short(self) -> dict[str, dict[int, dict[int, int]]]:
        """The whole-item tables: mode -> item length in tokens -> {hash of the item's tokens: item index}."""
        return {mode: {k: dict(zip(keys.tolist(), owners.tolist())) for k, (keys, owners) in tables.items()}
                for mode, tables in self._short_arrays.items()}

    def __len__(self) -> int:
        return len(self.items)

    def __getstate__(self):
        return {"arrays": {k: np.array(v) for k, v in self._arrays.items()}, "meta": self._meta}

    def __setstate__(self, st):
        self._set(st["arrays"], st["meta"])

    def best_match(self, text: str, *, min_windows: int = 3, max_chars: int | None = None,
                   chunk_chars: int = _CHUNK_CHARS) -> tuple[float, int | None, str | None]:
        """(best coverage, item index, mode) over both modes for ``text[:max_chars]`` (not copied); coverage
        1.0 for whole short items.

        A text is read by spans of about ``chunk_chars`` characters (``_spans``: its tokens, normalised and
        lower-cased text are those of its spans joined): each token stream (code tokens, words, lower-cased
        code tokens) as arrays of token hashes per span, each preceded by the last ``_overlap()`` hashes of the
        span before (one fewer than the longest window), so that every window of the text lies in one span's
        array. No token string is made: the words' hashes come from the runs of word characters (``word_hashes``),
        the code tokens' from their spans (``_CodeSpans``: the matches of ``_CODE_TOKEN``, found by array
        operations), the same hashes as ``token_hashes`` of the tokens. The windows found, and so the result,
        are those of the whole text, whatever the span length, while the working memory (code points, hashes,
        window hashes, normalised copies) is that of one span. Both lookups
        are by sets (distinct index rows hit, whole-item windows found): a window met twice counts once."""
        _bound_vocab()  # (best_match adds no token to it: a vocabulary grown by building an index is dropped)
        keep = self._overlap()
        rows: dict[str, list[np.ndarray]] = {"code": [], "text": []}  # n-gram index rows hit (per span)
        short: dict[str, tuple[int, int] | None] = {"code": None, "text": None}  # (length, table position) found
        short_text = bool(self._short_arrays["text"])
        # the last hashes of the code tokens, of the words, of the lower-cased code tokens; the code tokens' identifier flags
        tails = [np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64),
                 np.empty(0, dtype=bool)]

        def extend(i: int, new: np.ndarray) -> np.ndarray:
            out = np.concatenate([tails[i], new]) if len(tails[i]) else new
            tails[i] = out[max(0, len(out) - keep):]
            return out

        for start, end in _spans(text, chunk_chars, max_chars):
            part = text[start:end]
            spans = _CodeSpans(part)  # (_CODE_TOKEN.findall(part), as spans of code points)
            code_h = spans.hashes()
            is_id = spans.ident
            if len(code_h):
                is_id = is_id & ~_is_keyword(code_h)
            prep = _Prepared.of_code(extend(0, code_h), extend(3, is_id))
            self._ngram_rows("code", prep, rows["code"])
            self._short_found("code", prep, short)
            del prep, is_id
            normalized = normalize_prose(part)
            lowered = normalized.lower()
            words = _Prepared.of_hashes(extend(1, word_hashes(lowered)))  # (_TEXT_TOKEN.findall(lowered), hashed)
            self._ngram_rows("text", words, rows["text"])
            del words
            if short_text:  # short_tokens(part): its code tokens lower-cased where that is the same
                if (normalized == part or only_spaces_differ(normalized, part)) and lowering_keeps_code_tokens(part):
                    low_h = spans.hashes(_lowered_code_points(spans.cp))
                else:
                    low_h = _CodeSpans(lowered).hashes()
                self._short_found("text", _Prepared.of_hashes(extend(2, low_h)), short)
                del low_h
            del part, spans, code_h, normalized, lowered
        # the code mode first: its best n-gram coverage, else a whole code item; then the text mode's
        best = self._ngram_best("code", rows["code"], min_windows, (0.0, None, None))
        if best[0] >= 1.0:
            return best
        if short["code"] is not None:
            return (1.0, self._short_owner("code", short["code"]), "code")
        best = self._ngram_best("text", rows["text"], min_windows, best)
        if best[0] < 1.0 and short["text"] is not None:
            best = (1.0, self._short_owner("text", short["text"]), "text")
        return best

    def _overlap(self) -> int:
        """Token ids that a span's array repeats from the span before: one fewer than the longest window
        (n-gram or whole item) of either mode."""
        return max(self.ngram, self.code_ngram, *self._short_arrays["text"], *self._short_arrays["code"]) - 1

    def _ngram_rows(self, mode: str, prep: "_Prepared", out: list[np.ndarray]) -> None:
        """Append to ``out`` the rows of the mode's n-gram table whose hash is one of the windows of ``prep``."""
        idx = self.modes[mode]
        n = self.code_ngram if mode == "code" else self.ngram
        if not len(idx.hashes) or prep.n < n:
            return
        # windows whose hash can be in the index (bitmap of its top bits); no other can match
        dh = np.unique(_in_bitmap(prep.windows(n), idx.bitmap, idx.shift))
        top = (dh >> np.uint64(32)).astype(np.uint32)
        # the rows whose top 32 bits equal a window's (the rows of its full hash are among them: the
        # rows are sorted by full hash), then those whose full hash equals it
        if isinstance(idx.top, _FencedTop):  # (the cached index: the blocks of the array that can hold them)
            lo, cnt = idx.top.ranges(top)
        else:
            lo = np.searchsorted(idx.top, top, "left")
            cnt = np.searchsorted(idx.top, top, "right") - lo
        rows = np.repeat(lo - np.cumsum(np.r_[0, cnt[:-1]]), cnt) + np.arange(cnt.sum())
        rows = rows[idx.hashes[rows] == np.repeat(dh, cnt)] if len(rows) else rows
        if len(rows):
            out.append(rows)

    def _ngram_best(self, mode: str, rows: list[np.ndarray], min_windows: int,
                    best: tuple[float, int | None, str | None]) -> tuple[float, int | None, str | None]:
        """``best``, or the item of the mode with the highest coverage by the distinct rows ``rows`` when
        higher: each row is one (window hash, item) pair of the n-gram table."""
        if not rows:
            return best
        rows = np.unique(np.concatenate(rows)) if len(rows) > 1 else rows[0]
        owners, counts = np.unique(self.modes[mode].items[rows], return_counts=True)
        cov = counts / np.maximum(1, self.n_windows[owners])
        ok = counts >= np.minimum(min_windows, self.n_windows[owners])
        cov = np.where(ok, cov, 0.0)
        j = int(np.argmax(cov))
        return (float(cov[j]), int(owners[j]), mode) if cov[j] > best[0] else best

    def _short_found(self, mode: str, prep: "_Prepared", found: dict[str, tuple[int, int] | None]) -> None:
        """Lower ``found[mode]`` to ``(k, position)`` of the shortest length ``k`` with a window of ``prep``
        equal to a whole item of that length (``position``: the first such item in the table of length ``k``),
        when shorter (or, at the same length, listed before) than the one found already."""
        if not self._short_arrays[mode]:
            return
        tables, bitmap = self._short_lookup(mode)
        limit = found[mode][0] if found[mode] is not None else None
        lengths = [k for k in self._short_lengths(mode, prep) if limit is None or k <= limit]  # those that can match
        for k, win in prep.windows_by_length(lengths):
            keys, first, _owners = tables[k]
            # a window equal to a whole short item: the bitmap of every key's top bits leaves few
            # candidates, then a binary search in the sorted keys of this length
            cand = _in_bitmap(win, bitmap, _BITMAP_SHIFT)
            if not len(cand):
                continue
            pos = np.minimum(np.searchsorted(keys, cand), len(keys) - 1)
            hit = pos[keys[pos] == cand]
            if len(hit):  # the item listed first among those found (as a scan of the table would)
                found[mode] = min((k, int(first[hit].min())), found[mode] or (k + 1, 0))
                return

    def _short_owner(self, mode: str, found: tuple[int, int]) -> int:
        k, position = found
        return int(self._short_lookup(mode)[0][k][2][position])

    def _short_lookup(self, mode: str) -> tuple[dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray]:
        """Per item length: (sorted whole-item hashes, each one's position in the table, owners by
        table position); and a bitmap of the top ``_BITMAP_BITS`` bits of every key of the mode.
        Derived once per process from ``_short_arrays`` (a few thousand keys)."""
        cache = self.__dict__.setdefault("_short_sorted", {})
        if mode not in cache:
            out = {}
            bitmap = np.zeros(1 << (_BITMAP_BITS - 3), dtype=np.uint8)
            for k, (keys, owners_k) in self._short_arrays[mode].items():
                order = np.argsort(keys, kind="stable")
                out[k] = (keys[order], order, owners_k)
                _set_bits(bitmap, keys, _BITMAP_SHIFT)
            cache[mode] = (out, bitmap)
        return cache[mode]

    def _short_lengths(self, mode: str, prep: "_Prepared") -> list[int]:
        """Lengths of the whole-item table of ``mode`` that can match a text with the tokens of ``prep``:
        those of an entry of ``_anchor_lengths`` whose anchor and further tokens all occur in the text (by
        their hashes, ``token_hashes``: a token of the text sharing a 64-bit hash with an anchor only adds a
        length to scan)."""
        cache = self.__dict__.setdefault("_short_sorted", {})
        key = ("anchor_hashes", mode)
        if key not in cache:  # the entries as positions in the sorted distinct hashes of their tokens
            entries = [(a, k, rest) for a, by_k in self._anchor_lengths[mode].items() for k, rests in by_k.items()
                       for rest in rests]
            words = sorted({w for a, _k, rest in entries for w in (a, *rest) if w})
            hw = token_hashes(words)
            uh = np.unique(hw)
            at = dict(zip(words, np.searchsorted(uh, hw).tolist()))
            at[""] = len(uh)  # (always present: the last element of the presence array)
            cols = [[at[a] for a, _k, _r in entries], [k for _a, k, _r in entries]]
            cols += [[at[r[j]] if len(r) > j else len(uh) for _a, _k, r in entries] for j in (0, 1)]
            cache[key] = (uh, *(np.array(c, dtype=np.int64) for c in cols))
        uh, anchor, k, rest1, rest2 = cache[key]
        if not len(k):
            return []
        present = np.zeros(len(uh) + 1, dtype=bool)
        present[-1] = True
        if len(uh) and prep.n:
            pos = np.searchsorted(uh, prep.h)
            np.minimum(pos, len(uh) - 1, out=pos)
            present[pos[uh[pos] == prep.h]] = True
        return np.unique(k[present[anchor] & present[rest1] & present[rest2]]).tolist()

    def _main_bitmap(self, mode: str) -> np.ndarray:
        """Bitmap of the top bits of the mode's n-gram hashes (``modes[mode].shift``)."""
        return self.modes[mode].bitmap


def _anchors_by_length(mode: str, tables: dict[int, dict[int, int]], items: list[EvalItem]) -> dict[str, list]:
    """The whole-item table of ``mode`` by *anchor* tokens: each item's longest literal token (ties: the first
    in sorted order) -> ``[[k, [its distinct tuples of two next-longest literal tokens]], ...]`` for the items
    it anchors (``k``: their length in tokens). Literal: every token in text mode; in code mode the tokens
    that are not renamed (keywords, numbers, punctuation). A window equal to an item holds all of its literal
    tokens, so the lengths ``k`` whose items all miss one of those tokens in a text have no match there and
    are not scanned (they could only hit through two token sequences sharing a 64-bit hash). Built with
    the index (JSON-ready: it is stored in the cached index)."""
    by_len: dict[str, dict[int, list[list[str]]]] = {}
    for k, table in tables.items():
        for i in table.values():
            text = items[i].text
            if mode == "text":
                words = set(short_tokens(text))
            else:
                words = {t for t in code_tokens(text) if not _token_info(t)[1]}
            words = sorted(words, key=lambda w: (-len(w), w))
            # an item without a literal token anchors at "" (always present): its length is scanned
            rests = by_len.setdefault(words[0] if words else "", {}).setdefault(k, [])
            if words[1:3] not in rests:
                rests.append(words[1:3])
    return {a: [[k, rests] for k, rests in by_k.items()] for a, by_k in by_len.items()}


def build_index(eval_sets: list[str], *, missing: str = "error", **kw) -> EvalIndex:
    return EvalIndex(load_eval_items(eval_sets, missing=missing), **kw)


INDEX_FORMAT = 5  # bump when tokenisation or the index layout changes (invalidates cached indexes)
_MAGIC = b"ASSAYDCX"


def _index_key(eval_sets: list[str], missing: str, kw: dict) -> str:
    import hashlib

    h = hashlib.sha256(json.dumps([INDEX_FORMAT, list(eval_sets), missing, sorted(kw.items())]).encode())
    for spec in eval_sets:
        path = spec.split("=", 1)[1] if "=" in spec and not os.path.exists(spec) else spec
        files = [os.path.join(dp, f) for dp, _d, fs in os.walk(path) for f in fs] if os.path.isdir(path) else [path]
        for f in sorted(files):
            try:
                st = os.stat(f)
            except OSError:
                continue
            h.update(f"{os.path.abspath(f)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _index_path(eval_sets: list[str], missing: str, kw: dict) -> str:
    root = os.environ.get("ASSAY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "assay")
    return os.path.join(root, "decontam", f"index-{_index_key(eval_sets, missing, kw)}.arrays")


def write_index(idx: EvalIndex, path: str) -> None:
    """Write ``idx`` as one file: ``_MAGIC``, the header's length (8 bytes, little-endian), the header
    (JSON: the index's metadata and each array's dtype, shape and offset), then the arrays, 64-byte aligned."""
    arrays = {k: np.ascontiguousarray(v) for k, v in idx._arrays.items()}
    layout, pos = {}, 0
    for k, a in arrays.items():
        layout[k] = [a.dtype.str, list(a.shape), pos]
        pos += -(-a.nbytes // 64) * 64
    header = json.dumps({"meta": idx._meta, "arrays": layout}).encode()
    start = -(-(len(_MAGIC) + 8 + len(header)) // 64) * 64
    with open(path, "wb") as fh:
        fh.write(_MAGIC + len(header).to_bytes(8, "little") + header)
        fh.write(b"\0" * (start - fh.tell()))
        for k, a in arrays.items():
            assert fh.tell() == start + layout[k][2]
            fh.write(a.tobytes())
            fh.write(b"\0" * (-a.nbytes % 64))


def _read_on_demand(name: str) -> bool:
    """Arrays of the cached index that a lookup reads only where a document hits (``_FileArray``)."""
    return name.startswith("item.") or name.endswith((".hashes", ".owners", ".top"))  # (.top: _FencedTop)


def read_index(path: str) -> EvalIndex:
    """The index ``write_index`` wrote: the arrays that every lookup reads (prefilter bitmaps, whole-item
    tables) mapped read-only from the file (the processes of a machine share their pages), the others read on
    demand (``_FileArray``; the top 32 bits of the n-gram hashes by blocks, ``_FencedTop``). ``ValueError`` when the file is not a complete
    index of this ``INDEX_FORMAT``."""
    import mmap

    fh = open(path, "rb", buffering=0)
    try:
        head = fh.read(len(_MAGIC) + 8)
        if len(head) < len(_MAGIC) + 8 or head[: len(_MAGIC)] != _MAGIC:
            raise ValueError(f"not a decontamination index: {path}")
        n = int.from_bytes(head[len(_MAGIC):], "little")
        size = os.fstat(fh.fileno()).st_size
        if n > size:
            raise ValueError(f"damaged decontamination index: {path}")
        try:
            header = json.loads(fh.read(n))
        except ValueError as e:  # (UnicodeDecodeError and JSONDecodeError)
            raise ValueError(f"damaged decontamination index: {path}") from e
        if not isinstance(header, dict) or header.get("meta", {}).get("format") != INDEX_FORMAT:
            raise ValueError(f"decontamination index of another format: {path}")
        start = -(-(len(_MAGIC) + 8 + n) // 64) * 64
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size > start else b""
        arrays = {}
        for k, (dtype, shape, off) in header["arrays"].items():
            dt = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            if start + off + count * dt.itemsize > size:
                raise ValueError(f"truncated decontamination index: {path}")
            if not count:
                arrays[k] = np.empty(shape, dt)
            elif _read_on_demand(k) and len(shape) == 1:
                arrays[k] = _FileArray(fh.fileno(), start + off, dt, count)
            else:
                arrays[k] = np.frombuffer(mm, dtype=dt, count=count, offset=start + off).reshape(shape)
        idx = EvalIndex.__new__(EvalIndex)
        idx._set(arrays, header["meta"])
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        fh.close()
        raise ValueError(f"damaged decontamination index: {path}") from e
    except BaseException:
        fh.close()
        raise
    idx._file = fh  # (open while the index lives: its _FileArrays read from it)
    return idx


def ensure_index_cached(eval_sets: list[str], *, missing: str = "error", **kw) -> bool:
    """Build and cache the index unless the cache already holds it (then nothing is read); True when built.
    Run once before the tasks start, so that tasks starting together on a cold cache do not each build it."""
    if os.path.exists(_index_path(eval_sets, missing, kw)):
        return False
    cached_index(eval_sets, missing=missing, **kw)
    return True


def cached_index(eval_sets: list[str], *, missing: str = "error", **kw) -> EvalIndex:
    """``build_index`` with an on-disk cache (``$ASSAY_CACHE_DIR`` or ``~/.cache/assay``/decontam),
    keyed by the parameters and the eval-set files' paths, sizes and modification times, so the
    tasks of a run and later runs do not rebuild it; the index is mapped from the file (``read_index``).
    Any cache problem (a missing, damaged or foreign file, a read-only cache) falls back to building."""
    path = _index_path(eval_sets, missing, kw)
    try:
        return read_index(path)
    except (OSError, ValueError):
        pass
    idx = build_index(eval_sets, missing=missing, **kw)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        write_index(idx, tmp)
        os.replace(tmp, path)
        return read_index(path)
    except (OSError, ValueError):
        return idx


# ------------------------------------------------------------------------------------------------ step
class Decontamination(PipelineStep):
    """Flag documents overlapping evaluation sets (never drops).

    Args:
        eval_sets: files / archives / directories of eval sets (``name=path`` forces a benchmark name).
        ngram: words per text n-gram (10-13 typical). code_ngram: lexical tokens per code n-gram
            (default ``2 * ngram``).
        min_overlap: item coverage needed for ``decont__match``.
        min_item_tokens: shorter items are ignored (too generic to attribute).
        min_code_item_tokens: shorter code items only match verbatim (no identifier normalisation).
        max_chars: only the first ``max_chars`` characters of a document are checked.
        missing: ``"error"`` (default) fails on an eval-set path that does not exist; ``"skip"`` runs
            without it, logs a warning and counts ``decont/eval_set_missing`` (the default recipe uses
            ``skip`` so that it runs on a machine without ``../shared/data``; documents are then not
            checked against those sets: ``decont__checked`` is False when no eval set was found).
    """

    name = "🧪 Decontamination"
    type = "🔢 - SIGNALS"

    def __init__(self, eval_sets: list[str] | None = None, *, ngram: int = 13, code_ngram: int | None = None,
                 min_overlap: float = 0.6, min_item_tokens: int = 6, min_code_item_tokens: int = 16,
                 max_chars: int = 1_000_000, missing: str = "error"):
        super().__init__()
        if missing not in ("error", "skip"):
            raise ValueError(f"missing must be 'error' or 'skip', not {missing!r}")
        self.missing = missing
        self.eval_sets = list(eval_sets or [])
        self.ngram = int(ngram)
        self.code_ngram = code_ngram
        self.min_overlap = float(min_overlap)
        self.min_item_tokens = int(min_item_tokens)
        self.min_code_item_tokens = int(min_code_item_tokens)
        self.max_chars = int(max_chars)
        self._index: EvalIndex | None = None

    def __getstate__(self):
        st = self.__dict__.copy()
        st["_index"] = None  # rebuilt lazily on the worker
        return st

    def _index_kw(self) -> dict:
        return dict(ngram=self.ngram, code_ngram=self.code_ngram, min_item_tokens=self.min_item_tokens,
                    min_code_item_tokens=self.min_code_item_tokens)

    @property
    def index(self) -> EvalIndex:
        if self._index is None:
            self._index = cached_index(self.eval_sets, missing=self.missing, **self._index_kw())
        return self._index

    def prepare_run(self) -> bool:
        """Before the tasks of a run start (the launcher calls it once): build the cached index when the cache
        lacks it. Every task then loads it (about 0.2 CPU-s) instead of building it (about 6 CPU-s on the
        default recipe's eval sets), which on a cold cache each worker did at the same time. True when built."""
        return ensure_index_cached(self.eval_sets, missing=self.missing, **self._index_kw())

    def check(self, text: str) -> dict:
        """Signals for one text (``decont__*`` keys)."""
        cov, item, mode = self.index.best_match(text, max_chars=self.max_chars) if len(self.index) else (0.0, None, None)
        match = cov >= self.min_overlap
        bench, item_id = self.index.items.info(item) if (item is not None and match) else (None, None)
        return {
            "decont__checked": len(self.index) > 0,
            "decont__match": bool(match),
            "decont__benchmark": bench,
            "decont__overlap": round(float(cov), 6),
            "decont__item": item_id,
            "decont__mode": mode if match else None,
        }

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        _ = self.index
        gone = missing_eval_sets(self.eval_sets) if self.missing == "skip" else []
        if gone:
            from datatrove.utils.logging import logger

            logger.warning(f"decontamination: eval sets not found, not checked: {gone}")
            self.stat_update("decont/eval_set_missing", value=len(gone))
        for doc in data:
            self.stat_update("documents")
            if not doc.text:
                doc.metadata.update({"decont__checked": len(self.index) > 0, "decont__match": False,
                                     "decont__benchmark": None, "decont__overlap": 0.0,
                                     "decont__item": None, "decont__mode": None})
                yield doc
                continue
            with self.track_time():
                try:
                    sig = self.check(doc.text)
                except Exception:  # noqa: BLE001 - never crash a task on one document
                    sig = {"decont__checked": False, "decont__match": False, "decont__benchmark": None, "decont__overlap": None,
                           "decont__item": None, "decont__mode": None}
                    self.stat_update("decont_error")
            doc.metadata.update(sig)
            if sig["decont__match"]:
                self.stat_update("decont/match", f"decont/{sig['decont__benchmark']}")
            yield doc
