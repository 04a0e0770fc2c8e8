"""The shards are ready for tokenization: datatrove's own tokenizer step, run on them with a
tokenizer trained locally, writes exactly the tokens the manifest promises."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from assay.pipeline.manifest import load_manifest
from assay.stages.output.shards import list_shards


def _tokenize(run_dir: Path, out: Path, tokenizer: Path, glob: str, tasks: int = 2) -> dict:
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    LocalPipelineExecutor(
        pipeline=[
            ParquetReader(str(run_dir / "output"), glob_pattern=glob, text_key="text", id_key="id"),
            DocumentTokenizer(str(out / "tokens"), tokenizer_name_or_path=str(tokenizer), shuffle_documents=False, batch_size=64),
        ],
        tasks=tasks, workers=1, logging_dir=str(out / "logs"),
    ).run()
    stats = json.loads((out / "logs" / "stats.json").read_text())
    return {s["name"]: s["stats"] for s in stats}


def _total(v):
    return v["total"] if isinstance(v, dict) else v


@pytest.mark.slow
def test_datatrove_tokenizer_matches_manifest(fake_run, bpe_tokenizer, tmp_path):
    from tokenizers import Tokenizer

    manifest = load_manifest(fake_run)
    assert manifest["output"]["token_count_method"].startswith("exact:")
    stats = _tokenize(fake_run, tmp_path, bpe_tokenizer, "**/shard-*.parquet")
    reader = next(v for k, v in stats.items() if "READER" in k)
    tok = next(v for k, v in stats.items() if "TOKENIZER" in k)
    assert _total(reader["documents"]) == manifest["totals"]["documents"]
    assert _total(tok["tokens"]) == manifest["totals"]["tokens"]

    # the binary token files hold exactly that many uint16 tokens, one boundary per document
    ds_files = sorted((tmp_path / "tokens").glob("*.ds"))
    assert ds_files
    n_tokens = sum(f.stat().st_size for f in ds_files) // 2
    assert n_tokens == manifest["totals"]["tokens"]
    n_docs = sum((f.with_name(f.name + ".index")).stat().st_size // 8 for f in ds_files)
    assert n_docs == manifest["totals"]["documents"]
    meta_total = sum(int(f.with_name(f.name + ".metadata").read_text().splitlines()[1]) for f in ds_files)
    assert meta_total == manifest["totals"]["tokens"]

    # and they decode back to the shard texts
    tk = Tokenizer.from_file(str(bpe_tokenizer))
    decoded = Counter()
    for f in ds_files:
        ids = np.fromfile(f, dtype=np.uint16)
        ends = np.fromfile(f.with_name(f.name + ".index"), dtype=np.uint64)
        start = 0
        for end in ends:
            decoded[tk.decode(ids[start:end].tolist())] += 1
            start = int(end)
    texts = Counter(t for p in list_shards(fake_run / "output") for t in pq.read_table(p, columns=["text"]).column("text").to_pylist())
    assert decoded == texts


@pytest.mark.slow
def test_per_tier_tokens_match_manifest(fake_run, bpe_tokenizer, tmp_path):
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.tokens.counter import TokensCounter

    manifest = load_manifest(fake_run)
    for tier in ("high", "low"):
        logs = tmp_path / tier
        LocalPipelineExecutor(
            pipeline=[
                ParquetReader(str(fake_run / "output"), glob_pattern=f"*/tier={tier}/*/shard-*.parquet", text_key="text", id_key="id"),
                TokensCounter(str(bpe_tokenizer), batch_size=128),
            ],
            tasks=1, workers=1, logging_dir=str(logs),
        ).run()
        stats = {s["name"]: s["stats"] for s in json.loads((logs / "stats.json").read_text())}
        counted = _total(next(v for k, v in stats.items() if "TOKENIZER" in k)["tokens"])
        assert counted == manifest["by_tier"][tier]["tokens"] == manifest["mixture"]["tiers"][tier]["tokens"]
