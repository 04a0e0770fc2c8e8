"""benchmarks/bench_web.py helpers that turn per-page scores into reported figures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_site_bootstrap_interval_resamples_whole_sites():
    from bench_web import site_bootstrap_ci

    # every page the same difference: the interval is that value
    lo, hi = site_bootstrap_ci(["a", "b", "c"], [0.01, 0.01, 0.01])
    assert abs(lo - 0.01) < 1e-12 and abs(hi - 0.01) < 1e-12
    # 20 sites at 0 and one site with 20 pages at -0.2: with pages resampled alone the interval would be
    # narrow; resampling whole sites, the one site is in or out of a draw with all its pages
    groups = [f"s{i}" for i in range(20)] + ["big"] * 20
    diffs = [0.0] * 20 + [-0.2] * 20
    lo, hi = site_bootstrap_ci(groups, diffs, draws=2000)
    mean = sum(diffs) / len(diffs)
    assert lo < mean < hi
    assert hi - lo > 0.15  # pages resampled one by one give about 0.06
    assert hi == 0.0  # some draws leave the big site out entirely
    # fixed seed: the same interval every run
    assert site_bootstrap_ci(groups, diffs, draws=2000) == (lo, hi)


def test_false_positive_lines_are_the_lines_the_gold_lacks():
    from bench_web import false_positive_lines

    gold = "Title of the story\n\nFirst paragraph of the story,\nwrapped by the gold file.\n  • a bullet item"
    out = "Title of the story\nFirst paragraph of the story, wrapped by the gold file.\n• a bullet item\nRead more: elsewhere\n\n"
    assert false_positive_lines(out, gold) == ["Read more: elsewhere"]
    assert false_positive_lines("", gold) == []
