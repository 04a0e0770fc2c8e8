import numpy as np
import pytest

from assay.classifiers.calibrate import build_table, percentile


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


def test_buckets_and_tiers_live_in_decisions_only():
    """Buckets and tiers are decisions (one implementation in assay.stages.decisions.tiers)."""
    import assay.classifiers.calibrate as cal

    for gone in ("ensemble_bucket", "tier_of_bucket", "sampling_weight", "bucket_of_percentile", "DEFAULT_TIERS"):
        assert not hasattr(cal, gone)

