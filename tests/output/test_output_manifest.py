from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.pipeline.manifest import build_manifest, load_manifest
from assay.stages.output.shards import list_shards

TIER_WEIGHTS = {"high": 2.0, "medium": 1.0, "low": 0.5}  # as in conftest.fake_run


@pytest.fixture(scope="module")
def manifest(fake_run):
    return load_manifest(fake_run)


def test_every_shard_is_listed_with_its_numbers(fake_run, manifest):
    listed = {s["path"]: s for s in manifest["shards"]}
    on_disk = list_shards(fake_run / "output")
    assert sorted(listed) == sorted(p.relative_to(fake_run).as_posix() for p in on_disk)
    for p in on_disk:
        e = listed[p.relative_to(fake_run).as_posix()]
        t = pq.read_table(p)
        assert e["rows"] == t.num_rows
        assert e["bytes"] == p.stat().st_size
        assert e["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        assert e["tokens"] == sum(t.column("token_count").to_pylist())
        assert e["chars"] == sum(len(x) for x in t.column("text").to_pylist())
        assert (e["source"], e["tier"], e["language"]) == tuple(t.column(c)[0].as_py() for c in ("source", "tier", "language"))
        assert e["token_count_method"].startswith("exact:tokenizer.json:")
        assert e["rank"] in (0, 1)


def test_totals_match_the_documents(documents, manifest):
    kept = [d for d in documents if d.metadata.get("decision__reason") is None]
    assert manifest["totals"]["documents"] == len(kept)
    assert manifest["totals"]["tokens"] == sum(s["tokens"] for s in manifest["shards"])
    assert manifest["totals"]["shards"] == len(manifest["shards"])
    assert {k: v["documents"] for k, v in manifest["by_source"].items()} == dict(Counter(d.metadata["source"] for d in kept))
    assert {k: v["documents"] for k, v in manifest["by_tier"].items()} == dict(Counter(d.metadata["tier"] for d in kept))
    langs = Counter(d.metadata.get("lang__code") or d.metadata.get("code__language") for d in kept)
    assert {k: v["documents"] for k, v in manifest["by_language"].items()} == dict(langs)
    for src, tiers in manifest["by_source_tier"].items():
        assert sum(v["tokens"] for v in tiers.values()) == manifest["by_source"][src]["tokens"]
    assert manifest["output"]["token_count_method"].startswith("exact:")
    assert [c["name"] for c in manifest["output"]["schema"]][:3] == ["id", "text", "source"]


def test_mixture_plan(manifest):
    mix = manifest["mixture"]
    for tier, w in TIER_WEIGHTS.items():
        e = mix["tiers"][tier]
        assert e["weight"] == w and e["weight_source"] == "recipe"
        assert e["tokens"] == manifest["by_tier"][tier]["tokens"]
        assert e["effective_tokens"] == round(e["tokens"] * w)
    assert mix["total_effective_tokens"] == sum(e["effective_tokens"] for e in mix["tiers"].values())
    assert abs(sum(e["share"] for e in mix["tiers"].values()) - 1.0) < 1e-9
    assert mix["tiers"]["high"]["share"] > mix["tiers"]["high"]["tokens"] / mix["total_tokens"]  # weight 2 boosts


def test_exclusions_by_reason(documents, manifest, fake_run):
    ex = manifest["excluded"]
    want = Counter(d.metadata["decision__reason"] for d in documents if d.metadata.get("decision__reason"))
    assert {r: v["documents"] for r, v in ex["by_reason"].items()} == dict(want)
    assert ex["documents"] == sum(want.values())
    files = sorted((fake_run / "excluded").glob("part-*.parquet"))
    assert ex["tokens"] == sum(sum(pq.read_table(f).column("token_count").to_pylist()) for f in files)
    assert ex["by_stage"]["reject"]["documents"] == sum(1 for d in documents if d.metadata.get("reject_reason"))
    assert list(ex["by_stage"]) == ["reject", "rules", "tier", "dedup"]  # the decision order
    assert manifest["totals"]["documents"] + ex["documents"] == len(documents)  # conservation


def test_recipe_inputs_and_determinism(fake_run, manifest, tmp_path):
    assert manifest["recipe"]["name"] == "fake" and manifest["recipe_sha256"] == "ab" * 32
    paths = [i["path"] for i in manifest["inputs"]]
    assert [p.rsplit("/", 2)[-1] for p in paths] == ["a.txt", "b.bin"]
    b = next(i for i in manifest["inputs"] if i["path"].endswith("b.bin"))
    assert b["sha256"] == hashlib.sha256(bytes(range(256))).hexdigest() and b["bytes"] == 256
    text = (fake_run / "manifest.json").read_text()
    again = build_manifest(fake_run, recipe=manifest["recipe"], recipe_hash=manifest["recipe_sha256"],
                           inputs=[Path(paths[0]).parent], tier_weights=TIER_WEIGHTS)
    assert json.loads(text) == again
    assert (fake_run / "manifest.json").read_text() == text
    missing = build_manifest(tmp_path, recipe={}, recipe_hash="", inputs=[tmp_path / "nope"], tier_weights={})
    assert missing["inputs"][0]["missing"] is True and missing["totals"]["documents"] == 0
