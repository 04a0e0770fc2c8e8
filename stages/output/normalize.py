"""Text normalisation before writing shards (recipe kind ``normalize_v1``).

``normalize_text(text)`` applies, in order:
  1. ftfy repairs with a conservative config: mojibake (``fix_encoding``, ``restore_byte_a0``,
     ``replace_lossy_sequences``, ``decode_inconsistent_utf8``, ``fix_c1_controls``), terminal
     escape removal, surrogate pairs joined, line breaks unified (``\\r\\n``, ``\\r``, U+2028,
     U+2029, U+0085 -> ``\\n``), control characters removed, Unicode NFC.
     Deliberately OFF because they change content that is not broken: HTML unescaping (code and
     markup samples contain ``&amp;`` on purpose), curly-quote straightening, full-width ->
     half-width folding (CJK text), Latin ligature folding (option ``fix_ligatures``).
  2. lone surrogates (from ``surrogateescape`` decoding) -> U+FFFD, so the text is valid UTF-8.
  3. remaining C0/C1 control characters other than ``\\t`` and ``\\n`` removed (ftfy keeps a few).

The step never drops a document. It writes ``normalize__changed`` (bool) on every document and
``normalize__chars_delta`` (int, new length - old length), and counts ``normalize/changed``.
"""

from __future__ import annotations

import re
import unicodedata

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 except \t \n, DEL, C1 controls
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _config(fix_mojibake: bool = True, fix_ligatures: bool = False):
    import ftfy

    return ftfy.TextFixerConfig(
        unescape_html=False,
        remove_terminal_escapes=True,
        fix_encoding=fix_mojibake,
        restore_byte_a0=fix_mojibake,
        replace_lossy_sequences=fix_mojibake,
        decode_inconsistent_utf8=fix_mojibake,
        fix_c1_controls=fix_mojibake,
        fix_latin_ligatures=fix_ligatures,
        fix_character_width=False,
        uncurl_quotes=False,
        fix_line_breaks=True,
        fix_surrogates=True,
        remove_control_chars=True,
        normalization="NFC",
        explain=False,
    )


def sanitize_text(text: str) -> str:
    """Minimal repair so any str can be written as UTF-8: lone surrogates -> U+FFFD."""
    if _LONE_SURROGATE.search(text):
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


# a character ftfy could change (with the ``_config`` settings): anything outside printable ASCII, tab, newline
_FTFY_DIRTY = re.compile("[^\t\n\x20-\x7e]")


def fix_text_segments(text: str, cfg) -> str:
    """Exactly ``ftfy.fix_text(text, cfg)``, without running ftfy on the lines it leaves unchanged.

    ftfy fixes text in independent segments (lines, ending at ``\n``, of at most ``max_decode_length``
    characters) and joins them. A segment of printable ASCII, tabs and newlines is returned unchanged by
    every fixer of a config with ``unescape_html`` off (mojibake, C1 controls, surrogates, line breaks,
    terminal escapes and control characters all need a character outside that set; NFC leaves ASCII
    alone), so only the lines holding such a character go through ftfy: about 9 lines of 10 of web text
    skip it."""
    import ftfy

    if cfg.unescape_html is not False:
        return ftfy.fix_text(text, cfg)  # "auto" changes the config at the first "<": ftfy's own loop
    seg_max = cfg.max_decode_length
    memo = _MEMO.setdefault(cfg, {})
    fast = _fast_path_config(cfg)
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _FTFY_DIRTY.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        start = text.rfind("\n", pos, m.start()) + 1 or pos  # the dirty line's start (pos is a line start)
        end = text.find("\n", m.start()) + 1 or n
        if start > pos:
            out.append(text[pos:start])
        # ftfy's segments of this line: pieces of at most seg_max characters from its start
        for s in range(start, end, seg_max):
            seg = text[s:min(s + seg_max, end)]
            fixed = memo.get(seg)
            if fixed is None:
                fixed = seg if fast and _unchanged_by_ftfy(seg) else ftfy.fix_and_explain(seg, cfg).text
                if len(seg) <= _MEMO_SEGMENT_MAX:
                    _memo_put(memo, seg, fixed)
            out.append(fixed)
        pos = end
    return "".join(out)


# every character one of ftfy's fixers (of a config with the content-changing fixers off) acts on besides mojibake:
# C0 controls but tab and line feed (``remove_control_chars``; "\r": ``fix_line_breaks``; ESC: terminal escapes),
# DEL and the C1 controls (``fix_c1_controls``; U+0085: a line break), U+2028/U+2029 (line breaks), the deprecated
# format characters U+206A-U+206F, the byte order mark and U+FFF9-U+FFFC (``remove_control_chars``), surrogates
# (``fix_surrogates``)
_FTFY_ACTS_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u206a-\u206f\ufeff\ufff9-\ufffc\ud800-\udfff]")


def _fast_path_config(cfg) -> bool:
    """Whether ``_unchanged_by_ftfy`` describes ``cfg``: HTML unescaping, ligature and width folding and quote
    straightening off (they change ordinary text), NFC normalisation."""
    return (cfg.unescape_html is False and not cfg.fix_latin_ligatures and not cfg.fix_character_width
            and not cfg.uncurl_quotes and cfg.normalization == "NFC")


def _unchanged_by_ftfy(seg: str) -> bool:
    """True where ``ftfy.fix_and_explain(seg, cfg).text`` is ``seg`` itself for a ``_fast_path_config`` config,
    by ftfy's own tests (ftfy 6.3.1, ``fix_and_explain``): one round of its fixers changes nothing, so it stops.
    ``fix_encoding`` leaves a text alone that is ASCII or not ``is_bad`` (its first check); the C1, line-break,
    surrogate, terminal-escape and control-character fixers need a character of ``_FTFY_ACTS_ON``; NFC needs a
    text that is not NFC. Everything else goes through ftfy (tests/output/test_output_real_text.py: the same
    results on real lines and their mojibake)."""
    from ftfy.badness import is_bad  # noqa: PLC0415
    from ftfy.chardata import possible_encoding  # noqa: PLC0415

    return (_FTFY_ACTS_ON.search(seg) is None and unicodedata.is_normalized("NFC", seg)
            and (possible_encoding(seg, "ascii") or _mojibake_trigger().search(seg) is None or not is_bad(seg)))


# characters of which every match of ftfy's mojibake regex (``ftfy.badness.BADNESS_RE``) holds at least one: per
# alternative of the regex one of its required character classes (tests/output/test_output_normalize.py checks it
# on the parsed regex). English text with curly quotes, dashes, ellipses, bullets, (c) and (tm) holds none of
# them, and then ``is_bad`` (a search of every alternative at every character) is known to be False
_TRIGGER_CATEGORIES = ("c1", "bad", "upper_accented", "lower_accented", "currency", "numeric", "box", "law")
_TRIGGER_EXTRA = "\u00d9\u0402\u0412\u0413\u0420\u0421\u0392\u0393\u039e\u039f\u201a"  # ÙЂВГРСΒΓΞΟ‚
_TRIGGER: list = []


def _mojibake_trigger() -> re.Pattern:
    if not _TRIGGER:
        from ftfy.badness import MOJIBAKE_CATEGORIES  # noqa: PLC0415

        _TRIGGER.append(re.compile("[" + "".join(MOJIBAKE_CATEGORIES[c] for c in _TRIGGER_CATEGORIES)
                                   + _TRIGGER_EXTRA + "]"))
    return _TRIGGER[0]


# ftfy's result per dirty segment, per config: a pure function of the two, and the lines that need it repeat
# across the pages of a worker (a site's navigation, footer and copyright lines; near-duplicate pages share
# all but a few lines). Bounded: segments up to _MEMO_SEGMENT_MAX characters, emptied past _MEMO_MAX_CHARS.
_MEMO: dict = {}
_MEMO_SEGMENT_MAX = 2_000
_MEMO_MAX_CHARS = 2_000_000
_MEMO_CHARS = [0]


def _memo_put(memo: dict, seg: str, fixed: str) -> None:
    if _MEMO_CHARS[0] > _MEMO_MAX_CHARS:
        for m in _MEMO.values():
            m.clear()
        _MEMO_CHARS[0] = 0
    memo[seg] = fixed
    _MEMO_CHARS[0] += len(seg) + len(fixed)


def normalize_text(text: str, *, fix_mojibake: bool = True, fix_ligatures: bool = False, _cfg=None) -> str:
    """Normalise one text (see module docstring). Pure function; never raises on str input."""
    if not text:
        return text
    cfg = _cfg if _cfg is not None else _config(fix_mojibake, fix_ligatures)
    text = sanitize_text(text)
    if text.isascii() and "\r" not in text and not _CONTROL.search(text):
        return text  # nothing ftfy would change in plain ASCII without CR/controls (terminal escapes use \x1b)
    out = fix_text_segments(text, cfg)
    out = sanitize_text(out)
    out = _CONTROL.sub("", out)
    return unicodedata.normalize("NFC", out)


class TextNormalizer(PipelineStep):
    """Normalise document text in place; records ``normalize__changed``; never drops a document.

    Args:
        fix_mojibake: repair mis-decoded text (ftfy ``fix_encoding`` family).
        fix_ligatures: fold Latin ligatures (``ﬁ`` -> ``fi``), useful for PDF text layers.
        skip_sources: sources left untouched (their documents still get ``normalize__changed=False``).
    """

    name = "🧹 Text normalizer"
    type = "✂️ - FORMATTER"

    def __init__(self, *, fix_mojibake: bool = True, fix_ligatures: bool = False, skip_sources: list[str] = []):
        super().__init__()
        self.fix_mojibake = fix_mojibake
        self.fix_ligatures = fix_ligatures
        self.skip_sources = list(skip_sources)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        cfg = _config(self.fix_mojibake, self.fix_ligatures)
        for doc in data or ():
            with self.track_time():
                self.stat_update("documents")
                before = doc.text or ""
                if doc.metadata.get("source") in self.skip_sources:
                    after = sanitize_text(before)
                else:
                    try:
                        after = normalize_text(before, _cfg=cfg)
                    except Exception:  # ftfy on pathological input: keep the text, make it writable
                        self.stat_update("normalize/error")
                        after = sanitize_text(before)
                changed = after != before
                doc.text = after if changed else before  # the same object when equal (one copy in memory)
                doc.metadata["normalize__changed"] = changed
                doc.metadata["normalize__chars_delta"] = len(after) - len(before)
                if changed:
                    self.stat_update("normalize/changed")
            yield doc
