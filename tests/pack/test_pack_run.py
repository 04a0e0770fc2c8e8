"""`assay plan` and `assay pack` on a real default-recipe run (embedded sample, exact token counts):
the packed files read back with datatrove's own readers, hold exactly the manifest's tokens
times the plan's copies, decode to the shard texts, and a rerun resumes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from assay.pipeline.cli import app
from assay.pipeline.manifest import file_sha256, load_manifest
from assay.pipeline.pack import check_pack, run_pack
from assay.pipeline.plan import build_plan
from assay.stages.output.pack import read_packed
from assay.stages.output.shards import list_shards


def _segments(out: Path):
    """Every document piece (segment between two ``.index`` ends, padding left out), in file order."""
    for f in read_packed(out):
        start = 0
        for end in f["segment_ends"].tolist():
            if f["loss_mask"][start:end].any():
                yield f["tokens"][start:end]
            start = end


@pytest.mark.slow
def test_pack_without_plan_equals_manifest(default_run, bpe_tokenizer, tmp_path):
    manifest = load_manifest(default_run)
    assert manifest["output"]["token_count_method"].startswith("exact:")
    out = tmp_path / "packed"
    res = run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=1023, use_plan=False, tasks=2, workers=1)
    assert res["ok"], res["problems"]
    assert res["manifest_counts_comparable"]
    t = res["totals"]
    assert t["unique_tokens"] == manifest["totals"]["tokens"] == t["content_tokens"]
    assert t["documents"] == manifest["totals"]["documents"]
    assert res["readback"]["tokens"] == t["sequences"] * 1024
    assert res["readback"]["content_plus_eos_tokens"] == manifest["totals"]["tokens"] + manifest["totals"]["documents"]
    assert t["token_count_mismatches"] == 0
    # the packed tokens are exactly the shard texts' tokens plus one EOS each, and every document
    # that fits in a sequence comes back whole (one segment ending in EOS) and decodes to its text
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(str(bpe_tokenizer))
    eos = tk.token_to_id("<|endoftext|>")
    shard_texts = [x for p in list_shards(default_run / "output") for x in pq.read_table(p, columns=["text"]).column("text").to_pylist()]
    want = Counter(t for x in shard_texts for t in tk.encode(x).ids + [eos])
    segs = list(_segments(out))
    assert Counter(t for s in segs for t in s.tolist()) == want
    ending = Counter(tk.decode(s[:-1].tolist()) for s in segs if s[-1] == eos)
    fits = Counter(x for x in shard_texts if len(tk.encode(x).ids) + 1 <= 1024)
    assert fits and ending >= fits
    # best fit: only documents longer than a sequence are split
    long_docs = sum(n + 1 > 1024 for p in list_shards(default_run / "output") for n in pq.read_table(p, columns=["token_count"]).column("token_count").to_pylist())
    assert t["truncated_documents"] == long_docs


@pytest.mark.slow
def test_plan_epochs_applied_and_resume(default_run, bpe_tokenizer, tmp_path):
    manifest = load_manifest(default_run)
    unique = manifest["totals"]["tokens"]
    plan = build_plan(default_run, tokens=int(unique * 2.5), max_repeats=4)
    assert plan["planned_tokens"] == pytest.approx(unique * 2.5, rel=0.01)
    # tiers with larger weights repeat more
    by_tier = {s["tier"]: s["epochs"] for s in plan["slices"]}
    if "medium_high" in by_tier and "low" in by_tier:
        assert by_tier["medium_high"] > by_tier["low"]
    out = tmp_path / "packed"
    res = run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=511, use_plan=True, tasks=2, workers=1)
    assert res["ok"], res["problems"]
    assert res["params"]["plan"]
    assert res["totals"]["content_tokens"] == res["expected"]["tokens"]
    assert res["totals"]["documents"] == res["expected"]["copies"] > manifest["totals"]["documents"]
    assert res["totals"]["content_tokens"] == pytest.approx(unique * 2.5, rel=0.35)  # few documents: coarse
    files = {p.name: file_sha256(p) for p in out.glob("packed_*")}
    # rerun: completion markers skip both tasks, nothing changes
    res2 = run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=511, use_plan=True, tasks=2, workers=1)
    assert {p.name: file_sha256(p) for p in out.glob("packed_*")} == files and res2["ok"]
    # a lost task is redone and writes the same bytes
    (out / "logs" / "pack" / "completions" / "00001").unlink()
    for p in out.glob("packed_00001*"):
        p.unlink()
    run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=511, use_plan=True, tasks=2, workers=1)
    assert {p.name: file_sha256(p) for p in out.glob("packed_*")} == files
    # other parameters: the folder starts over instead of mixing
    res3 = run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=127, use_plan=True, tasks=2, workers=1)
    assert res3["ok"] and res3["readback"]["tokens"] % 128 == 0
    # a corrupted file is caught by the check
    victim = sorted(out.glob("packed_*.ds"))[0]
    victim.write_bytes(victim.read_bytes()[:-2])
    assert not check_pack(out, default_run)["ok"]


@pytest.mark.slow
def test_concat_baseline_and_cli(default_run, bpe_tokenizer, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["plan", str(default_run), "--tokens", "1M"])
    assert r.exit_code == 0, r.output
    assert "warning" in r.output and "capped" in r.output  # the sample is far too small for 1M tokens
    plan = json.loads((default_run / "plan.json").read_text())
    assert all(s["epochs"] == 4 for s in plan["slices"]) and plan["warnings"]
    assert "Repetition plan" in (default_run / "report.html").read_text()
    out = tmp_path / "concat"
    r = runner.invoke(app, ["pack", str(default_run), "--tokenizer", str(bpe_tokenizer), "--seq-len", "200",
                            "--output", str(out), "--algorithm", "concat", "--tasks", "1", "--workers", "1"])
    assert r.exit_code == 0, r.output
    res = json.loads((out / "pack.json").read_text())
    assert res["ok"] and res["params"]["algorithm"] == "concat"
    assert res["totals"]["pad_tokens"] < 201  # only the last sequence is padded
    assert res["totals"]["content_tokens"] == res["expected"]["tokens"] == 4 * load_manifest(default_run)["totals"]["tokens"]
    r = runner.invoke(app, ["pack", str(default_run), "--tokenizer", str(tmp_path / "missing.json"), "--output", str(out)])
    assert r.exit_code == 2 and "not found" in r.output
    r = runner.invoke(app, ["pack", str(default_run), "--tokenizer", str(bpe_tokenizer), "--output", str(out), "--repo-documents"])
    assert r.exit_code == 2 and "repository documents" in r.output


def test_datatrove_dataset_reader_when_torch_is_installed(default_run, bpe_tokenizer, tmp_path):
    torch = pytest.importorskip("torch", reason="nanotron's DatatroveFolderDataset needs torch (not a dependency)")
    from datatrove.utils.dataset import DatatroveFolderDataset

    out = tmp_path / "packed"
    res = run_pack(default_run, out, tokenizer=str(bpe_tokenizer), seq_len=255, use_plan=False, tasks=1, workers=1)
    ds = DatatroveFolderDataset(str(out), seq_len=255, filename_pattern="packed_*.ds", token_size=2, return_positions=True)
    assert len(ds) == res["totals"]["sequences"]
    f = next(read_packed(out))
    assert torch.equal(ds[0]["input_ids"], torch.as_tensor(f["tokens"][:256].astype(np.int64)))
    assert int(ds[0]["positions"][0]) == 0
