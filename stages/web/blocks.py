"""Line-level boilerplate classifier applied after main-content extraction.

resiliparse's main-content extractor keeps the article (high recall) but also much of the page chrome
around it: navigation lists, "Related articles", sign-in boxes, gallery captions, share bars, footers.
This module scores every output line with a small logistic regression over layout features and drops
the lines that look like chrome.

Features per line (``line_features``): length in characters and words, link share (characters between
``LINK_OPEN``/``LINK_CLOSE`` markers; the extractor does not set them today: marking every anchor cost more
CPU than the whole extraction and the weight it earned was ~0), terminal and inner sentence punctuation, list bullet, digits, title case,
CJK share, a multilingual chrome-phrase flag ("Skip to main content", "Back to top", "Rezept drucken",
cookie consent, ...), date-only lines, the position in the page, and the same link/length/bullet values
averaged over the two lines before and after (chrome comes in runs).

The weights (``block_weights.json``) are trained by ``benchmarks/train_web_blocks.py`` on the **train
split of scrapinghub and readability only** (never ir_chaos, which is research-use only); dev splits
choose the threshold. Lines holding code, math or table placeholders are never dropped. When the
classifier would drop most of the page, the page is kept as extracted (``MIN_KEEP_SHARE``).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

LINK_OPEN, LINK_CLOSE = "\ufdd2", "\ufdd3"  # Unicode noncharacters, as the extractor's placeholders
_MARK_RE = re.compile("[" + LINK_OPEN + LINK_CLOSE + "]")
_WORD_RE = re.compile(r"\w+")
_DIGIT_RE = re.compile(r"\d")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_BULLET_RE = re.compile(r"^\s*(?:[•\-*·▪►»]|\d{1,3}[.)])\s")
_END_PUNCT = tuple('.!?:;"”’)»。！？…')
_INNER_PUNCT_RE = re.compile(r"[.!?。！？](?:\s|$)")
_DATE_RE = re.compile(
    r"^\W*(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|\d{1,2}:\d{2}|(?:\d{1,2}\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|"
    r"oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:,?\s+\d{4})?|\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
    r"[a-z]*\.?\s+\d{4})\b", re.I)
# page chrome phrases in the languages of the evaluation corpora (whole line must be short to count)
_CHROME_RE = re.compile(
    r"skip to (?:main )?content|back to top|scroll to top|sign (?:in|up)|log ?in|register|subscribe|newsletter|"
    r"cookie|privacy (?:policy|settings)|terms of (?:use|service)|all rights reserved|copyright|©|"
    r"share (?:this|on)|follow us|click to|read (?:more|next)|related (?:articles|stories|posts)|"
    r"most (?:popular|read)|trending|advertis|sponsored|comments?\b|leave a reply|print (?:recipe|this)|"
    r"you (?:may|might) also like|recommended|see also|more from|next article|previous article|"
    r"diese seite teilen|rezept drucken|das könnte sie auch interessieren|anmelden|impressum|datenschutz|"
    r"zurück|weiterlesen|teilen|mehr zum thema|partager|lire aussi|connexion|compartir|leer más|"
    r"iniciar sesión|condividi|accedi|compartilhar|entrar|登录|注册|分享|返回|评论|相关|版权|"
    r"prev(?:ious)?\b|next\b|home\b|up\b|menu\b|search\b|navigation", re.I)

N_FEATURES = 21  # bias + 13 own values + 7 context values


def strip_marks(text: str) -> str:
    return _MARK_RE.sub("", text) if LINK_OPEN in text or LINK_CLOSE in text else text


def _link_chars(line: str) -> int:
    """Characters of ``line`` inside link markers (an unclosed marker runs to the end of the line)."""
    n = 0
    depth = 0
    start = 0
    for i, ch in enumerate(line):
        if ch == LINK_OPEN:
            if depth == 0:
                start = i
            depth += 1
        elif ch == LINK_CLOSE and depth:
            depth -= 1
            if depth == 0:
                n += i - start - 1
    if depth:
        n += len(line) - start - 1
    return n


def _own(line: str) -> list[float]:
    """Per-line values: [chars, words, link share, end punct, bullet, digits, title case, inner punct,
    chrome phrase, short, cjk, date, separators]."""
    links = _link_chars(line) if LINK_OPEN in line else 0
    s = strip_marks(line).strip()
    n = max(len(s), 1)
    words = _WORD_RE.findall(s)
    nw = len(words)
    cjk = len(_CJK_RE.findall(s)) / n
    title = sum(1 for w in words if w[:1].isupper()) / nw if nw else 0.0
    digits = len(_DIGIT_RE.findall(s)) / n
    chrome = 1.0 if len(s) <= 80 and _CHROME_RE.search(s) else 0.0
    return [math.log1p(len(s)), math.log1p(nw), min(links / n, 1.0), 1.0 if s.endswith(_END_PUNCT) else 0.0,
            1.0 if _BULLET_RE.match(line) else 0.0, digits, title,
            min(len(_INNER_PUNCT_RE.findall(s)) / max(nw, 1) * 5, 1.0), chrome, 1.0 if nw <= 3 else 0.0, cjk,
            1.0 if _DATE_RE.match(s) and nw <= 6 else 0.0, min(s.count("|") + s.count("·"), 5) / 5]


def line_features(lines: list[str]) -> list[list[float]]:
    """Feature vectors (``N_FEATURES`` values, bias first) for the non-empty ``lines`` of one page."""
    own = [_own(ln) for ln in lines]
    n = len(lines)
    max_chars = max((o[0] for o in own), default=1.0) or 1.0
    feats = []
    for i, o in enumerate(own):
        lo, hi = max(0, i - 2), min(n, i + 3)
        ctx = [own[j] for j in range(lo, hi) if j != i] or [o]
        k = len(ctx)
        feats.append([1.0, *o,
                      sum(c[2] for c in ctx) / k,  # neighbours' link share
                      sum(c[1] for c in ctx) / k,  # neighbours' words (log)
                      sum(c[4] for c in ctx) / k,  # neighbours' bullets
                      sum(c[3] for c in ctx) / k,  # neighbours' end punctuation
                      i / max(n - 1, 1),  # position in page
                      o[0] / max_chars,  # length relative to the longest line
                      math.log1p(n) / 6,  # page length in lines
                      ])
    return feats


_WEIGHTS = Path(__file__).with_name("block_weights.json")


@lru_cache(maxsize=1)
def load_weights(path: str | None = None) -> dict | None:
    p = Path(path) if path else _WEIGHTS
    if not p.exists():
        return None
    return json.loads(p.read_text())


def score_lines(feats: list[list[float]], model: dict) -> list[float]:
    """Probability that each line is main content."""
    w, mu, sd = model["weights"], model["mean"], model["std"]
    out = []
    for f in feats:
        z = w[0]
        for j in range(1, len(f)):
            z += w[j] * (f[j] - mu[j]) / sd[j]
        out.append(1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0))))
    return out


MIN_KEEP_SHARE = 0.25


def filter_lines(text: str, keep_line=None, model: dict | None = None) -> str:
    """Drop the lines of extracted ``text`` that the classifier calls chrome. ``keep_line(line)`` True marks
    lines that are always kept (code/math/table placeholders). Link markers are left in place."""
    model = model or load_weights()
    if model is None:
        return text
    lines = text.split("\n")
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    if len(idx) < 3:
        return text
    cand = [lines[i] for i in idx]
    probs = score_lines(line_features(cand), model)
    thr = model.get("threshold", 0.5)
    drop = set()
    total = kept = 0
    for i, ln, p in zip(idx, cand, probs):
        size = len(ln.strip())
        total += size
        if p < thr and not (keep_line and keep_line(ln)):
            drop.add(i)
        else:
            kept += size
    if not drop or kept < MIN_KEEP_SHARE * total:
        return text
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop)
