"""``web__identifier_share`` gives the values of its first form: ``_IDENTIFIER_RE.findall`` tried at every
position, with backtracking runs (``ORACLE_RE`` below, as 8414cf6 wrote it and 548c3ec still has it). The signal
now tries a possessive form only where a name can start (``_IDENTIFIER_MARK_REV_RE`` on the reversed text); both
must count the same characters on every text: seeded random strings over the characters and pieces that the
alternatives turn on, and real texts (HPLT inspection texts in ``../shared/data``)."""

from __future__ import annotations

import csv
import gzip
import random
import re

import pytest

from assay.stages.web.heuristics import _IDENTIFIER_RE, _r, identifier_share

_IDW = r"[A-Za-z0-9_]"
ORACLE_RE = re.compile(rf"""
  (?<![A-Za-z0-9_.])(?=[A-Za-z_~][A-Za-z0-9]*[_(:\-.A-Z ])(?:
    [A-Za-z_~]{_IDW}*(?:::|->)[A-Za-z_~]{_IDW}*(?:(?:::|->)[A-Za-z_~]{_IDW}*)*(?:\(\)?)?
  | [A-Za-z_~]{_IDW}*(?:\((?=[^()\n]{{0,200}}\))|\s?\(\))
  | (?!www\.)[a-z_]{_IDW}*(?:\.[A-Za-z_]{_IDW}*){{2,}}(?<!\.com)(?<!\.org)(?<!\.net)(?<!\.html)(?<!\.php)
  | [A-Za-z]{_IDW}*_{_IDW}+
  | [a-z][a-z0-9]*[A-Z]{_IDW}*
  )(?:(?<=\()|(?![A-Za-z0-9_]))
""", re.X)


def oracle_share(text: str) -> float:
    return _r(sum(map(len, ORACLE_RE.findall(text))) / max(len(text), 1))


# characters and pieces each alternative, the start and end conditions and the reversed scan turn on
_PIECES = (list("aAbBzZ09_~.:->() \n\t\r\u00a0\u2009,;*<>/|'\"=é中") + ["::", "->", "()", " ()", "\n()", "www.", ".com", ".org",
           ".net", ".html", ".php", "foo", "Bar", "getValue", "size_t", "std::", "wxWindow", "os.path.", "__init__",
           "a.b", "e.g.", "~Foo", "a~b", "A1B", "x(", "(y)", "_x", "x_", "ABc", "aBC", " ( ", "::~", "->(", "ß"])


def _random_text(rng: random.Random) -> str:
    parts = [rng.choice(_PIECES) for _ in range(rng.randint(0, 40))]
    if rng.random() < 0.2:  # a call whose closing parenthesis sits about 200 characters on (the lookahead's limit)
        parts.insert(rng.randint(0, len(parts)), "f(" + "x" * rng.randint(195, 205) + ")")
    return "".join(parts)


def test_identifier_share_matches_the_backtracking_oracle_on_random_texts():
    rng = random.Random(16)
    texts = [_random_text(rng) for _ in range(20_000)]
    assert sum(oracle_share(t) > 0 for t in texts) > 10_000  # the texts carry identifiers, not only noise
    bad = [t for t in texts if identifier_share(t) != oracle_share(t)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("text, found", [
    ("a.b.c.com", ["a.b.c"]),  # the host suffix given back: the path before it still has three parts
    ("www.example.org and org.apache.commons", ["org.apache.commons"]),
    ("f(x_y) g (h) k () ~Foo() ~foo_bar a~Bar::baz", ["f(", "x_y", "k ()", "~Foo(", "foo_bar", "Bar::baz"]),
    ("ABc AbC aB a1B __init__ __init__(self) x_", ["aB", "a1B", "__init__("]),
    ("std::vector<int>::push_back(x) p->next->prev", ["std::vector", "push_back(", "p->next->prev"]),
    ("call(" + "x" * 200 + ") call(" + "x" * 201 + ")", ["call("]),
])
def test_identifier_share_examples(text, found):
    assert ORACLE_RE.findall(text) == found
    assert identifier_share(text) == _r(sum(map(len, found)) / len(text))


def test_possessive_pattern_finds_the_oracles_matches_where_it_is_tried():
    rng = random.Random(33)
    for _ in range(5_000):
        t = _random_text(rng)
        assert [m.span() for m in _IDENTIFIER_RE.finditer(t)] == [m.span() for m in ORACLE_RE.finditer(t)], t


@pytest.mark.slow
def test_identifier_share_matches_the_oracle_on_hplt_texts(shared_data):
    csv.field_size_limit(1 << 30)
    texts = []
    for f in sorted((shared_data / "quality/hplt_inspection").glob("*.tsv.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows = list(csv.reader(fh, delimiter="\t"))
        col = rows[0].index("text_show")
        texts += [r[col] for r in rows[1:] if len(r) > col]
    assert len(texts) > 4000
    assert sum(oracle_share(t) > 0 for t in texts) > 200
    assert [identifier_share(t) for t in texts] == [oracle_share(t) for t in texts]
