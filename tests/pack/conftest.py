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
