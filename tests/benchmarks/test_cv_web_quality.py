"""Round 8 helpers of benchmarks/cv_web_quality.py: the spread upsampling (same examples as ``balance``, copies apart)
and the HPLT halves (real English rows cut at the middle word, labels kept); later rounds' variants (10, 11)."""
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


@needs_data
def test_round10_unlabelled_rows_are_train_dev_only_and_distillation_finds_its_held_out_source(hplt_rows):
    """Round 10 ("+pd15m"): the unlabelled HPLT English rows come from the train+dev split only (a row whose group is
    in the test split is never read, labelled or not), and a distilled member's leave-one-source-out training set
    maps back to its held-out source (round 8 widened LOSO_DROP after round 6 built that map)."""
    from assay.classifiers.data import grouped_split_fn

    split_of, _ = grouped_split_fn()
    every = [e for e in cv.cached(cv.S["hplt_en_unlabelled"]) if e.label is None]
    td = [e for e in cv.cached(cv.S["hplt_en_unlab_td"]) if e.label is None]
    test = {e.group for e in every if split_of(e.group, dataset="hplt_inspection") == "test"}
    assert test and len(td) == len(every) - len(test)
    assert not {e.group for e in td} & test
    for held, drop in cv.LOSO_DROP.items():
        assert cv._HELD_OF[drop] == held
    src = cv.VARIANTS["shipped_digits+pd15m"][0]
    assert src["hplt_en_unlab_td"] == "teacher:pd15m" and "hplt_en_unlab_td" not in cv.LOSO_DROP["hplt_en"]
    assert {k: v for k, v in src.items() if k != "hplt_en_unlab_td"} == cv.VARIANTS["shipped"][0]


def test_round10_importance_weighting_repeats_the_most_target_like_third_of_each_weak_source(monkeypatch):
    """Round 10 ("+iw"): an example of a weak source is written twice when its domain score is in the top third of
    its source; human-labelled and other-language sources keep one copy."""
    from assay.classifiers.data import Example

    exs = [Example(text=f"text {i}", group=f"g{i}") for i in range(9)]
    scores = {f"warc_main\x00{e.group}\x00{e.text[:200]}": i / 8 for i, e in enumerate(exs)}
    monkeypatch.setattr(cv, "domain_scores", lambda: scores)
    monkeypatch.setattr(cv, "_IW_CUTS", {})
    reps = [cv.iw_repeat("shipped+iw", "warc_main", e) for e in exs]
    assert reps == [1] * 6 + [2] * 3
    assert cv.iw_repeat("shipped", "warc_main", exs[-1]) == 1
    assert cv.iw_repeat("shipped+iw", "hplt_other", exs[-1]) == 1


def test_round11_baseline_is_the_audited_recipe_and_the_kept_variant_is_web_yaml():
    """Round 11: "+r46" reads every split source of web.yaml at its train split (the recipe of 46dd789, whatever
    web.yaml says now); "+r46all" (kept in round 12, with the combiner cross-fitted) is web.yaml as shipped (train+dev
    of every source, the English judgments too); the English judgments of every variant are dropped when their source
    is held out (LOSO) and folded otherwise."""
    yaml_src = cv._web_yaml_sources()
    base = cv.VARIANTS["shipped+r46"][0]
    kept = cv.VARIANTS["shipped+r46all"][0]
    assert len(base) == len(kept) == len(yaml_src)
    for name, (spec, lab) in yaml_src.items():
        b = cv.S[f"y_{name}"]
        assert base[f"y_{name}"] == lab and b.get("split") == ("train" if "split" in spec else None)
        k = next(k for k in kept if k in (f"y_{name}", f"y_{name}_td"))
        assert cv.S[k] == spec and kept[k] == lab
    assert {k for k in kept if k.endswith("_td")} == {f"y_{n}_td" for n in cv.Y_PAGES + cv.Y_OTHER + tuple(cv.Y_HUMAN)}
    assert {k for k in cv.VARIANTS["shipped+r46nd"][0] if k.endswith("_td")} == {f"y_{n}_td" for n in cv.Y_PAGES + cv.Y_OTHER}
    for name, held in cv.Y_HUMAN.items():
        assert {f"y_{name}", f"y_{name}_td"} <= cv.LOSO_DROP[held] and f"y_{name}" in cv.HUMAN
        assert cv._HELD_OF[cv.LOSO_DROP[held]] == held
    assert cv.HOLDOUT["shipped_digits+r46nd"] == 0.2 and cv.ORDER_SEED["shipped_nosplit+r46o2"] == 2
