"""Safety signals for web documents: a URL blocklist filter and an adult-content share per language.

**URL filter** (FineWeb's approach, as datatrove's ``URLFilter``, but as a stored signal with a reason):
a document is flagged when its host or any parent domain is in a domain blocklist, its URL is in a URL
blocklist, a *banned word* is one of the URL's words, at least ``soft_word_threshold`` *soft banned
words* are, or a *banned subword* occurs anywhere in the URL with punctuation removed. Domain and URL
lists are read from user-given folders in **UT1 format** (``<category>/domains``, ``<category>/urls``;
one entry per line, ``#`` comments; the UT1 lists are CC BY-SA and are never shipped: pass their path).
The banned/soft/sub word lists are the ones datatrove ships (``datatrove/assets/*.txt``).

**Adult content**: ``adult_word_share(text, lang)`` is the share of words that belong to the LDNOOBW
bad-word list of the text's language together with the English list (English porn vocabulary appears in
spam in every language). Lists for languages written without spaces (zh, ja, ko, th) are matched as
substrings and counted per character. The LDNOOBW lists ship in ``stages/web/data/ldnoobw`` (CC BY 4.0,
Shutterstock, https://github.com/LDNOOBW/List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words).

**Native script** (``roman_key``): some lists are written in Latin letters for a language whose text is not:
the Hindi list entirely (``chut``, ``randi``), half of the Russian one; and the English list, whose porn
words reach every language as loanwords written in the native script (Hindi ``सेक्सी``, Bengali
``হার্ডকোর``). A word of the text in an Indic script (Devanagari, Bengali, Gurmukhi, Gujarati, Oriya,
Tamil, Telugu, Kannada, Malayalam) is therefore also romanised (``indic-transliteration``, OPTITRANS, with
Hindi inherent-vowel deletion: a final schwa, and one between VC and CV, is not pronounced) and reduced to
a loose phonetic key (``x``=``ks``, ``c``=``k``, ``w``=``v``, long vowels = short ones, aspiration and
doubled letters dropped); it counts when that key is the key of a Latin entry of the English list or of
the language's own list. Keys shorter than ``ROMAN_KEY_MIN`` letters never count (short keys collide
with ordinary words across languages). Cyrillic text matches the Russian list's Cyrillic entries
directly; its romanised entries are left to Latin-script (translit) Russian text.

Signals written (never drops a document):

* ``UrlSafety``: ``safety__url_blocked`` (bool, None without URL), ``safety__url_reason``
  (``domain`` | ``subdomain`` | ``url`` | ``banned_word`` | ``soft_banned_words`` | ``banned_subword`` | None),
  ``safety__url_category`` (the UT1 category of a list hit);
* ``AdultContent``: ``safety__adult_share`` (float), ``safety__adult_words`` (int), ``safety__adult_distinct``
  (int: how many *different* list entries were found), ``safety__adult_lang``.

**One word is no evidence** (``safety__adult_distinct``): a single list entry, however often repeated, is far
more often an ordinary word of the page's own domain than porn: the developer marker ``XXX:`` (a Doxygen page
whose undocumented members all read "XXX: document this.", share 0.14) and the placeholder ``"xxx"``, a class
``Ass``, a parameter ``tit``, ``anal`` for *analysis*, the column ``sex`` of a data set, Norwegian ``fag`` (subject).
On every cached documentation page (65,309 pages, bench_e2e, set T left out) and the bench_e2e general-web
pages of the train/dev split, each page at a share of 0.01 or more had one distinct list word; every HPLT porn
row of the train/dev split that reaches the default threshold has two or more. The count is stored and the
recipe's ``adult_content`` rule applies only from two (``unless: safety__adult_distinct < 2``); the share itself
(also a feature of the web quality order) is unchanged.
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit

import numpy as np
import regex

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.common.memo import WHOLE_TEXT_MAX_CHARS, ByText, TextMemo

LDNOOBW_DIR = Path(__file__).resolve().parent / "data" / "ldnoobw"
NO_SPACE_LANGS = frozenset({"zh", "ja", "ko", "th", "wuu", "yue", "lo", "km", "my"})
# words with their combining marks (the stdlib ``\w`` splits Devanagari words at every vowel sign)
_WORD_RE = regex.compile(r"\w+")
_URL_SPLIT = re.compile(r"[^a-zA-Z0-9]+")
# LDNOOBW entries that are clinical/anatomical terms or ordinary words of other languages (Spanish
# "negro" = black, "del"); counted as adult words they flag health pages and Spanish prose
# (seen on the HPLT train/dev split), so they never count.
NEUTRAL_TERMS = frozenset({"sexual", "sexually", "sexuality", "penis", "vagina", "vulva", "semen", "sperm",
                           "ejaculation", "nipple", "nipples", "breast", "breasts", "anus", "rectum", "negro", "del",
                           "xx"})
# lid.176 codes -> LDNOOBW file names where they differ
_LIST_ALIASES = {"nb": "no", "nn": "no", "tl": "fil"}
# Unicode script name (first word of a letter's name) -> indic-transliteration scheme
INDIC_SCRIPTS = {"DEVANAGARI": "devanagari", "BENGALI": "bengali", "GURMUKHI": "gurmukhi", "GUJARATI": "gujarati",
                 "ORIYA": "oriya", "TAMIL": "tamil", "TELUGU": "telugu", "KANNADA": "kannada", "MALAYALAM": "malayalam"}
ROMAN_KEY_MIN = 4


# ---------------------------------------------------------------------------------------------
# adult content
def _norm(s: str) -> str:
    return unicodedata.normalize("NFKC", s).lower()


@lru_cache(maxsize=64)
def load_wordlist(lang: str, directory: str | None = None) -> tuple[frozenset, frozenset, tuple, re.Pattern | None]:
    """(single words, multi-word phrases as word tuples, substrings for no-space scripts, joined letters) of
    one LDNOOBW list; empty when the language has no list. An entry of single letters joined by punctuation
    (``s&m``) matches only joined by ``&``, ``/`` or ``+`` (``S/M``, ``s & m``): as a phrase of words it
    matched every ``s m`` of algebra and code (Haskell's ``RWST r w s m a``: 166 hits on one ghc-doc page) and
    Catalan's ``és més``."""
    d = Path(directory) if directory else LDNOOBW_DIR
    name = _LIST_ALIASES.get(lang, lang)
    path = d / name
    if not name or "/" in name or not path.is_file():
        return frozenset(), frozenset(), (), None
    words, phrases, subs, joined = set(), set(), [], []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        w = _norm(line.strip())
        if not w or w.startswith("#"):
            continue
        if lang in NO_SPACE_LANGS or name in NO_SPACE_LANGS:
            subs.append(w)
            continue
        toks = tuple(_WORD_RE.findall(w))
        if len(toks) == 1 and toks[0] in NEUTRAL_TERMS:
            continue
        if len(toks) == 1:
            words.add(toks[0])
        elif toks and all(len(t) == 1 for t in toks):
            if all(g.strip() for g in _WORD_RE.split(w)[1:-1]):
                joined.append(r"\s*[&/+]\s*".join(map(re.escape, toks)))
        elif toks:
            phrases.add(toks)
    joined_re = regex.compile(r"(?<!\w)(?:" + "|".join(joined) + r")(?!\w)") if joined else None
    return frozenset(words), frozenset(phrases), tuple(sorted(set(subs), key=len, reverse=True)), joined_re


_KEY_SUBS = (("x", "ks"), ("ph", "f"), ("ck", "k"), ("q", "k"), ("ow", "o"), ("w", "v"), ("z", "j"),
             ("ee", "i"), ("oo", "u"), ("y", "i"))


def roman_key(word: str) -> str:
    """Loose phonetic key of a word in Latin letters, so that informal romanisations, English spellings
    and the romanisation of native-script words meet: ``sexy`` / ``सेक्सी`` -> ``seksi``, ``gaand`` / ``गांड``
    -> ``gand``, ``madarchod`` / ``मादरचोद`` -> ``madarchod``. Aspiration (``h`` after a consonant) and
    ``sh`` stay: merging them made ordinary Hindi and Bengali words (``गंध`` smell, ``सिटी`` city) keys of
    list words on the HPLT train/dev rows."""
    s = re.sub(r"[^a-z]", "", unicodedata.normalize("NFKD", word).lower())
    s = s.replace("chh", "C")  # one sound (Hindi छ), apart from ch (च); doubled letters below must not merge them
    for a, b in _KEY_SUBS:
        s = s.replace(a, b)
    s = re.sub(r"c(?!h)", "k", s)
    return re.sub(r"(.)\1+", r"\1", s)  # doubled letters, long vowels written twice


def _schwa_deleted(word: str, script: str) -> str:
    """The Indic-script ``word`` with a virama after each consonant whose inherent vowel is not pronounced
    (Hindi rule, Ohala 1983: the word-final one, and one in the context V C _ C V, scanning from the
    right; a consonant cluster before C counts as VC), so that the romanisation drops it as speakers and
    informal spellings do."""
    units: list[list] = []  # [consonant index or None, vowel: "a" inherent / "v" written / "" virama, nasal]
    for i, ch in enumerate(word):
        name = unicodedata.name(ch, "")
        if not name.startswith(script + " "):  # another script's letter inside the word ends the syllable run
            units.append([None, "v", False])
        elif " LETTER " in name:
            vowel_letter = unicodedata.category(ch) == "Lo" and re.search(r" LETTER (A|AA|I|II|U|UU|E|EE|AI|O|OO|AU|"
                                                                          r"VOCALIC \w+|CANDRA \w+|SHORT \w+)$", name)
            units.append([None, "v", False] if vowel_letter else [i, "a", False])
        elif units and "VOWEL SIGN" in name:
            units[-1][1] = "v"
        elif units and "VIRAMA" in name:
            units[-1][1] = ""
        elif units and ("ANUSVARA" in name or "CANDRABINDU" in name or "VISARGA" in name):
            units[-1][2] = True
    drop = set()
    for k in range(len(units) - 1, 0, -1):
        c, v, nasal = units[k]
        if c is None or v != "a" or nasal:
            continue
        if k == len(units) - 1:
            drop.add(c)
        elif (any(u[1] for u in units[:k]) and units[k + 1][0] is not None
              and units[k + 1][1] and units[k + 1][0] not in drop and units[k - 1][0] not in drop):
            drop.add(c)
    if not drop:
        return word
    out = []
    for i, ch in enumerate(word):
        out.append(ch)
        if i in drop:
            j = i + 1
            while j < len(word) and "NUKTA" in unicodedata.name(word[j], ""):
                out.append(word[j])
                j += 1
            out.append(unicodedata.lookup(f"{script} SIGN VIRAMA"))
    return "".join(out)


@lru_cache(maxsize=200_000)
def native_roman_key(token: str) -> str:
    """``roman_key`` of a word written in an Indic script (see the module docstring); "" for other words."""
    uname = unicodedata.name(token[0], " ").split()[0] if token else ""
    scheme = INDIC_SCRIPTS.get(uname)
    if scheme is None:
        return ""
    from indic_transliteration import sanscript  # noqa: PLC0415

    rom = sanscript.transliterate(_schwa_deleted(token, uname), scheme, sanscript.OPTITRANS)
    # anusvara/candrabindu as n, candra o as o, OPTITRANS Ch (छ) as the informal chh
    rom = rom.replace("M", "n").replace(".N", "n").replace("oa", "o").replace("Ch", "chh")
    return roman_key(rom)


@lru_cache(maxsize=64)
def roman_keys(lang: str, directory: str | None = None) -> frozenset:
    """Keys (``roman_key``, at least ``ROMAN_KEY_MIN`` letters) of the single-word Latin entries of a list."""
    words = load_wordlist(lang, directory)[0]
    return frozenset(k for w in words if w.isascii() and len(k := roman_key(w)) >= ROMAN_KEY_MIN)


# the main blocks of ``INDIC_SCRIPTS``, Devanagari (U+0900) to Malayalam (U+0D7F; Vedic marks of Devanagari
# Extended never start a word): only words starting there are romanised
_INDIC_FIRST, _INDIC_LAST = "\u0900", "\u0d7f"


@lru_cache(maxsize=64)
def _native_keys(lang: str | None, directory: str | None) -> frozenset:
    """``roman_keys`` of the English list and of ``lang``'s (None: English only), once per language."""
    return roman_keys("en", directory) | (roman_keys(lang, directory) if lang else frozenset())


@lru_cache(maxsize=64)
def _substring_re(subs: tuple) -> re.Pattern | None:
    return re.compile("|".join(re.escape(s) for s in subs)) if subs else None


@lru_cache(maxsize=64)
def _phrases_by_first(phrases: frozenset) -> dict[str, tuple]:
    out: dict[str, list] = {}
    for ph in phrases:
        out.setdefault(ph[0], []).append(ph)
    return {k: tuple(v) for k, v in out.items()}


# adult-word counts of whole texts, for the adult content step of the same worker: the web quality step counts
# the same short texts (``adult_word_share`` of its first 20,000 characters, the whole text) in the language the
# language ID step found, a batch before it; keyed by the text itself (the step has no document id), each entry
# read once (``assay.stages.common.memo``)
COUNTED = TextMemo(max_items=512, max_chars=WHOLE_TEXT_MAX_CHARS)


ADULT_MAX_CHARS = 50_000  # characters of a text that the adult-word count reads


def adult_word_stats(text: str, lang: str | None, *, directory: str | None = None,
                     max_chars: int = ADULT_MAX_CHARS, native_script: bool = True) -> tuple[int, int, int]:
    """(bad words found, words in the text, distinct list entries found) for the LDNOOBW lists of ``lang`` and
    English. In no-space scripts a "word" is a character and a hit counts its characters. ``native_script``:
    also match Indic-script words against the romanised entries (``native_roman_key``). Distinct entries: a
    word as written (lower case), a phrase, letters joined by punctuation, a substring of a no-space list, or
    the romanised key of an Indic-script word."""
    out = _adult_word_count(text, lang, directory, max_chars, native_script)
    if COUNTED.active and isinstance(text, str) and len(text) <= max_chars:  # counted on the whole text
        COUNTED.put(text, text, (lang, directory, max_chars, native_script, out))
    return out


def adult_word_count(text: str, lang: str | None, *, directory: str | None = None,
                     max_chars: int = ADULT_MAX_CHARS, native_script: bool = True) -> tuple[int, int]:
    """(bad words found, words in the text): ``adult_word_stats`` without the distinct count."""
    return adult_word_stats(text, lang, directory=directory, max_chars=max_chars, native_script=native_script)[:2]


def counted_whole_text(text: str, lang: str | None, *, directory: str | None = None, max_chars: int = ADULT_MAX_CHARS,
                       native_script: bool = True) -> tuple[int, int, int] | None:
    """``adult_word_stats(text, lang, ...)`` as an earlier step of this worker computed it (``COUNTED``), or
    ``None`` where none did with these arguments."""
    hit = COUNTED.take(text, text) if len(COUNTED) else None
    return hit[4] if hit is not None and hit[:4] == (lang, directory, max_chars, native_script) else None


_INDIC_CHAR = re.compile(f"[{_INDIC_FIRST}-{_INDIC_LAST}]")


@lru_cache(maxsize=64)
def _list_keys(words: frozenset, phrases: frozenset) -> frozenset:
    """The tokens that can set a flag for one list: its words and the first words of its phrases."""
    return words | frozenset(_phrases_by_first(phrases))


def _members(toks: list[str], keys: frozenset) -> list[int]:
    """The positions of the tokens in ``keys``, ascending."""
    if not keys:
        return []
    return np.flatnonzero(np.fromiter(map(keys.__contains__, toks), dtype=bool, count=len(toks))).tolist()


def _adult_word_count(text, lang, directory, max_chars, native_script) -> tuple[int, int, int]:
    t = _norm(text[:max_chars]) if isinstance(text, str) else ""
    toks = _WORD_RE.findall(t)
    lists = [load_wordlist("en", directory)]
    if lang and lang != "en":
        lists.append(load_wordlist(lang, directory))
    flags = [False] * len(toks)
    found: set = set()  # the distinct entries
    for words, phrases, _, _ in lists:
        by_first = _phrases_by_first(phrases)
        # only the tokens that are a word of the list or start one of its phrases set flags (flags are only
        # ever set): found by one C-level membership pass, then visited in order
        for i in _members(toks, _list_keys(words, phrases)):
            w = toks[i]
            if w in words:
                flags[i] = True
                found.add(w)
            for ph in by_first.get(w, ()):
                n = len(ph)
                if tuple(toks[i:i + n]) == ph:
                    flags[i:i + n] = [True] * n
                    found.add(ph)
    if native_script and not t.isascii() and _INDIC_CHAR.search(t):  # (a word starting there needs such a character)
        keys = _native_keys(lang if lang and lang != "en" else None, directory)
        for i, w in enumerate(toks):
            if not flags[i] and _INDIC_FIRST <= w[0] <= _INDIC_LAST and (k := native_roman_key(w)) in keys:
                flags[i] = True
                found.add(("key", k))
    hits = sum(flags)
    for *_, joined_re in lists:
        if joined_re is not None:
            for m in joined_re.finditer(t):
                letters = _WORD_RE.findall(m.group(0))
                hits += len(letters)
                found.add(tuple(letters))
    n_words = len(toks)
    for _, _, subs, _ in lists:
        rx = _substring_re(subs)
        if rx is None:
            continue
        # no-space scripts: count characters; the text's length in non-space characters is the denominator
        n_chars = len(t) - sum(map(str.isspace, t))
        n_words = max(n_words, n_chars)
        for m in rx.finditer(t):
            hits += len(m.group(0))
            found.add(m.group(0))
    return hits, n_words, len(found)


def adult_word_share(text: str, lang: str | None, *, directory: str | None = None,
                     native_script: bool = True) -> float:
    """Share of the text's words that are LDNOOBW bad words (its language's list and English)."""
    hits, n, _ = adult_word_stats(text, lang, directory=directory, native_script=native_script)
    return hits / n if n else 0.0


class AdultContent(PipelineStep):
    """Store ``safety__adult_share``, ``safety__adult_words``, ``safety__adult_distinct`` and ``safety__adult_lang``
    per document.

    Args:
        wordlists_dir: folder of LDNOOBW-format lists named by language (default: the shipped copy).
        sources: ``metadata["source"]`` values to score (default ``["web"]``).
    The language is ``lang__code`` when language ID ran, else detected here (lid.176)."""

    name = "🔞 adult content"
    type = "📊 - SIGNALS"

    def __init__(self, wordlists_dir: str | None = None, sources: list[str] | None = None):
        super().__init__()
        self.wordlists_dir = str(wordlists_dir) if wordlists_dir else None
        self.sources = list(sources) if sources is not None else ["web"]

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        COUNTED.open()  # the web quality step before this one counts the same short texts
        try:
            yield from self._run(data)
        finally:
            COUNTED.close()

    def _run(self, data: DocumentsPipeline) -> DocumentsPipeline:
        from assay.stages.web.langid import detect_language  # noqa: PLC0415

        by_text = ByText()  # (hits, words) by (text, language): a page's copies are counted once
        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            if meta.get("source") not in self.sources:
                yield doc
                continue
            if meta.get("reject_reason") or not (doc.text or "").strip():
                meta["safety__adult_share"] = None
                meta["safety__adult_words"] = None
                meta["safety__adult_distinct"] = None
                meta["safety__adult_lang"] = None
                yield doc
                continue
            with self.track_time():
                lang = meta.get("lang__code") or detect_language(doc.text)[0]
                key = by_text.key(doc.text, lang)
                counted = by_text.get(key)  # an earlier copy of this very text (same language)
                if counted is None:
                    counted = counted_whole_text(doc.text, lang, directory=self.wordlists_dir)
                    # (a count of its own is not remembered: nothing after this step reads it)
                    counted = counted if counted is not None else _adult_word_count(
                        doc.text, lang, self.wordlists_dir, ADULT_MAX_CHARS, True)
                    by_text.put(key, counted)
                hits, n, distinct = counted
            meta["safety__adult_share"] = round(hits / n, 6) if n else 0.0
            meta["safety__adult_words"] = int(hits)
            meta["safety__adult_distinct"] = int(distinct)
            meta["safety__adult_lang"] = lang
            if hits:
                self.stat_update("with_adult_words")
            yield doc


# ---------------------------------------------------------------------------------------------
# URL filter
def _read_list(path: Path) -> set[str]:
    out = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if s and not s.startswith("#"):
                out.add(s.lower())
    return out


# UT1 categories that list sites to allow, not to block (loaded only when named explicitly)
UT1_NOT_BLOCKED = frozenset({"sexual_education"})


def load_ut1(path: str | os.PathLike, categories: Iterable[str] | None = None) -> tuple[dict, dict]:
    """Read UT1-format blocklists: ``path/<category>/domains`` and ``path/<category>/urls``.
    Returns ({domain: category}, {url without scheme: category}). ``categories`` None = every folder
    except ``sexual_education`` (a UT1 list of sites to allow)."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"UT1 blocklist folder not found: {root}")
    cats = (list(categories) if categories is not None
            else sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in UT1_NOT_BLOCKED))
    domains: dict[str, str] = {}
    urls: dict[str, str] = {}
    for c in cats:
        d = root / c
        if not d.is_dir():
            raise FileNotFoundError(f"UT1 category {c!r} not found under {root}")
        if (d / "domains").is_file():
            for x in _read_list(d / "domains"):
                domains.setdefault(x.lstrip("."), c)
        if (d / "urls").is_file():
            for x in _read_list(d / "urls"):
                urls.setdefault(_url_key(x), c)
    return domains, urls


def _url_key(url: str) -> str:
    """Scheme-less, ``www.``-less, lower-cased URL without trailing slash (UT1 ``urls`` entries look so)."""
    s = url.strip().lower()
    s = re.sub(r"^[a-z][a-z0-9+.-]*://", "", s)
    s = s[4:] if s.startswith("www.") else s
    return s.rstrip("/")


def _datatrove_list(name: str) -> set[str]:
    from datatrove.utils._import_utils import ASSETS_PATH  # noqa: PLC0415

    with open(os.path.join(ASSETS_PATH, name), encoding="utf-8") as f:
        return {_URL_SPLIT.sub("", x).lower() for x in f if x.strip() and not x.startswith("#")} - {""}


class UrlBlocklist:
    """The URL check itself (plain object, notebooks use it too): ``check(url) -> (reason, category)``,
    ``(None, None)`` when the URL passes."""

    def __init__(self, blocklist_dirs: Iterable[str] = (), categories: Iterable[str] | None = None,
                 extra_domains: Iterable[str] = (), extra_urls: Iterable[str] = (),
                 use_word_lists: bool = True, soft_word_threshold: int = 2):
        self.domains: dict[str, str] = {}
        self.urls: dict[str, str] = {}
        for p in blocklist_dirs:
            d, u = load_ut1(p, categories)
            for k, v in d.items():
                self.domains.setdefault(k, v)
            for k, v in u.items():
                self.urls.setdefault(k, v)
        for x in extra_domains:
            self.domains.setdefault(x.strip().lower().lstrip("."), "user")
        for x in extra_urls:
            self.urls.setdefault(_url_key(x), "user")
        self.soft_word_threshold = int(soft_word_threshold)
        if use_word_lists:
            self.banned_words = _datatrove_list("banned_words.txt")
            self.soft_words = _datatrove_list("soft_banned_words.txt")
            subs = sorted(_datatrove_list("banned_subwords.txt"), key=len, reverse=True)
        else:
            self.banned_words, self.soft_words, subs = set(), set(), []
        self._sub_re = re.compile("|".join(re.escape(s) for s in subs)) if subs else None

    def check(self, url: str | None) -> tuple[str | None, str | None]:
        if not url:
            return None, None
        host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower().rstrip(".")
        host = host[4:] if host.startswith("www.") else host
        labels = host.split(".")
        for i in range(len(labels) - 1):  # the host itself, then each parent domain (not the bare TLD)
            cat = self.domains.get(".".join(labels[i:]))
            if cat is not None:
                return ("domain" if i == 0 else "subdomain"), cat
        key = _url_key(url)
        cat = self.urls.get(key) or self.urls.get(key.split("?", 1)[0].rstrip("/"))
        if cat is not None:
            return "url", cat
        words = {w.lower() for w in _URL_SPLIT.split(url) if w}
        if words & self.banned_words:
            return "banned_word", None
        if len(words & self.soft_words) >= self.soft_word_threshold:
            return "soft_banned_words", None
        if self._sub_re is not None and self._sub_re.search(_URL_SPLIT.sub("", url).lower()):
            return "banned_subword", None
        return None, None


class UrlSafety(PipelineStep):
    """Store ``safety__url_blocked``, ``safety__url_reason`` and ``safety__url_category``.

    Args:
        blocklist_dirs: folders in UT1 format (``<category>/domains``, ``<category>/urls``), given by the
            user (UT1 is CC BY-SA and not shipped). Empty: only the word lists apply.
        categories: UT1 categories to load (default: every category folder found).
        extra_domains / extra_urls: more entries (recipe data).
        use_word_lists: banned words, soft banned words and banned subwords in the URL (datatrove's lists).
        soft_word_threshold: soft banned words needed to flag a URL.
        sources: ``metadata["source"]`` values checked (default ``["web"]``).
    Documents without ``metadata["url"]`` get ``safety__url_blocked=None``."""

    name = "🚫 URL blocklist"
    type = "📊 - SIGNALS"

    def __init__(self, blocklist_dirs: list[str] | None = None, categories: list[str] | None = None,
                 extra_domains: list[str] | None = None, extra_urls: list[str] | None = None,
                 use_word_lists: bool = True, soft_word_threshold: int = 2, sources: list[str] | None = None):
        super().__init__()
        self.blocklist_dirs = [str(p) for p in (blocklist_dirs or [])]
        for p in self.blocklist_dirs:  # fail at recipe build time, not inside a worker
            if not Path(p).is_dir():
                raise FileNotFoundError(f"UrlSafety: blocklist folder not found: {p}")
        self.categories = list(categories) if categories is not None else None
        self.extra_domains = list(extra_domains or [])
        self.extra_urls = list(extra_urls or [])
        self.use_word_lists = bool(use_word_lists)
        self.soft_word_threshold = int(soft_word_threshold)
        self.sources = list(sources) if sources is not None else ["web"]
        self._lists: UrlBlocklist | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_lists"] = None
        return state

    def lists(self) -> UrlBlocklist:
        if self._lists is None:
            self._lists = UrlBlocklist(self.blocklist_dirs, self.categories, self.extra_domains, self.extra_urls,
                                       self.use_word_lists, self.soft_word_threshold)
        return self._lists

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        lists = self.lists()
        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            if meta.get("source") not in self.sources:
                yield doc
                continue
            url = meta.get("url")
            if not url:
                meta["safety__url_blocked"] = None
                meta["safety__url_reason"] = None
                meta["safety__url_category"] = None
                self.stat_update("no_url")
                yield doc
                continue
            with self.track_time():
                reason, cat = lists.check(url)
            meta["safety__url_blocked"] = reason is not None
            meta["safety__url_reason"] = reason
            meta["safety__url_category"] = cat
            if reason:
                self.stat_update(f"blocked/{reason}")
            yield doc
