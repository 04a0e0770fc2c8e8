"""Round 8 helpers of benchmarks/cv_web_quality.py: the spread upsampling (same examples as ``balance``, copies apart)
and the HPLT halves (real English rows cut at the middle word, labels kept)."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import cv_web_quality as cv  # noqa: E402

from assay.classifiers.data import balance, default_data_root  # noqa: E402

HPLT_EN = default_data_root() / "quality" / "hplt_inspection" / "eng_Latn__batch0.tsv.gz"
needs_data = pytest.mark.skipif(not HPLT_EN.exists(), reason=f"shared data absent ({HPLT_EN}); set ASSAY_SHARED_DATA")


@pytest.fixture
def hplt_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(cv, "CACHE", tmp_path)
    return [e for e in cv.cached(cv.S["hplt_en"]) if e.label in (0, 1)]


@needs_data
def test_hplt_halves_are_the_rows_cut_in_two_with_their_labels(hplt_rows):
    halves = cv.hplt_halves()
    long_rows = [e for e in hplt_rows if len(e.text.split()) >= 40]
    assert long_rows and len(halves) == 2 * len(long_rows)
    for row, a, b in zip(long_rows, halves[::2], halves[1::2]):
        assert a.label == b.label == row.label and a.group == b.group == row.group
        assert (a.text + " " + b.text).split() == row.text.split()
        assert abs(len(a.text.split()) - len(b.text.split())) <= 1


@needs_data
def test_balance_spread_keeps_balance_examples_and_separates_copies(hplt_rows):
    exs = hplt_rows  # real rows, about 1 bad in 7: the bad ones are upsampled
    key = lambda e: (e.label, e.text)  # noqa: E731
    shipped, spread = balance(exs, "upsample", seed=0), cv.balance_spread(exs)
    assert Counter(map(key, spread)) == Counter(map(key, shipped))
    adjacent = lambda out: sum(key(x) == key(y) for x, y in zip(out, out[1:]))  # noqa: E731
    copies = sum(c - 1 for c in Counter(map(key, shipped)).values())  # copies beyond an example's first
    assert copies > 50
    assert adjacent(shipped) == copies  # the shipped shuffle key puts every copy next to the previous one
    assert adjacent(spread) < copies // 10
