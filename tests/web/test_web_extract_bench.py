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


class _FakeClock:
    """A timer that only the fake extractors move: each call costs what the test says."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_paired_page_medians_alternates_order_and_takes_medians():
    from bench_web import paired_page_medians

    clock = _FakeClock()
    calls = []
    # cost per (extractor, page, call number of that extractor on that page): a burst of load on one repeat
    cost = {"a": {"p0": [1.0, 1.0, 9.0], "p1": [2.0, 3.0, 2.5]}, "t": {"p0": [5.0, 6.0, 4.0], "p1": [10.0, 10.0, 50.0]}}
    seen = {}

    def make(name):
        def fn(page):
            k = seen.get((name, page), 0)
            seen[(name, page)] = k + 1
            calls.append((name, page))
            clock.now += cost[name][page][k]
        return fn

    befores = []

    def before(k):
        befores.append(k)
        clock.now += 1000.0  # untimed work (e.g. emptying trafilatura's cache) is not charged

    med = paired_page_medians([make("a"), make("t")], ["p0", "p1"], 3, timer=clock, before=before)
    assert med == [[1.0, 5.0], [2.5, 10.0]]
    # who goes first alternates between repeats, and between pages in the same repeat
    firsts = [calls[i][0] for i in range(0, len(calls), 2)]
    assert firsts == ["a", "t", "a", "t", "a", "t"]
    assert [c[1] for c in calls] == ["p0"] * 6 + ["p1"] * 6  # back to back, page by page
    assert befores == [0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0]


def test_summed_median_ratios_per_group_and_all():
    from bench_web import summed_median_ratios

    med = [[1.0, 5.0], [2.0, 6.0], [1.0, 10.0], [4.0, 4.0]]
    r = summed_median_ratios(med, ["x", "x", "y", "y"])
    assert list(r) == ["x", "y", "ALL"]
    assert r["x"] == (2, 3.0, 11.0, 11.0 / 3.0)
    assert r["y"] == (2, 5.0, 14.0, 14.0 / 5.0)
    assert r["ALL"] == (4, 8.0, 25.0, 25.0 / 8.0)
    # a ratio of sums, not a mean of per-page ratios (which would be (5 + 3 + 10 + 1) / 4 = 4.75)
    assert abs(r["ALL"][3] - 3.125) < 1e-12
    # anchor and subject can be chosen (the anchor in column 0)
    assert summed_median_ratios(med, ["x"] * 4, anchor=0, subject=1)["x"][3] == 8.0 / 25.0
