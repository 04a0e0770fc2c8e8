import itertools

import numpy as np
import pytest

from assay.classifiers import metrics as M


def brute_auc(y, s):
    pos = [b for a, b in zip(y, s) if a == 1]
    neg = [b for a, b in zip(y, s) if a == 0]
    tot = 0.0
    for p, n in itertools.product(pos, neg):
        tot += 1.0 if p > n else 0.5 if p == n else 0.0
    return tot / (len(pos) * len(neg))


def test_roc_auc_known_cases():
    assert M.roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert M.roc_auc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0
    assert M.roc_auc([0, 1], [0.5, 0.5]) == 0.5
    # one mis-ordered pair out of 4
    assert M.roc_auc([0, 0, 1, 1], [0.1, 0.6, 0.5, 0.9]) == pytest.approx(0.75)
    assert np.isnan(M.roc_auc([1, 1], [0.1, 0.2]))


def test_roc_auc_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.random(300) + 0.3 * y, 1)  # many ties
    assert M.roc_auc(y, s) == pytest.approx(brute_auc(y, s), abs=1e-12)


def test_pr_auc_known_case():
    # ranking: 1 (p=1/1), 0, 1 (p=2/3) -> AP = 0.5*1 + 0.5*2/3
    assert M.pr_auc([1, 0, 1], [0.9, 0.8, 0.7]) == pytest.approx(0.5 + 1 / 3)
    assert M.pr_auc([0, 1], [0.1, 0.9]) == 1.0
    # ties: all three at one score -> precision 2/3 at recall 1
    assert M.pr_auc([1, 0, 1], [0.5, 0.5, 0.5]) == pytest.approx(2 / 3)


def test_f1_and_confusion():
    c = M.confusion_at([1, 1, 0, 0, 1], [0.9, 0.4, 0.6, 0.1, 0.7], 0.5)
    assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (2, 1, 1, 1)
    assert c["precision"] == pytest.approx(2 / 3)
    assert c["recall"] == pytest.approx(2 / 3)
    assert c["f1"] == pytest.approx(2 / 3)
    t, f1 = M.best_f1_threshold([1, 1, 0, 0, 1], [0.9, 0.4, 0.6, 0.1, 0.7])
    assert f1 == pytest.approx(M.f1_at([1, 1, 0, 0, 1], [0.9, 0.4, 0.6, 0.1, 0.7], t))
    assert f1 >= c["f1"]


def test_ece_and_reliability():
    # perfectly calibrated bins: scores 0.25 with 1/4 positives, 0.75 with 3/4 positives
    y = [1, 0, 0, 0, 1, 1, 1, 0]
    s = [0.25] * 4 + [0.75] * 4
    assert M.ece(y, s) == pytest.approx(0.0)
    # always-confident wrong model
    assert M.ece([0, 0, 1, 1], [0.95, 0.95, 0.05, 0.05]) == pytest.approx(0.95)
    rel = M.reliability(y, s, n_bins=4)
    assert [b["n"] for b in rel] == [0, 4, 0, 4]


def test_input_validation():
    with pytest.raises(ValueError):
        M.roc_auc([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError):
        M.roc_auc([0, 1], [0.1])
