import numpy as np
import pytest

from assay.classifiers.calibrate import (bucket_of_percentile, build_table, ensemble_bucket, percentile,
                                   sampling_weight, tier_of_bucket)


def test_token_weighted_percentile_known_case():
    # doc A: score 0.2, 3 tokens; doc B: score 0.8, 1 token
    t = build_table([0.2, 0.8], [3, 1])
    assert percentile(t, [0.2])[0] == pytest.approx(1.5 / 4)  # mid-point of A's mass
    assert percentile(t, [0.8])[0] == pytest.approx(3.5 / 4)
    assert percentile(t, [0.0])[0] == 0.0 and percentile(t, [1.0])[0] == 1.0
    # equal weights would give a different answer: the weighting matters
    assert percentile(build_table([0.2, 0.8]), [0.2])[0] == pytest.approx(0.25)


def test_percentile_monotone_bounded_and_nan_passthrough():
    rng = np.random.default_rng(1)
    ref = rng.beta(2, 5, 5000)
    tokens = rng.integers(10, 2000, 5000)
    t = build_table(ref, tokens)
    assert len(t["scores"]) <= 1003
    grid = np.linspace(-0.1, 1.1, 2001)
    p = percentile(t, grid)
    assert np.all(np.diff(p) >= 0)
    assert p.min() >= 0.0 and p.max() <= 1.0
    out = percentile(t, [np.nan, 0.5])
    assert np.isnan(out[0]) and 0 < out[1] < 1
    # the median of the token mass maps to ~0.5
    order = np.argsort(ref)
    cum = np.cumsum(tokens[order]) / tokens.sum()
    med = ref[order][np.searchsorted(cum, 0.5)]
    assert percentile(t, [med])[0] == pytest.approx(0.5, abs=0.01)


def test_build_table_rejects_empty():
    with pytest.raises(ValueError):
        build_table([np.nan], [1])


def test_bucket_and_ensemble():
    assert list(bucket_of_percentile([0.0, 0.049, 0.05, 0.999, 1.0, np.nan])) == [0, 0, 1, 19, 19, -1]
    pcts = {"web": np.array([0.10, 0.90, np.nan, np.nan]), "stem": np.array([0.60, 0.20, 0.55, np.nan])}
    # Nemotron-CC: max of per-model buckets
    assert list(ensemble_bucket(pcts)) == [12, 18, 11, -1]
    # weight 0 drops a model
    assert list(ensemble_bucket(pcts, {"web": 1.0, "stem": 0.0})) == [2, 18, -1, -1]
    # weighted mean of percentiles
    got = ensemble_bucket(pcts, {"web": 3.0, "stem": 1.0}, method="mean")
    assert list(got) == [int((0.3 + 0.6) / 4 * 20), int((2.7 + 0.2) / 4 * 20), 11, -1]
    assert got.dtype.kind == "i"
    with pytest.raises(ValueError):
        ensemble_bucket(pcts, {"web": 0.0, "stem": 0.0})
    with pytest.raises(ValueError):
        ensemble_bucket(pcts, method="median")


def test_tiers_and_weights():
    tiers = {"high": [16, 19], "medium": [8, 15], "low": [0, 7]}
    assert tier_of_bucket(17, tiers) == "high"
    assert tier_of_bucket(-1, tiers) is None
    arr = tier_of_bucket(np.array([0, 7, 8, 15, 16, 19, -1]), tiers)
    assert list(arr) == ["low", "low", "medium", "medium", "high", "high", None]
    with pytest.raises(ValueError):
        tier_of_bucket(3, {"a": [0, 10], "b": [10, 19]})
    w = sampling_weight(arr, {"high": 2.0, "medium": 1.0, "low": 0.0})
    assert list(w) == [0, 0, 1, 1, 2, 2, 0]
    assert sampling_weight("high", {"high": 2.0}) == 2.0
