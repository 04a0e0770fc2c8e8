"""Language identification for source files.

Built on pygments' lexer registry (filename patterns, ``analyse_text`` content scores,
shebang and Emacs/Vim modelines).  Only the few ambiguous extensions where pygments'
content scorers are known to be weak get extra content hints (linguist-style heuristics),
and lexer names are folded to short canonical language names.
"""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache

__all__ = ["detect_language"]

# pygments alias -> canonical name where the first alias is not the usual one
_CANONICAL = {
    "splus": "r",
    "s": "r",
    "js": "javascript",
    "c++": "cpp",
    "objective-c": "objective-c",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "console": "shell",
    "py": "python",
    "python3": "python",
    "ts": "typescript",
    "md": "markdown",
    "rst": "restructuredtext",
    "text": None,
    "hspec": "haskell",
    "literate-haskell": "haskell",
}

# content hints for extensions shared by several languages (subset of linguist's heuristics.yml)
_HINTS: dict[str, list[tuple[str, re.Pattern]]] = {
    ".h": [
        ("objective-c", re.compile(r"^\s*(@(interface|implementation|protocol|end|property)\b|#import\s)", re.M)),
        (
            "cpp",
            re.compile(
                r"^\s*(template\s*<|namespace\s+\w+|class\s+\w+\s*(final\s*)?[:{]|using\s+namespace\b|"
                r"#include\s*<(iostream|string|vector|memory|map|algorithm|cstdint|cstdio|cstdlib)>|"
                r"(public|private|protected)\s*:)|std::",
                re.M,
            ),
        ),
    ],
    ".ts": [("xml", re.compile(r"\A\s*<\?xml|\A\s*<!DOCTYPE TS|\A\s*<TS\b"))],
    ".r": [("rebol", re.compile(r"\A\s*REBOL\s*\[", re.I)), ("r", re.compile(r"<-|\blibrary\(|\bfunction\s*\(|^\s*#", re.M))],
    ".m": [
        ("objective-c", re.compile(r"^\s*(@(interface|implementation|protocol|end|import)\b|#import\s)", re.M)),
        ("matlab", re.compile(r"^\s*(function\s.*=|%\s|end\s*$|disp\()", re.M)),
    ],
}

# linguist's fallback when no hint fires (pygments' scorers would pick Objective-C for some C headers)
_HINT_DEFAULT = {".h": "c"}

_SHEBANG = re.compile(r"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?([A-Za-z_][\w.+-]*)")
_MODELINE_VIM = re.compile(r"(?:vi|vim|ex)(?:[<=>]?\d*)?:.*(?:ft|filetype|syn|syntax)=(\w+)")
_MODELINE_EMACS = re.compile(r"-\*-.*?(?:mode:\s*)?([\w+-]+)\s*(?:;.*)?-\*-")


def _canonical(lexer_cls) -> str | None:
    if lexer_cls is None:
        return None
    alias = lexer_cls.aliases[0] if lexer_cls.aliases else lexer_cls.name.lower()
    return _CANONICAL.get(alias, alias)


@lru_cache(maxsize=1)
def _pattern_index() -> tuple[dict[str, list], list]:
    """Index pygments filename patterns: simple ``*.ext`` patterns by extension, the rest in a list."""
    from pygments.lexers._mapping import LEXERS

    by_ext: dict[str, list] = {}
    other: list = []
    for modname, name, _aliases, filenames, _mimes in LEXERS.values():
        for pat in filenames:
            if pat.startswith("*.") and not any(ch in pat[2:] for ch in "*?["):
                by_ext.setdefault(pat[1:], []).append((modname, name, pat))
            else:
                other.append((modname, name, pat))
    return by_ext, other


@lru_cache(maxsize=4096)
def _candidates_for(basename: str) -> tuple:
    """Lexer classes whose filename patterns match ``basename`` (cached per name)."""
    from pygments.lexers import _lexer_cache, _load_lexers

    by_ext, other = _pattern_index()
    hits = []
    dot = basename.find(".")
    while dot != -1:
        hits.extend(by_ext.get(basename[dot:], ()))
        dot = basename.find(".", dot + 1)
    hits.extend(t for t in other if fnmatch.fnmatchcase(basename, t[2]))
    out = []
    seen = set()
    for modname, name, pat in hits:
        if name in seen:
            continue
        seen.add(name)
        if name not in _lexer_cache:
            _load_lexers(modname)
        out.append((_lexer_cache[name], "*" not in pat))
    return tuple(out)


@lru_cache(maxsize=512)
def _lexer_by_alias(alias: str):
    from pygments.lexers import find_lexer_class_by_name
    from pygments.util import ClassNotFound

    alias = alias.lower()
    for cand in (alias, re.sub(r"[\d.]+$", "", alias)):
        if not cand:
            continue
        try:
            return find_lexer_class_by_name(cand)
        except ClassNotFound:
            continue
    return None


def _from_shebang_or_modeline(head: str) -> tuple[str | None, str | None]:
    first = head.split("\n", 1)[0]
    m = _SHEBANG.match(first)
    if m:
        lx = _lexer_by_alias(m.group(1))
        if lx is not None:
            return _canonical(lx), "shebang"
    lines = head.split("\n")
    for line in lines[:5] + lines[-5:]:
        m = _MODELINE_VIM.search(line) or _MODELINE_EMACS.search(line)
        if m:
            lx = _lexer_by_alias(m.group(1))
            if lx is not None:
                return _canonical(lx), "modeline"
    return None, None


def detect_language(path: str, text: str) -> tuple[str | None, str]:
    """Return ``(language, method)``; method is one of filename, content, shebang, modeline, none.

    ``text`` may be the whole file; only its beginning (and end, for modelines) is inspected.
    """
    base = os.path.basename(path or "")
    head = text[:8192]
    ext = os.path.splitext(base)[1].lower()
    cands = _candidates_for(base) if base else ()
    if len(cands) == 1 and ext not in _HINTS:
        return _canonical(cands[0][0]), "filename"
    if ext in _HINTS:
        for lang, rx in _HINTS[ext]:
            if rx.search(head):
                return lang, "content"
        if ext in _HINT_DEFAULT:
            return _HINT_DEFAULT[ext], "filename"
    if len(cands) > 1:
        best = None
        best_score = None
        for cls, explicit in cands:
            try:
                score = float(cls.analyse_text(head) or 0.0)
            except Exception:  # analyse_text of third-party lexers may raise
                score = 0.0
            key = (score + (0.5 if explicit else 0.0), cls.priority, -len(cls.filenames), cls.__name__)
            if best_score is None or key > best_score:
                best, best_score = cls, key
        return _canonical(best), "content"
    if len(cands) == 1:
        return _canonical(cands[0][0]), "filename"
    lang, method = _from_shebang_or_modeline(text[:2048] + "\n" + text[-2048:] if len(text) > 4096 else text)
    if lang:
        return lang, method
    return None, "none"
