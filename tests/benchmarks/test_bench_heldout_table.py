"""The held-out-language table of bench_classifiers.py: every scorer beside the anchor, the length baseline and the
rows the fallback scored (the run itself retrains models: `bench_classifiers.py --held-out-languages`)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_classifiers  # noqa: E402


def test_heldout_table_prints_ours_anchor_length_and_fallback_rows(capsys):
    ours, anchor = "quality_score (ours)", "anchor: combiner config at abc123"
    rows = {"all": (400, 27, {ours: 0.75, anchor: 0.70}, 0.58, 342, 14, {ours: 0.61, anchor: 0.59}),
            "nn": (200, 15, {ours: 0.80, anchor: 0.78}, 0.60, 142, 2, {ours: float("nan"), anchor: 0.5})}
    bench_classifiers.print_heldout({"rows": rows, "seconds": 12.0})
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.startswith("| language"))
    assert f"{ours} ROC AUC" in header and f"{anchor} ROC AUC" in header and "length baseline" in header
    assert "| all | 400 | 27 | 0.750 | 0.700 | 0.580 | 342 (14) | 0.610 | 0.590 |" in out
    assert "| nn | 200 | 15 | 0.800 | 0.780 | 0.600 | 142 (2) | nan | 0.500 |" in out


def test_quality_table_names_its_split_and_the_baseline_commit(capsys):
    """``--split dev`` prints DEV in the headings (the adult section stays on test), and the anchor line names the
    baseline commit (the combiner-anchor loop once rebound the name and printed the last combiner's commit)."""
    ours = "quality_score (ours)"
    res = {"rows": [("english_human", "all", 61, 8, {ours: 0.993})], "seconds": 3.0, "baseline_rev": "67ee056",
           "english_ci": {ours: (0.968, 1.0)}, "adult": {}, "split": "dev"}
    bench_classifiers.print_quality(res)
    out = capsys.readouterr().out
    assert "DEV split ROC AUC" in out and "english_human (dev split)" in out and "TEST split ROC AUC" not in out
    assert "shipped models at commit 67ee056" in out
    assert "| english_human | all | 61 | 8 | 0.993 |" in out
    assert "porn labels, TEST split" in out



def test_adult_table_counts_what_the_default_recipe_rule_excludes():
    """The flagged columns of the adult table apply the default recipe's adult_content rule through the decision
    layer: a share over the threshold with one distinct list word (a developer's "XXX:" marker) is not flagged,
    with two it is, and a low share is not whatever its words."""
    import numpy as np

    flags = bench_classifiers.adult_rule_flags(np.array([0.10, 0.10, 0.01, 0.0]), np.array([1, 2, 5, 0]))
    assert flags.tolist() == [False, True, False, False]
