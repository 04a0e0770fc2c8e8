"""Fixtures for packing tests: a BPE tokenizer trained locally (no downloads) and a default-recipe
run on the embedded sample with exact token counts from that tokenizer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _pack_data import local_training_texts, run_shipped, train_bpe  # noqa: E402


@pytest.fixture(scope="session")
def bpe_tokenizer(tmp_path_factory) -> Path:
    return train_bpe(tmp_path_factory.mktemp("tok") / "tokenizer.json", local_training_texts(), vocab_size=1500)


@pytest.fixture(scope="session")
def default_run(tmp_path_factory, bpe_tokenizer) -> Path:
    return run_shipped("default", tmp_path_factory.mktemp("run") / "default", tokenizer=bpe_tokenizer)


def fake_run(root, docs, tok):
    """A run directory with shards written by ShardWriter from ``docs`` and a manifest (no recipe run)."""
    from assay.pipeline.manifest import build_manifest
    from assay.stages.output.shards import ShardWriter

    w = ShardWriter(str(root / "output"), tokenizer_path=str(tok))
    list(w.run(iter(docs)))
    (root / "logs").mkdir(parents=True, exist_ok=True)
    recipe = {"name": "fake", "plan": {"max_repeats": 4, "seed": 0}}
    build_manifest(root, recipe=recipe, recipe_hash="ab" * 32, inputs=[], tier_weights={"high": 2.0, "low": 1.0})
    return root
