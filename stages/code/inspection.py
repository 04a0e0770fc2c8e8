"""Per-file code inspection: language, flags with evidence, numeric signals, rule verdict.

``inspect_file(path, content)`` is the public notebook/benchmark entry point; ``compute_signals``
works on already-decoded text (used by the ``CodeSignals`` step).
"""

from __future__ import annotations

import contextlib

import codecs
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from assay.stages.code import detectors as D
from assay.stages.code.langid import detect_language
from assay.stages.code.rules import code_rule_decisions, language_family

__all__ = ["FileReport", "inspect_file", "inspect_text", "decode_bytes", "compute_signals", "FLAGS"]

FLAGS = ("generated", "vendored", "minified", "lockfile", "data", "encoded", "binary")
HEADER_WINDOW = 40
NGRAM = 10
MAX_TOKENS = 200_000

# line-comment prefixes / block delimiters by language (small syntax table, not a language table)
_HASH = ("#",)
_SLASH = ("//",)
_LINE_COMMENT: dict[str, tuple[str, ...]] = {
    **{k: _HASH for k in ("python", "cython", "ruby", "perl", "shell", "r", "yaml", "toml", "make", "docker",
                           "cmake", "powershell", "julia", "elixir", "nim", "tcl", "coffeescript", "ini", "cfg")},
    **{k: _SLASH for k in ("c", "cpp", "objective-c", "cuda", "java", "javascript", "typescript", "jsx", "tsx",
                            "go", "rust", "kotlin", "scala", "csharp", "swift", "groovy", "dart", "zig", "d",
                            "scss", "less", "fsharp", "vue", "svelte")},
    "php": ("//", "#"),
    "lua": ("--",), "haskell": ("--",), "sql": ("--",), "elm": ("--",), "ada": ("--",),
    "matlab": ("%",), "tex": ("%",), "latex": ("%",), "erlang": ("%",), "prolog": ("%",),
    "clojure": (";",), "scheme": (";",), "common-lisp": (";",), "nasm": (";",),
}
_BLOCK_COMMENT: dict[str, tuple[str, str]] = {
    **{k: ("/*", "*/") for k in ("c", "cpp", "objective-c", "cuda", "java", "javascript", "typescript", "jsx", "tsx",
                                  "go", "rust", "kotlin", "scala", "csharp", "swift", "groovy", "dart", "css",
                                  "scss", "less", "php", "d", "sql", "vue", "svelte")},
    "python": ('"""', '"""'), "cython": ('"""', '"""'),
    "haskell": ("{-", "-}"), "lua": ("--[[", "]]"), "html": ("<!--", "-->"), "xml": ("<!--", "-->"),
    "ocaml": ("(*", "*)"), "fsharp": ("(*", "*)"), "markdown": ("<!--", "-->"),
}
_IMPORT_LINE = re.compile(
    r"^\s*(import\s|from\s+[\w.]+\s+import\s|#include\s|#import\s|using\s+[\w.]+\s*;|require(_once)?\s*\(|"
    r"use\s+[\w:\\]+|package\s+[\w.]+;?\s*$|library\()"
)
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlLfF]*$")


@dataclass
class FileReport:
    path: str
    language: str | None
    flags: set[str] = field(default_factory=set)
    signals: dict = field(default_factory=dict)
    keep: bool = True
    reasons: list[str] = field(default_factory=list)
    evidence: dict[str, list[str]] = field(default_factory=dict)
    text: str | None = None


# ------------------------------------------------------------------------------------------------
# Encoding policy for source code (see ``decode_bytes``).
# PEP 263 / Emacs / Vim cookies in the first two lines (``# -*- coding: latin-1 -*-``, ``// vim: set fileencoding=x``)
_CODING_COOKIE = re.compile(rb"^[^\n]*?(?:coding[:=]|fileencoding=)[ \t]*([-\w.]+)", re.M)
_CSS_CHARSET = re.compile(rb'^\s*@charset\s+["\']([-\w.:]+)["\']\s*;')
_XML_DECL = re.compile(rb'^\s*<\?xml[^>]*?\sencoding\s*=\s*["\']([-\w.:]+)["\']')
_HTML_META = re.compile(rb'<meta[^>]+?charset\s*=\s*["\']?([-\w.:]+)', re.I)
# a "word" holding a non-ASCII character: what a legacy-encoded comment/string is made of
_NON_ASCII_WORD = re.compile(r"\S*[^\x00-\x7f]\S*")
# charset_normalizer ``mess_ratio`` of the non-ASCII words of the decoded text: real legacy text
# (French/Russian comments, Shift-JIS, GBK) scores 0.0, mojibake from broken UTF-8 scores ~0.1
MAX_LEGACY_MESS = 0.02
# share of the non-ASCII content that is valid UTF-8 (valid multi-byte chars / (valid + invalid sequences))
# at or above which a file that fails strict UTF-8 is "broken UTF-8", never a legacy charset
BROKEN_UTF8_SHARE = 0.5


def _declared_encoding(content: bytes) -> str | None:
    """Encoding declared by the file itself (normalised codec name), or None.

    Looks at a PEP 263 / Emacs / Vim coding cookie on the first two lines, a leading CSS ``@charset``,
    an XML declaration's ``encoding=`` and an HTML ``<meta charset>`` in the first 4 KB.
    """
    head = content[:4096]
    first_two = b"\n".join(head.split(b"\n", 2)[:2])
    m = (_CODING_COOKIE.search(first_two) or _CSS_CHARSET.match(head) or _XML_DECL.match(head.lstrip(b"\xef\xbb\xbf"))
         or _HTML_META.search(head))
    if not m:
        return None
    name = m.group(1).decode("ascii", "ignore")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _utf8_valid_share(content: bytes) -> float:
    """Valid multi-byte UTF-8 characters / (those + invalid sequences); 0.0 when there is no non-ASCII."""
    text = content.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    good = non_ascii - bad
    return good / (good + bad) if good + bad else 0.0


def strip_notebook(content: bytes) -> bytes | None:
    """A Jupyter notebook without cell outputs and attachments (base64 images, rendered HTML), re-serialised
    as JSON; None when the bytes are not a notebook. The code and markdown cells are kept as they are."""
    import json

    try:
        nb = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        if "outputs" in cell:
            cell["outputs"] = []
        cell.pop("attachments", None)
    return json.dumps(nb, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass")


def decode_bytes(content: bytes) -> tuple[str | None, str | None, str]:
    """Decode file bytes. Returns ``(text, reject_reason, encoding)``.

    Policy for source code (a wrong guess is worse than a rejected file: mojibake is silent noise):

    * NUL bytes (no UTF-16 BOM) or > 10 % control characters in the first 8 KB -> ``code_binary``.
    * strict UTF-8, with or without BOM -> accepted (``encoding == "utf-8"``).
    * an encoding the file declares itself (PEP 263 / Emacs / Vim coding cookie, CSS ``@charset``,
      XML declaration, HTML ``<meta charset>``) -> decoded strictly with it; failure -> ``code_undecodable``.
    * otherwise a legacy charset is accepted only on positive evidence: the file is NOT mostly-valid
      UTF-8 (share of valid multi-byte UTF-8 < ``BROKEN_UTF8_SHARE``: a UTF-8 file with a few broken
      sequences is rejected, not re-read as cp125x) AND charset-normalizer's best guess decodes the
      non-ASCII words coherently (its ``mess_ratio`` on them <= ``MAX_LEGACY_MESS``).
    * anything else -> ``code_undecodable``.

    ``encoding`` is Python's canonical codec name (``codecs.lookup(name).name``: ``cp1252``,
    ``iso8859-1``, ``cp932``); for a rejected file, the declared or guessed codec (may be ``""``).
    """
    head = content[:8192]
    if b"\x00" in head:
        # UTF-16/32 text has NULs too: let the BOM decide
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                return content.decode("utf-16"), None, "utf-16"
            except UnicodeDecodeError:
                return None, "code_binary", ""
        return None, "code_binary", ""
    if head:
        ctrl = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
        if ctrl / len(head) > 0.1:
            return None, "code_binary", ""
    try:
        return content.decode("utf-8-sig"), None, "utf-8"
    except UnicodeDecodeError:
        pass
    declared = _declared_encoding(content)
    if declared is not None:
        if declared in ("utf-8", "utf-8-sig"):
            return None, "code_undecodable", declared
        try:
            return content.decode(declared), None, declared
        except (UnicodeDecodeError, LookupError):
            return None, "code_undecodable", declared
    if _utf8_valid_share(content[:1_000_000]) >= BROKEN_UTF8_SHARE:
        return None, "code_undecodable", ""
    from charset_normalizer import from_bytes
    from charset_normalizer.md import mess_ratio

    best = from_bytes(content[:1_000_000]).best()
    if best is None:
        return None, "code_undecodable", ""
    try:
        text = content.decode(best.encoding)
    except (UnicodeDecodeError, LookupError):
        return None, "code_undecodable", best.encoding or ""
    words = " ".join(_NON_ASCII_WORD.findall(text[:1_000_000]))[:50_000]
    if not words or mess_ratio(words, 1.0) > MAX_LEGACY_MESS:
        return None, "code_undecodable", best.encoding or ""
    return text, None, codecs.lookup(best.encoding).name


def _entropy(s: str) -> float:
    n = len(s)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _encoded_spans(text: str) -> tuple[int, int, int, list[str]]:
    """Total chars, largest span (byte-array literals excluded), span count of encoded data; labels."""
    spans: list[tuple[int, int]] = []
    kinds: Counter = Counter()
    for m in D.ENC_BASE64.finditer(text):
        s = m.group(0)
        # entropy + character-class check: identifiers, word lists, paths and repeated chars do not pass
        if not (any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)):
            continue
        if _entropy(s) < 4.5:
            continue
        spans.append(m.span() + ("base64",))
        kinds["base64"] += 1
    for label, rx, min_entropy in (
        ("hex", D.ENC_HEX, 3.0),
        ("escaped_bytes", D.ENC_ESCAPED_BYTES, 2.5),
        ("byte_array", D.ENC_BYTE_ARRAY, 2.5),
        ("unicode_escapes", D.ENC_UNICODE, 2.0),
    ):
        for m in rx.finditer(text):
            if _entropy(m.group(0)) < min_entropy:
                continue
            spans.append(m.span() + (label,))
            kinds[label] += 1
    if not spans:
        return 0, 0, 0, []
    spans.sort()
    total = 0
    largest = max((e - s for s, e, lab in spans if lab != "byte_array"), default=0)
    cur_s, cur_e = spans[0][:2]
    for s, e, _lab in spans[1:]:
        if s <= cur_e:
            cur_e = max(cur_e, e)
        else:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
    total += cur_e - cur_s
    return total, largest, len(spans), [f"encoded:{k}x{v}" for k, v in sorted(kinds.items())]


_ASCII_ALPHA = bytes(range(65, 91)) + bytes(range(97, 123))
_ASCII_DIGIT = bytes(range(48, 58))
_ASCII_SPACE = b" \t\n\r\x0b\x0c"


def _char_fractions(text: str) -> dict:
    n = len(text)
    if not n:
        return dict(alpha_fraction=0.0, alnum_fraction=0.0, digit_fraction=0.0, whitespace_fraction=0.0,
                    non_ascii_fraction=0.0)
    if text.isascii():
        b = text.encode("ascii")
        alpha = n - len(b.translate(None, _ASCII_ALPHA))
        digit = n - len(b.translate(None, _ASCII_DIGIT))
        ws = n - len(b.translate(None, _ASCII_SPACE))
        nonascii = 0
    else:
        alpha = sum(map(str.isalpha, text))
        digit = sum(map(str.isdigit, text))
        ws = sum(map(str.isspace, text))
        nonascii = n - len(text.encode("ascii", "ignore"))
    return dict(alpha_fraction=alpha / n, alnum_fraction=(alpha + digit) / n, digit_fraction=digit / n,
                whitespace_fraction=ws / n, non_ascii_fraction=nonascii / n)


def _is_literal_line(line: str) -> bool:
    """A line made only of literals (numbers, short strings, booleans), separators and a comment."""
    if len(line) > 400 or not D.LITERAL_START.match(line):
        return False
    rest, n = D.LITERAL_TOKEN.subn(" ", line)
    if not n:
        return False
    rest = D.TRAILING_COMMENT.sub("", rest)
    return D.LITERAL_REST.fullmatch(rest) is not None


def _comment_lines(lines: list[str], language: str | None) -> int:
    prefixes = _LINE_COMMENT.get(language or "", ("#", "//"))
    block = _BLOCK_COMMENT.get(language or "")
    n = 0
    in_block = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if in_block:
            n += 1
            if block and block[1] in line:
                in_block = False
            continue
        if block and line.startswith(block[0]):
            n += 1
            rest = line[len(block[0]):]
            if block[1] not in rest:
                in_block = True
            continue
        if line.startswith(prefixes):
            n += 1
    return n


HEADER_LEAD = 250  # lines before the header start (blank lines, shebang, licence block) kept in the window


class SignalsTimeout(Exception):
    """Raised by :func:`time_limit` when a document's code signals take longer than allowed."""


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`SignalsTimeout` in the block after ``seconds`` of the process's CPU time (``ITIMER_VIRTUAL``,
    ``SIGVTALRM``; not the wall clock, so a loaded machine does not change which documents time out; the regex
    engine checks signals while matching, so a pathological pattern is interrupted too). A no-op outside
    the main thread, on platforms without ``setitimer`` or with ``seconds`` falsy."""
    import signal
    import threading

    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum, frame):
        raise SignalsTimeout(f"code signals took longer than {seconds:g} s")

    old = signal.signal(signal.SIGVTALRM, _raise)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)


def _header_window(lines: list[str]) -> tuple[int, int]:
    """(start, end) of the header scan window: first 40 lines after a leading licence block."""
    i = 0
    n = len(lines)
    while i < n and (not lines[i].strip() or lines[i].startswith("#!") or "coding" in lines[i][:40]):
        i += 1
    j = i
    while j < n and (not lines[j].strip() or D.COMMENT_START.match(lines[j]) or (j > i and lines[j].lstrip().startswith("*"))):
        j += 1
        if j - i > 200:
            break
    block = "\n".join(lines[i:j])
    start = j if D.LICENCE_WORDS.search(block) else i
    # bounded: leading blank lines / a long comment-only file never make the window the whole file
    return max(0, start - HEADER_LEAD), min(n, start + HEADER_WINDOW)


def _dup_ngram_fraction(tokens: list[str], n: int = NGRAM) -> float:
    if len(tokens) < 2 * n:
        return 0.0
    grams = [hash(tuple(tokens[i:i + n])) for i in range(len(tokens) - n + 1)]
    counts = Counter(grams)
    covered = bytearray(len(tokens))
    for i, g in enumerate(grams):
        if counts[g] > 1:
            covered[i:i + n] = b"\x01" * n
    return sum(covered) / len(tokens)


def compute_signals(path: str, text: str, language: str | None = None) -> tuple[dict, set[str], dict[str, list[str]]]:
    """Signals (bare keys), flags and evidence for decoded ``text`` at ``path``."""
    path = path or ""
    base = os.path.basename(path)
    ext = os.path.splitext(base)[1].lower()
    if language is None:
        language, lang_method = detect_language(path, text)
    else:
        lang_method = "given"
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lengths = [len(l) for l in lines]
    nonblank = [l for l in lines if l.strip()]
    n_chars = len(text)
    sig: dict = {
        "language": language,
        "language_method": lang_method,
        "family": language_family(language),
        "n_chars": n_chars,
        "n_lines": len(lines),
        "n_nonblank_lines": len(nonblank),
        "avg_line_length": (sum(lengths) / len(lengths)) if lengths else 0.0,
        "max_line_length": max(lengths) if lengths else 0,
        "long_line_fraction": (sum(1 for x in lengths if x > 1000) / len(lengths)) if lengths else 0.0,
    }
    if n_chars:
        sig.update(_char_fractions(text))
    else:  # empty file: fractions are undefined (rules treat them as missing)
        sig.update(alpha_fraction=None, alnum_fraction=None, digit_fraction=None, whitespace_fraction=None,
                   non_ascii_fraction=None)
    nb = max(1, len(nonblank))
    sig["comment_fraction"] = _comment_lines(lines, language) / nb
    sig["import_line_fraction"] = sum(1 for l in nonblank if _IMPORT_LINE.match(l)) / nb
    # duplicate lines: non-trivial lines (>= 10 non-space chars) that repeat an earlier line
    norm = [l.strip() for l in nonblank if len(l.strip()) >= 10]
    if norm:
        c = Counter(norm)
        sig["duplicate_line_fraction"] = sum(v - 1 for v in c.values()) / len(norm)
    else:
        sig["duplicate_line_fraction"] = 0.0
    tokens = _WORD.findall(text[:2_000_000])[:MAX_TOKENS]
    sig["n_tokens"] = len(tokens)
    sig["dup_ngram_fraction"] = _dup_ngram_fraction(tokens)
    sig["numeric_token_fraction"] = (sum(1 for t in tokens if _NUMBER.match(t)) / len(tokens)) if tokens else 0.0
    literal_lines = sum(1 for l in nonblank if _is_literal_line(l))
    sig["literal_line_fraction"] = literal_lines / nb
    enc_total, enc_max, enc_n, enc_ev = _encoded_spans(text)
    sig["encoded_fraction"] = enc_total / n_chars if n_chars else 0.0
    sig["encoded_max_span"] = enc_max
    sig["encoded_spans"] = enc_n

    evidence: dict[str, list[str]] = {}

    def fire(flag: str, label: str) -> None:
        evidence.setdefault(flag, []).append(label)

    # ---- generated: layer 1 (path) ----
    for label, rx in D.GENERATED_PATH:
        if rx.search(path):
            fire("generated", label)
    # ---- layer 2 (header markers after any licence block) ----
    s, e = _header_window(lines)
    header = "\n".join(ln[:500] for ln in lines[s:e])
    m = D.HEADER_STRONG.search(header)
    if m:
        fire("generated", f"header:{m.group(0).strip().lower()[:40]}")
    else:
        for m in D.HEADER_WEAK.finditer(header):
            ln_start = header.rfind("\n", 0, m.start()) + 1
            if D.COMMENT_START.match(header, ln_start):
                fire("generated", f"header:{m.group(0).strip().lower()[:40]}")
                break
    # ---- layer 3 (structural signatures) ----
    scan = text if n_chars <= 4_000_000 else text[:4_000_000]
    for label, rx, min_count in D.STRUCTURAL_GENERATED:
        if not any(nd in scan for nd in D.STRUCTURAL_NEEDLES.get(label, ("",))):
            continue
        if min_count == 1:
            if rx.search(scan):
                fire("generated", label)
        else:
            cnt = 0
            for _ in rx.finditer(scan):
                cnt += 1
                if cnt >= min_count:
                    fire("generated", label)
                    break
    # ---- vendored ----
    for label, rx in D.VENDORED_PATH:
        if rx.search(path):
            fire("vendored", label)
    # ---- lockfile ----
    if base in D.LOCKFILE_NAMES or base.endswith((".lock", "-lock.json", "-lock.yaml", ".lockfile")):
        fire("lockfile", f"path:{base}")
    for label, rx in D.LOCKFILE_CONTENT:
        if rx.search(text[:2000]):
            fire("lockfile", label)
    # ---- minified ----
    if D.MINIFIED_PATH.search(path):
        fire("minified", "path:min")
    long_chars = sum(x for x in lengths if x >= 500)
    if n_chars >= 1000 and long_chars / n_chars >= 0.5:
        long_text = "\n".join(l for l in lines if len(l) >= 500)
        lf = _char_fractions(long_text)
        ws_long = lf["whitespace_fraction"]
        sig["long_line_whitespace_fraction"] = ws_long
        if language in D.MINIFIED_LANGUAGES and ws_long < 0.08 and lf["alpha_fraction"] >= 0.4:
            fire("minified", f"struct:long_dense_lines(ws={ws_long:.3f})")
    else:
        sig["long_line_whitespace_fraction"] = None
    # ---- data ----
    if ext in D.DATA_EXTENSIONS:
        fire("data", f"path:{ext}")
    if language in D.DATA_LANGUAGES and n_chars > D.DATA_LANGUAGE_MAX_CHARS:
        fire("data", f"data_format_large:{language}")
    if (language not in D.DATA_LANGUAGES and literal_lines >= D.DATA_MIN_LITERAL_LINES
            and sig["literal_line_fraction"] >= D.DATA_LITERAL_LINE_FRACTION):
        fire("data", f"struct:literal_lines({sig['literal_line_fraction']:.2f})")
    elif len(tokens) >= 2000 and sig["numeric_token_fraction"] >= 0.6:
        fire("data", f"struct:numeric_tokens({sig['numeric_token_fraction']:.2f})")
    # ---- encoded ----
    if sig["encoded_fraction"] > 0.5 or enc_max > 1024:
        for lab in enc_ev:
            fire("encoded", lab)
    flags = set(evidence)
    for f in FLAGS:
        sig[f] = f in flags
    return sig, flags, evidence


def inspect_text(path: str, text: str, *, language: str | None = None) -> FileReport:
    sig, flags, evidence = compute_signals(path, text, language)
    reasons = code_rule_decisions(sig, sig["language"])
    return FileReport(path=path, language=sig["language"], flags=flags, signals=sig, keep=not reasons,
                      reasons=reasons, evidence=evidence, text=text)


def inspect_file(path: str, content: bytes) -> FileReport:
    """Inspect one file: language, flags (``FLAGS``), signals, default-rule verdict and reasons."""
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    text, reject, encoding = decode_bytes(content)
    if text is None:
        flags = {"binary"} if reject == "code_binary" else set()
        sig = {"language": None, "n_bytes": len(content), "binary": reject == "code_binary",
               "undecodable": reject == "code_undecodable"}
        return FileReport(path=path, language=None, flags=flags, signals=sig, keep=False, reasons=[reject],
                          evidence={"binary": ["bytes:nul_or_control"]} if flags else {})
    rep = inspect_text(path, text)
    rep.signals["n_bytes"] = len(content)
    rep.signals["encoding"] = encoding
    return rep
