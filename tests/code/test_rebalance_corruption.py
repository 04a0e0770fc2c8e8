from __future__ import annotations

import json

import pytest

from assay.stages.code.corruption_data import CORRUPTIONS, build_corruption_dataset, corrupt
from assay.stages.code.rebalance import mixture_report, plan_rebalance, rebalance_keep, target_mixture


def test_plan_caps_and_weights():
    p = plan_rebalance({"python": 1000, "c": 100, "js": 400, "go": 0}, {"python": 250, "*": 10_000}, {"js": 0.5, "c": 3.0})
    assert p == {"python": 0.25, "c": 1.0, "js": 0.5, "go": 1.0}
    with pytest.raises(ValueError):
        plan_rebalance({"a": 1}, {}, {"a": -1})


def test_keep_is_deterministic_and_calibrated():
    ids = [f"repo/file_{i}.py" for i in range(20000)]
    a = [rebalance_keep(i, 0.3, seed=7) for i in ids]
    assert a == [rebalance_keep(i, 0.3, seed=7) for i in ids]
    assert a != [rebalance_keep(i, 0.3, seed=8) for i in ids]
    assert abs(sum(a) / len(a) - 0.3) < 0.02
    assert rebalance_keep("x", 1.0) and not rebalance_keep("x", 0.0)


def test_mixture_report_matches_target():
    recs = [(f"id{i}", "python" if i % 10 else "rust", 100) for i in range(10000)]
    totals = {"python": 900_000, "rust": 100_000}
    probs = plan_rebalance(totals, {"python": 300_000})
    target = target_mixture(totals, probs)
    assert abs(target["python"] - 0.75) < 1e-9
    rows = {r["key"]: r for r in mixture_report(recs, probs, seed=3)}
    assert abs(rows["python"]["achieved_share"] - rows["python"]["target_share"]) < 0.02
    assert rows["rust"]["kept"] == 100_000


def test_corruptions_change_text_deterministically():
    src = "def f(x):\n    if x > 1:\n        return x * f(x - 1)\n    return 1\n\n\nprint(f(5))\n" * 3
    for kind in CORRUPTIONS:
        out = corrupt(src, kind, seed=1)
        assert out != src and out == corrupt(src, kind, seed=1), kind


@pytest.mark.shared_data
def test_build_dataset(tmp_path, shared_data):
    out = tmp_path / "corr.jsonl"
    counts = build_corruption_dataset(out, clean_dir=shared_data / "code/clean_multilang", max_files=120, seed=3)
    rows = [json.loads(l) for l in out.open()]
    assert len(rows) == counts["clean"] + counts["corrupt"] and counts["clean"] == 120 and counts["corrupt"] >= 110
    assert {r["label"] for r in rows} == {"clean", "corrupt"}
    # a file's clean and corrupt versions share a split
    splits = {}
    for r in rows:
        splits.setdefault(r["source"], set()).add(r["split"])
    assert all(len(s) == 1 for s in splits.values())
