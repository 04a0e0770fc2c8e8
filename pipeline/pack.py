"""`assay pack RUN --tokenizer tok.json --seq-len 8192 --output DIR`: tokenize, repeat and pack a run.

Phases (each a datatrove executor with completion markers under ``<output>/logs/<phase>``, so a
rerun skips finished tasks):
  pack        ``PackShards`` over the run's shards, ``tasks`` tasks (shards split by rank)
  pack_check  one task: read the files back with datatrove's readers, check sequence sizes and
              boundaries, and the token round trip against the shards' token counts and the
              manifest; writes ``<output>/pack.json`` and fails the phase when a check fails.
The plan (``<run>/plan.json``, from ``assay plan``) gives per-slice epochs; without one every
document is packed once. Format and boundary convention: docs/packing.md.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from datatrove.pipeline.base import PipelineStep

from assay.pipeline.manifest import load_manifest, write_json_atomically
from assay.stages.output.pack import STATS_DIR, PackShards, read_packed, repeats_for, slice_epochs

PACK_FILE = "pack.json"
PARAMS_FILE = "pack.params.json"


class PackCheckFailed(RuntimeError):
    """The packed output does not read back as written."""


def expected_tokens(shards: list[Path], plan: dict | None, exclude_sources: list[str]) -> dict[str, int]:
    """Document tokens the packed files must hold: sum of each shard row's ``token_count`` times its
    copies under the plan (independent of the packer: read from the shards' own column)."""
    import pyarrow.parquet as pq

    epochs = {(s["source"], s["tier"], s["language"]): float(s["epochs"]) for s in (plan or {}).get("slices", [])}
    overrides = (plan or {}).get("clusters", {}).get("repeats", {})
    seed = int((plan or {}).get("seed", 0))
    out = {"documents": 0, "copies": 0, "unique_tokens": 0, "tokens": 0}
    for p in shards:
        t = pq.read_table(p, columns=["id", "source", "tier", "language", "token_count"]).to_pydict()
        for i, doc_id in enumerate(t["id"]):
            if t["source"][i] in exclude_sources:
                continue
            if doc_id in overrides:
                r = int(overrides[doc_id])
            elif epochs:
                r = repeats_for(doc_id, slice_epochs(epochs, (t["source"][i], t["tier"][i], t["language"][i])), seed)
            else:
                r = 1
            out["documents"] += 1
            out["copies"] += r
            out["unique_tokens"] += t["token_count"][i]
            out["tokens"] += r * t["token_count"][i]
    return out


def check_pack(output: Path, run_dir: Path, *, name: str = "packed") -> dict[str, Any]:
    """Merge per-task stats, read every file back, and compare token totals; writes ``pack.json``."""
    output, run_dir = Path(output), Path(run_dir)
    params = json.loads((output / PARAMS_FILE).read_text())
    ranks = [json.loads(p.read_text()) for p in sorted((output / STATS_DIR).glob("pack-*.json"))]
    keys = ("unique_documents", "unique_tokens", "documents", "truncated_documents", "sequences", "content_tokens",
            "eos_tokens", "pad_tokens", "token_count_mismatches", "empty_copies")
    tot = {k: sum(r[k] for r in ranks) for k in keys}
    total_tokens = tot["content_tokens"] + tot["eos_tokens"] + tot["pad_tokens"]
    tot.update(total_tokens=total_tokens,
               truncated_share=tot["truncated_documents"] / tot["documents"] if tot["documents"] else 0.0,
               padding_share=tot["pad_tokens"] / total_tokens if total_tokens else 0.0)
    slices: dict[str, dict[str, int]] = {}
    for r in ranks:
        for k, v in r["slices"].items():
            a = slices.setdefault(k, {kk: 0 for kk in v})
            for kk, vv in v.items():
                a[kk] += vv
    capacity = int(params["seq_len"]) + 1
    problems: list[str] = []
    rb = {"files": 0, "sequences": 0, "tokens": 0, "pad_tokens": 0, "segments": 0}
    for f in read_packed(output, name=name, tokens=False):
        n, ends, loss = f["n_tokens"], f["segment_ends"], f["loss_mask"]
        size = f["file"].stat().st_size // f["token_size"]
        rb["files"] += 1
        rb["tokens"] += n
        rb["segments"] += len(ends)
        if n != size:
            problems.append(f"{f['file'].name}: the reader returned {n} tokens, the file holds {size}")
        if n % capacity:
            problems.append(f"{f['file'].name}: {n} tokens is not a whole number of {capacity}-token sequences")
        rb["sequences"] += n // capacity
        if f["metadata_tokens"] != n:
            problems.append(f"{f['file'].name}: .metadata says {f['metadata_tokens']} tokens, file holds {n}")
        if len(ends) and int(ends[-1]) != n:
            problems.append(f"{f['file'].name}: last segment end {int(ends[-1])} != {n} tokens")
        if len(ends) and np.any(np.diff(ends) <= 0):
            problems.append(f"{f['file'].name}: segment ends are not increasing")
        # every sequence boundary is a segment boundary (documents never run into the next sequence unmarked)
        seq_ends = np.arange(capacity, n + 1, capacity)
        if len(seq_ends) and not np.isin(seq_ends, ends).all():
            problems.append(f"{f['file'].name}: a sequence boundary is not a segment boundary")
        if loss is not None:
            if len(loss) != n:
                problems.append(f"{f['file'].name}: loss mask has {len(loss)} entries for {n} tokens")
            else:
                rb["pad_tokens"] += int((~loss).sum())
    rb["content_plus_eos_tokens"] = rb["tokens"] - rb["pad_tokens"]

    manifest = load_manifest(run_dir) or {}
    plan = json.loads((run_dir / "plan.json").read_text()) if params.get("plan") and (run_dir / "plan.json").exists() else None
    shards = sorted(p for folder in params["inputs"] for p in Path(folder).rglob("shard-*.parquet"))
    exp = expected_tokens(shards, plan, params.get("exclude_sources", []))
    method = (manifest.get("output") or {}).get("token_count_method") or ""
    same_tokenizer = method.startswith("exact:") and method.endswith(params.get("tokenizer_sha16", "?"))
    checks = {
        "readback_tokens == written tokens": rb["tokens"] == total_tokens,
        "readback sequences == written sequences": rb["sequences"] == tot["sequences"],
        "readback padding == written padding": rb["pad_tokens"] == tot["pad_tokens"],
        "readback content+eos == written content+eos": rb["content_plus_eos_tokens"] == tot["content_tokens"] + tot["eos_tokens"],
        "packed documents == shard rows x copies": tot["documents"] + tot["empty_copies"] == exp["copies"],
    }
    if same_tokenizer:
        checks["packed content tokens == shard token_count x copies"] = tot["content_tokens"] == exp["tokens"]
        checks["unique tokens == shard token_count sum"] = tot["unique_tokens"] == exp["unique_tokens"]
        if not params.get("repo_documents") and not params.get("exclude_sources"):
            checks["unique tokens == manifest totals.tokens"] = tot["unique_tokens"] == manifest.get("totals", {}).get("tokens")
    for k, ok in checks.items():
        if not ok:
            problems.append(f"check failed: {k}")
    result = {
        "params": params,
        "totals": tot,
        "slices": dict(sorted(slices.items())),
        "readback": {**rb, "reader": "datatrove.pipeline.tokens.merger.load_doc_ends/get_data_reader"},
        "expected": exp,
        "manifest_tokens": manifest.get("totals", {}).get("tokens"),
        "manifest_token_count_method": method or None,
        "manifest_counts_comparable": same_tokenizer,
        "checks": checks,
        "problems": problems,
        "ok": not problems,
    }
    write_json_atomically(result, output / PACK_FILE)
    return result


class PackCheck(PipelineStep):
    """One-task phase: ``check_pack``; raises when the output does not read back as written."""

    name = "🔍 assay pack check"
    type = "🔢 - TOKENIZER"

    def __init__(self, output: str, run_dir: str, name: str = "packed", params: dict | None = None):
        super().__init__()
        self.output, self.run_dir, self.file_name, self.params = output, run_dir, name, params

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if self.params is not None:
            write_json_atomically(self.params, Path(self.output) / PARAMS_FILE)
        result = check_pack(Path(self.output), Path(self.run_dir), name=self.file_name)
        self.stat_update("sequences", value=result["totals"]["sequences"])
        if not result["ok"]:
            raise PackCheckFailed("; ".join(result["problems"][:5]))
        return
        yield


def pack_params(run_dir: Path, *, tokenizer: str, seq_len: int, algorithm: str, eos: bool, eos_token: str | None,
                pad_token: str | None, use_plan: bool, repo_documents: bool, seed: int,
                plan_exists: bool | None = None) -> dict[str, Any]:
    """Everything that decides the packed bytes (a folder packed with other parameters starts over).
    ``plan_exists``: None = look for ``<run>/plan.json`` now; True inside a recipe (its plan phase writes it)."""
    from assay.stages.output.tokens import tokenizer_fingerprint

    from assay.pipeline.plan import output_folders

    run_dir = Path(run_dir)
    inputs = [str(p) for p in output_folders(run_dir)]  # the run's shards and its increments' shards
    exclude: list[str] = []
    if repo_documents:  # repository documents (source "code_repo") replace the single code files
        inputs.append(str(run_dir / "repo_docs"))
        exclude = ["code"]
    plan_path = run_dir / "plan.json"
    has_plan = plan_path.exists() if plan_exists is None else plan_exists
    return {
        "run_dir": str(Path(run_dir).resolve()),
        "inputs": inputs,
        "exclude_sources": exclude,
        "tokenizer": str(Path(tokenizer).resolve()),
        "tokenizer_sha16": tokenizer_fingerprint(str(tokenizer))[:16],
        "seq_len": int(seq_len),
        "algorithm": algorithm,
        "eos": bool(eos),
        "eos_token": eos_token,
        "pad_token": pad_token,
        "plan": bool(use_plan and has_plan),
        "plan_sha16": _sha16(plan_path) if use_plan and has_plan and plan_exists is None else None,
        "repo_documents": bool(repo_documents),
        "seed": int(seed),
    }


def _sha16(path: Path) -> str:
    from assay.pipeline.manifest import file_sha256

    return file_sha256(path)[:16]


def prepare_output(output: Path, params: dict[str, Any]) -> bool:
    """Write the parameters; a folder packed with other parameters is cleared first (its completion
    markers would otherwise skip work). Returns True when earlier output was cleared."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    p = output / PARAMS_FILE
    cleared = False
    if p.exists() and json.loads(p.read_text()) != params:
        for entry in output.iterdir():
            if entry.name.startswith("packed_") or entry.name in ("logs", STATS_DIR, PACK_FILE) or entry.name.startswith(".staging-"):
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        cleared = True
    write_json_atomically(params, p)
    return cleared


def pack_steps(params: dict[str, Any], output: Path) -> tuple[list, list]:
    run_dir = Path(params["run_dir"])
    step = PackShards(
        params["inputs"], str(output), params["tokenizer"], seq_len=params["seq_len"], algorithm=params["algorithm"],
        eos=params["eos"], eos_token=params["eos_token"], pad_token=params["pad_token"],
        plan_path=str(run_dir / "plan.json") if params["plan"] else None, exclude_sources=params["exclude_sources"],
        seed=params["seed"],
    )
    return [step], [PackCheck(str(output), str(run_dir))]


def run_pack(run_dir: Path, output: Path, *, tokenizer: str, seq_len: int = 8192, algorithm: str = "best_fit",
             eos: bool = True, eos_token: str | None = None, pad_token: str | None = None, use_plan: bool = True,
             repo_documents: bool = False, seed: int = 0, tasks: int = 2, workers: int = 2,
             executor: str = "local", settings: dict | None = None) -> dict[str, Any]:
    """Pack a finished run (resumable); returns the ``pack.json`` result."""
    from assay.pipeline.executors import make_executor

    run_dir, output = Path(run_dir).resolve(), Path(output).resolve()
    if not (run_dir / "manifest.json").exists():
        raise FileNotFoundError(f"not a finished run (no manifest.json): {run_dir}")
    if repo_documents and not any((run_dir / "repo_docs").rglob("shard-*.parquet")):
        raise FileNotFoundError(f"no repository documents in {run_dir / 'repo_docs'} (run the recipe with "
                                "repo_documents.enabled: true)")
    params = pack_params(run_dir, tokenizer=tokenizer, seq_len=seq_len, algorithm=algorithm, eos=eos,
                         eos_token=eos_token, pad_token=pad_token, use_plan=use_plan,
                         repo_documents=repo_documents, seed=seed)
    prepare_output(output, params)
    steps, _ = pack_steps(params, output)
    ex = make_executor(executor, steps, tasks=tasks, workers=min(workers, tasks), logging_dir=str(output / "logs" / "pack"),
                       name="assay-pack", settings=settings or {})
    t0 = time.perf_counter()
    ex.run()
    t1 = time.perf_counter()
    left = ex.get_incomplete_ranks(skip_completed=True)
    if left:
        raise PackCheckFailed(f"pack tasks {left} did not complete (logs: {output / 'logs' / 'pack'})")
    result = check_pack(output, run_dir)
    result["seconds"] = {"pack": round(t1 - t0, 3), "check": round(time.perf_counter() - t1, 3)}
    if not result["ok"]:
        raise PackCheckFailed("; ".join(result["problems"][:5]))
    return result
