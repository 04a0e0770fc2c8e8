"""The repetition plan: budget solving with a cap, warnings, fuzzy-duplicate clusters across repeats."""

from __future__ import annotations

import json

import pytest
from datatrove.data import Document

from assay.pipeline.pack import run_pack
from assay.pipeline.plan import build_plan, cluster_caps, parse_tokens, solve_epochs
from assay.stages.output.pack import repeats_for

from .conftest import fake_run as _fake_run


def test_parse_tokens():
    assert parse_tokens("1T") == 10**12 and parse_tokens("500B") == 5 * 10**11 and parse_tokens("2.5k") == 2500
    assert parse_tokens(1234) == 1234 and parse_tokens(None) is None and parse_tokens("1e6") == 10**6
    with pytest.raises(ValueError):
        parse_tokens("lots")


def test_solve_epochs_water_filling():
    tokens, weights = [100, 100, 1000], [2.0, 1.0, 0.5]
    e, k = solve_epochs(tokens, weights, budget=1000, max_repeats=4)
    assert sum(t * x for t, x in zip(tokens, e)) == pytest.approx(1000)
    assert e[0] / e[1] == pytest.approx(2.0) and e[1] / e[2] == pytest.approx(2.0)
    e, k = solve_epochs(tokens, weights, budget=2500, max_repeats=4)  # the small slices hit the cap
    assert e[0] == 4 and e[1] == pytest.approx(3.5) and sum(t * x for t, x in zip(tokens, e)) == pytest.approx(2500)
    e, _ = solve_epochs(tokens, weights, budget=10**9, max_repeats=4)  # unreachable: everything capped
    assert e == [4, 4, 4]
    e, k = solve_epochs(tokens, [0.0, 1.0, 1.0], budget=1100, max_repeats=4)
    assert e[0] == 0 and e[1] == pytest.approx(1.0)
    e, k = solve_epochs(tokens, weights, budget=None, max_repeats=1.5)
    assert e == [1.5, 1.0, 0.5] and k is None


def test_cluster_caps_spread_exposures():
    epochs = {"web/high/en": 4.0, "web/low/en": 2.0}
    clusters = {"c1": [("a", "web/high/en", 10), ("b", "web/low/en", 10), ("c", "web/low/en", 10)]}
    out = cluster_caps(clusters, epochs, seed=0)
    assert out["clusters_capped"] == 1 and out["copies_before"] == 8 and out["copies_after"] == 4
    assert sum(out["repeats"].values()) == 4 and out["repeats"]["a"] >= out["repeats"]["b"]
    assert cluster_caps({"c2": [("x", "web/low/en", 5), ("y", "web/low/en", 5)]}, {"web/low/en": 1.0}, 0)["clusters_capped"] == 1


def test_near_duplicates_are_not_repeated_with_their_slice(tmp_path, bpe_tokenizer):
    text = "The committee reviewed the annual report on regional water supply. " * 8
    docs = []
    for i in range(12):
        md = {"source": "web", "lang__code": "en", "tier": "high" if i % 2 else "low", "dedup__cluster_id": 1000 + i}
        docs.append(Document(text=f"{text} Document {i} has its own ending number {i * 7}.", id=f"d{i}", metadata=md))
    # two near-duplicates both kept (say, dedup disagreed): one in each tier
    docs[0].metadata["dedup__cluster_id"] = docs[1].metadata["dedup__cluster_id"] = 77
    run = _fake_run(tmp_path / "run", docs, bpe_tokenizer)
    plan = build_plan(run, tokens=None)  # epochs = tier weight: high 2, low 1
    assert {s["tier"]: s["epochs"] for s in plan["slices"]} == {"high": 2.0, "low": 1.0}
    c = plan["clusters"]
    assert c["clusters_with_several_kept_members"] == 1 and c["clusters_capped"] == 1
    # the content is seen twice in all (its most-repeated slice's epochs), once per variant
    assert c["copies_before"] == 3 and c["copies_after"] == 2 and c["repeats"] == {"d1": 1, "d0": 1}
    assert any("cluster" in w for w in plan["warnings"])
    res = run_pack(run, tmp_path / "packed", tokenizer=str(bpe_tokenizer), seq_len=255, tasks=1, workers=1)
    assert res["ok"], res["problems"]
    # 6 high docs x 2 + 6 low docs x 1, less the cluster's third copy
    assert res["totals"]["documents"] == res["expected"]["copies"] == 6 * 2 + 6 - 1
    assert json.loads((run / "plan.json").read_text())["clusters"]["repeats"]["d1"] == 1
    assert repeats_for("d1", 2.0) == 2  # without the cluster cap it would have been packed twice
