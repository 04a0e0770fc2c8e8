"""``first_seen_codes`` (pandas' hash table for lists of strings) against its definition, on the words of real
pages and on lists the fast path must leave to the dict pass."""

from __future__ import annotations

import numpy as np
import pytest

from assay.stages.common.codes import _dict_codes, first_seen_codes


def _definition(items):
    distinct = list(dict.fromkeys(items))
    pos = {x: i for i, x in enumerate(distinct)}
    return distinct, np.array([pos[x] for x in items], dtype=np.int64)


def _same(got, want):
    assert got[0] == want[0]
    assert got[1].dtype == np.int64 and np.array_equal(got[1], want[1])


@pytest.mark.shared_data
def test_words_of_real_pages(shared_data):
    from assay.stages.web.extract import extract_html
    from assay.stages.web.heuristics import split_words

    paths = sorted((shared_data / "html/readability/readability/input").glob("*.html"))[:30]
    n = 0
    for p in paths:
        text = extract_html(p.read_text(encoding="utf-8", errors="replace"))
        for items in (split_words(text), text.split(), [w.lower() for w in split_words(text)]):
            _same(first_seen_codes(items), _definition(items))
            n += len(items) >= 64
    assert n >= 30


def test_lists_left_to_the_dict_pass():
    nan = float("nan")
    for items in ([], ["a"], ["b", "a", "b"] * 40, ["a", None, "a"] * 40, ["a", nan] * 50,
                  ["x", "ß", "SS", "ss", "x"] * 30, [b"a", b"b"] * 40, ["a", 1, "b", 1.5] * 30):
        _same(first_seen_codes(items), _dict_codes(items))
        if not any(x is None or x is nan for x in items):  # (a dict keeps 1 and 1.5 apart from the strings)
            _same(first_seen_codes(items), _definition(items))
