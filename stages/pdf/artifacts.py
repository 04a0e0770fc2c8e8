"""Artifact detectors for reconstructed (VLM OCR or text-layer) page text.

``detect_artifacts(text, *, finish_reason="stop", text_layer=None, ink=None)`` returns the names
of the detectors that fired, in ``DETECTORS`` order:

``truncation``               finish reason ``length`` (token budget hit) or an unclosed HTML table /
                             display-math block at the end
``tail_loop``                the text ends in >= 3 copies of one unit (<= 1000 chars, with a letter
                             or digit; >= 40 chars in all)
``repeated_lines``           a substantive line (>= 12 chars) appears >= 4 times and repeats make up
                             >= 30% of the lines, or >= 3 identical consecutive lines
``repeated_sentences``       a sentence (>= 25 chars) appears >= 3 times and repeats are >= 25% of
                             the sentences, or a word 8-gram appears >= 3 times and repeated 8-grams
                             are >= 8% of all (dot leaders ignored)
``char_run``                 one character repeated >= 40 times in a row (table rule lines excepted)
``low_entropy``              >= 200 chars with character entropy < 2.8 bits, or >= 80 words with
                             < 12% distinct words
``blank_hallucination``      the rendered page has no ink (``ink`` < 0.001) yet the text has
                             >= 20 non-space chars
``text_layer_disagreement``  a trustworthy text layer (>= 40 words, < 10% garbled words) was given
                             and, after NFKC + casefold, < 40% of its word bigrams appear in the text
``table_garbage``            unbalanced table tags, or a table with >= 12 cells that are >= 60% empty
                             or >= 60% one repeated value, or Markdown table rows whose column counts
                             disagree
``bad_chars``                U+FFFD / C0-C1 control characters: >= 3, or >= 0.2% of the text
``script_mismatch``          dominant script differs from the text layer's, or some script holds
                             > 15 points more of the letters than in the text layer, or a second
                             script holds > 35% of the letters

``PdfArtifactSignals`` runs the detectors on every page (OCR output when the page was OCRed,
otherwise the text layer) and writes ``pdf__artifacts`` (comma-joined detector names over the
document), ``pdf__artifact_pages`` (pages with any artifact), ``pdf__artifact_page_share``,
``pdf__page_artifacts`` (JSON list per page) and ``pdf__artifact__<detector>`` (page counts).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

DETECTORS = (
    "truncation", "tail_loop", "repeated_lines", "repeated_sentences", "char_run", "low_entropy",
    "blank_hallucination", "text_layer_disagreement", "table_garbage", "bad_chars", "script_mismatch",
)

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_SENT_RE = re.compile(r"(?<=[.!?。！？])\s+")
_TABLE_RULE_RE = re.compile(r"^[\s|:+\-=]+$")
_CHAR_RUN_RE = re.compile(r"(\S)\1{39,}")
_BAD_CHAR_RE = re.compile("[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CELL_RE = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.IGNORECASE | re.DOTALL)


# ----------------------------------------------------------------------------------------------
# individual detectors (plain functions)
# ----------------------------------------------------------------------------------------------
def is_truncated(text: str, finish_reason: str = "stop") -> bool:
    if (finish_reason or "").lower() in ("length", "max_tokens", "max_length"):
        return True
    low = text.lower()
    if low.count("<table") > low.count("</table>"):
        return True
    if text.count("$$") % 2 == 1 and text.rstrip().rfind("$$") > len(text.rstrip()) - 400:
        return True
    return False


def has_tail_loop(text: str, *, min_repeats: int = 3, min_span: int = 40, max_unit: int = 1000) -> bool:
    t = text.rstrip()
    n = len(t)
    if n < min_span:
        return False
    for unit in range(1, min(max_unit, n // min_repeats) + 1):
        tail = t[n - unit:]
        r = 1
        while (r + 1) * unit <= n and t[n - (r + 1) * unit: n - r * unit] == tail:
            r += 1
        if r >= min_repeats and r * unit >= min_span and any(c.isalnum() for c in tail):
            return True
    return False


def has_repeated_lines(text: str) -> bool:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 4:
        return False
    subst = [ln for ln in lines if len(ln) >= 12 and not _TABLE_RULE_RE.match(ln)]
    c = Counter(subst)
    if c:
        top, cnt = c.most_common(1)[0]
        rep = sum(v - 1 for v in c.values() if v > 1)
        if cnt >= 4 and rep / len(lines) >= 0.3:
            return True
    run = 1
    for a, b in zip(subst, subst[1:]):
        run = run + 1 if a == b else 1
        if run >= 3:
            return True
    return False


def has_repeated_sentences(text: str, *, n: int = 8) -> bool:
    """A sentence (>= 25 chars) >= 3 times making >= 25% of the sentences, or a word ``n``-gram
    >= 3 times with repeated n-grams >= 8% of all (catches repeats without sentence punctuation)."""
    sents = [s.strip() for s in _SENT_RE.split(" ".join(text.split())) if len(s.strip()) >= 25]
    if len(sents) >= 3:
        c = Counter(sents)
        extra = sum(v - 1 for v in c.values() if v > 1)
        if c.most_common(1)[0][1] >= 3 and extra / len(sents) >= 0.25:
            return True
    words = text.split()
    if len(words) < 3 * n:
        return False
    grams = Counter(g for g in (tuple(words[i:i + n]) for i in range(len(words) - n + 1))
                    if sum(any(c.isalnum() for c in w) for w in g) >= n // 2)  # not dot leaders
    if not grams:
        return False
    top = grams.most_common(1)[0][1]
    dup = sum(v - 1 for v in grams.values() if v > 1)
    return top >= 3 and dup / (len(words) - n + 1) >= 0.08


def has_char_run(text: str) -> bool:
    for m in _CHAR_RUN_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start: line_end if line_end >= 0 else len(text)]
        if _TABLE_RULE_RE.match(line):
            continue
        return True
    return False


def char_entropy(text: str) -> float:
    s = "".join(text.split())
    if not s:
        return 0.0
    c = Counter(s)
    n = len(s)
    return -sum(v / n * math.log2(v / n) for v in c.values())


def is_low_entropy(text: str) -> bool:
    s = "".join(text.split())
    if len(s) >= 200 and char_entropy(text) < 2.8:
        return True
    words = _WORD_RE.findall(text.lower())
    return len(words) >= 80 and len(set(words)) / len(words) < 0.12


def is_blank_hallucination(text: str, ink: float | None) -> bool:
    return ink is not None and ink < 0.001 and sum(not c.isspace() for c in text) >= 20


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def trustworthy_text_layer(text_layer: str | None) -> bool:
    if not text_layer:
        return False
    from assay.stages.pdf._pdfdoc import text_stats

    st = text_stats(text_layer)
    return st["words"] >= 40 and st["garb"] < 0.1 and "\ufffd" not in text_layer


def text_layer_agreement(text: str, text_layer: str) -> float:
    """Share of the text layer's word bigrams (multiset) found in ``text`` after NFKC + casefold.

    Bigrams separate "same page, other formatting" (docling ground truth vs its text layer: >= 0.93)
    from "another page of the same paper" (<= 0.15) far better than single words (0.25-0.45).
    """
    best = _bigram_agreement(_words(text_layer), _words(text))
    if best < 1.0 and _PRESENTATION_FORMS.search(text_layer):
        # Arabic-script text layers written with presentation forms (U+FB50-U+FDFF, U+FE70-U+FEFF) are usually
        # in visual order: each line runs right to left as stored. NFKC maps the forms to letters; reversing
        # each line gives the logical order the OCR text is in.
        best = max(best, _bigram_agreement(_words(_visual_to_logical(text_layer)), _words(text)))
    return best


_PRESENTATION_FORMS = re.compile("[\ufb50-\ufdff\ufe70-\ufefe]")


def _visual_to_logical(text: str) -> str:
    """Each line reversed (characters and so words), after NFKC: visual-order RTL text -> logical order."""
    return "\n".join(line[::-1] for line in unicodedata.normalize("NFKC", text).split("\n"))


def _bigram_agreement(rw: list[str], hw: list[str]) -> float:
    if len(rw) < 2:
        ref, hyp = Counter(rw), Counter(hw)
    else:
        ref, hyp = Counter(zip(rw, rw[1:])), Counter(zip(hw, hw[1:]))
    tot = sum(ref.values())
    if not tot:
        return 1.0
    return sum(min(v, hyp.get(k, 0)) for k, v in ref.items()) / tot


def has_table_garbage(text: str) -> bool:
    low = text.lower()
    if "<table" in low:
        for tag in ("tr", "td", "th"):
            opened = len(re.findall(rf"<{tag}[\s>]", low))
            closed = low.count(f"</{tag}>")
            if opened and abs(opened - closed) > max(2, opened // 10):
                return True
        cells = [c.strip() for c in _CELL_RE.findall(text)]
        if len(cells) >= 12:
            empty = sum(1 for c in cells if not c) / len(cells)
            nonempty = [c for c in cells if c]
            top = Counter(nonempty).most_common(1)[0][1] / len(cells) if nonempty else 0.0
            if empty >= 0.6 or (top >= 0.6 and len(nonempty) >= 12):
                return True
    rows = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|") and ln.strip().endswith("|")]
    if len(rows) >= 3:
        counts = Counter(r.count("|") for r in rows)
        if counts.most_common(1)[0][1] / len(rows) < 0.6:
            return True
    return False


def has_bad_chars(text: str) -> bool:
    n = len(_BAD_CHAR_RE.findall(text))
    return n >= 3 or (n > 0 and n / max(len(text), 1) >= 0.002)


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    head = name.split(" ")[0]
    if head in ("CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH", "FULLWIDTH"):
        return "CJK"
    if head == "MATHEMATICAL":
        return None
    return head


def script_shares(text: str) -> dict[str, float]:
    c = Counter(s for s in map(_script, text) if s)
    n = sum(c.values())
    return {k: v / n for k, v in c.most_common()} if n else {}


def has_script_mismatch(text: str, text_layer: str | None = None) -> bool:
    shares = script_shares(text)
    if not shares or sum(ch.isalpha() for ch in text) < 30:
        return False
    main = next(iter(shares))
    if text_layer and sum(ch.isalpha() for ch in text_layer) >= 50 and trustworthy_text_layer(text_layer):
        ref = script_shares(text_layer)
        if ref and next(iter(ref)) != main:
            return True
        # a script the text layer does not have (or has much less of) takes a real share of the answer
        if any(v - ref.get(k, 0.0) > 0.15 for k, v in shares.items()):
            return True
    second = list(shares.values())[1] if len(shares) > 1 else 0.0
    return second > 0.35


def detect_artifacts(text: str, *, finish_reason: str = "stop", text_layer: str | None = None,
                     ink: float | None = None) -> list[str]:
    """Names of the detectors (see module doc) that fire on ``text``."""
    text = text or ""
    fired = []
    if is_truncated(text, finish_reason):
        fired.append("truncation")
    if has_tail_loop(text):
        fired.append("tail_loop")
    if has_repeated_lines(text):
        fired.append("repeated_lines")
    if has_repeated_sentences(text):
        fired.append("repeated_sentences")
    if has_char_run(text):
        fired.append("char_run")
    if is_low_entropy(text):
        fired.append("low_entropy")
    if is_blank_hallucination(text, ink):
        fired.append("blank_hallucination")
    if text_layer is not None and trustworthy_text_layer(text_layer) and text_layer_agreement(text, text_layer) < 0.4:
        fired.append("text_layer_disagreement")
    if has_table_garbage(text):
        fired.append("table_garbage")
    if has_bad_chars(text):
        fired.append("bad_chars")
    if has_script_mismatch(text, text_layer):
        fired.append("script_mismatch")
    return fired


# ----------------------------------------------------------------------------------------------
# step
# ----------------------------------------------------------------------------------------------
class PdfArtifactSignals(PipelineStep):
    """Run the artifact detectors on every page of a PDF document (after ``PdfOcr`` or ``PdfTextLayer``).

    OCRed pages are checked with their finish reason, their ink and (when trustworthy) their text
    layer; text-layer pages are checked alone (``text_layer_disagreement`` cannot fire on them).
    """

    name = "🧪 PDF artifact detectors"
    type = "🔢 - SIGNALS"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from assay.stages.pdf._pdfdoc import OCR_PAGES, page_texts, pdf_media

        for doc in data:
            self.stat_update("documents")
            if doc.metadata.get("reject_reason") or doc.metadata.get("source", "pdf") != "pdf":
                yield doc
                continue
            layer = page_texts(doc)
            m = pdf_media(doc)
            ocr = (m.metadata.get(OCR_PAGES) if m is not None else None) or {}
            if layer is None:
                layer = [doc.text]
            with self.track_time():
                per_page: list[list[str]] = []
                counts = Counter()
                for i, lt in enumerate(layer):
                    res = ocr.get(i)
                    if res and res.get("text"):
                        fired = detect_artifacts(res["text"], finish_reason=res.get("finish_reason", "stop"),
                                                 text_layer=lt or None, ink=res.get("ink"))
                    elif res and res.get("final_text") is not None:
                        fired = detect_artifacts(res["final_text"])
                    else:
                        fired = detect_artifacts(lt or "")
                    per_page.append(fired)
                    counts.update(fired)
            n = len(per_page)
            n_bad = sum(1 for p in per_page if p)
            doc.metadata["pdf__artifacts"] = ",".join(d for d in DETECTORS if counts.get(d))
            doc.metadata["pdf__artifact_pages"] = n_bad
            doc.metadata["pdf__artifact_page_share"] = round(n_bad / n, 4) if n else 0.0
            doc.metadata["pdf__page_artifacts"] = json.dumps(per_page)
            for d in DETECTORS:
                doc.metadata[f"pdf__artifact__{d}"] = int(counts.get(d, 0))
                if counts.get(d):
                    self.stat_update(f"artifact/{d}", value=counts[d])
            yield doc
