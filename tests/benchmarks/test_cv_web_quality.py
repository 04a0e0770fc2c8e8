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


@needs_data
def test_order_seed_variants_train_on_the_shipped_examples_in_another_order(hplt_rows):
    """Round 9 ("+o1"): same examples and labels as the shipped member, only the file order differs."""
    assert cv.VARIANTS["shipped_digits+o1"] == cv.VARIANTS["shipped"] and cv.ORDER_SEED["shipped_digits+o1"] == 1
    assert cv.NORMS["shipped_digits+o1"] == cv.NORMS["shipped_digits"]
    key = lambda e: (e.label, e.text)  # noqa: E731
    a, b = balance(hplt_rows, "upsample", seed=0), balance(hplt_rows, "upsample", seed=1)
    assert set(map(key, a)) == set(map(key, b)) and len(a) == len(b)
    assert [key(e) for e in a] != [key(e) for e in b]


@needs_data
def test_pretrained_vectors_learn_from_unlabelled_hplt_rows_only(hplt_rows, monkeypatch):
    """Round 9 ("+ptv5"): the skipgram corpus holds no human-labelled text; the vectors have the models' dim."""
    from assay.classifiers.text import Normalization, normalize

    monkeypatch.setattr(cv, "PTV_CORPUS", ("hplt_en_unlabelled",))
    vec = cv.pretrained_vectors("shipped_digits")
    lines = set((vec.parent / "shipped_digits.txt").read_text().splitlines())
    rows = cv.cached(cv.S["hplt_en_unlabelled"])
    norm = Normalization(lowercase=True, digits=None, max_chars=10**7)
    unlabelled = {normalize(e.text, norm) for e in rows if e.label is None}
    labelled = {normalize(e.text, norm) for e in hplt_rows}
    assert len(unlabelled) > 300 and lines == unlabelled - {""}
    assert not lines & labelled
    n, dim = map(int, vec.read_text().split("\n", 1)[0].split())
    assert dim == 32 and n > 1000
