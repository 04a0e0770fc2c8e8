"""``shape_features`` (per distinct token, C-level tests) equals its per-token definition."""

from __future__ import annotations

import csv
import gzip
import math
from collections import Counter

from assay.stages.web import quality as Q


def _definition(text: str) -> list[float]:
    t = text[: Q.TEXT_MAX_CHARS]
    blocks = Counter(Q._script_block(c) for c in t if c.isalpha())  # character by character
    punct = sum(1 for c in t if not c.isalnum() and not c.isspace())
    n_letters = sum(blocks.values())
    script_mix = 1.0 - max(blocks.values()) / n_letters if n_letters else 0.0
    toks = t.split()
    n = len(toks) or 1
    seps = sum(1 for w in toks if len(w) <= 2 and all(c in Q._SEPARATORS for c in w))
    words = [w.lower() for w in toks if any(c.isalpha() for c in w)]
    long_words = Counter(w for w in words if len(w) >= 4)
    top = max(long_words.values()) / len(words) if long_words and words else 0.0
    window = words[:300]
    ttr = len(set(window)) / len(window) if window else 0.0
    caps = sum(1 for w in toks if w[:1].isupper()) / n
    moj = len(Q._MOJIBAKE_RE.findall(t)) * 1000.0 / (len(t) or 1)
    punct /= (len(t) or 1)
    urls = sum(1 for w in toks if "http" in w or "www." in w or "@" in w or ".com" in w) / n
    term = sum(1 for w in toks if w[-1] in Q._terminal_punctuation()) / n
    counts = Counter(w.strip(Q._WORD_STRIP) for w in words)
    counts.pop("", None)
    top10 = sum(c for _, c in counts.most_common(10)) / (sum(counts.values()) or 1)
    return [script_mix, seps / n, top, ttr, caps, math.log1p(moj), punct, urls, term, top10]


CASES = ["", " ", "a", "| » -- ~~ * |", "İstanbul İSTANBUL ΣΑΣ ς", "http://x.com www.y.org a@b .com",
         "Hello. World! ok? 。 ", "...!!! ''' \"\"\" «»", "x " * 700, "The the THE the. «the» (the) “the”",
         "Das könnte Sie auch interessieren | Rezept drucken | Diese Seite teilen » Back to top",
         "हिन्दी भाषा । বাংলা ভাষা। ١٢٣ العربية؟ 中文。日本語！", "²³ ½ Ⅻ ⅻ 12abc _x_ a_b"]


def test_shape_features_equal_the_per_token_definition(shared_data):
    texts = list(CASES)
    for p in sorted((shared_data / "quality" / "hplt_inspection").glob("*.tsv.gz"))[:12]:
        csv.field_size_limit(10**9)
        with gzip.open(p, "rt", encoding="utf-8", errors="replace") as fh:
            for i, row in enumerate(csv.reader(fh, delimiter="\t")):
                if i > 40:
                    break
                texts += [c for c in row if len(c) > 200][:1]
    assert len(texts) > 200
    for t in texts:
        Q._LAST_COUNTS[:] = [None, None]
        assert Q.shape_features(t) == _definition(t), t[:200]
