"""`assay run` end to end on every executor: a small multi-phase recipe (signals, dedup buckets,
dedup clusters, decide, finalize) on the embedded sample runs locally, through Slurm (sbatch job
arrays chained with afterok) and on Ray, and every engine writes byte-identical shards. A local run
killed with SIGKILL at a random point and rerun with the same command also ends with the same
shards."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RECIPE = """
name: cluster_mini
sources:
  - name: web
    reader: {kind: warc_reader_v1, params: {paths: ["sample:web"]}}
    steps:
      - {kind: html_extract_v1}
      - {kind: web_heuristics_v1}
  - name: code
    reader: {kind: code_reader_v1, params: {paths: ["sample:code"]}}
    steps:
      - {kind: code_signals_v1}
common_steps:
  - {kind: normalize_v1}
dedup:
  near: true
decisions:
  rules:
    - {name: min_words, source: web, signal: prose__gopher__n_words, op: ">=", value: 50}
    - {name: generated, source: code, signal: code__generated, op: is_false}
executor:
  kind: local
  tasks: 2
  workers: 2
"""


def assay(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay.pipeline.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def shard_checksums(run_dir: Path) -> dict[str, str]:
    return {
        p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for sub in ("output", "excluded")
        for p in sorted((run_dir / sub).rglob("*.parquet"))
    }


def phases_of(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "logs").iterdir() if (p / "completions").is_dir())


@pytest.fixture(scope="module")
def recipe(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("recipe") / "cluster_mini.yaml"
    path.write_text(RECIPE)
    return path


@pytest.fixture(scope="module")
def reference(recipe, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    out = tmp_path_factory.mktemp("ref") / "run"
    proc = assay("run", str(recipe), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-4000:]
    sums = shard_checksums(out)
    assert any(k.startswith("output/") for k in sums), "the reference run wrote no shards"
    assert len(phases_of(out)) >= 4  # a multi-phase run: signals, dedup x2, decide, finalize
    return out, sums


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no 'sbatch' on PATH: run .ci/slurm-setup.sh as root")
def test_assay_run_through_slurm(recipe, reference, tmp_path: Path):
    ref_dir, ref_sums = reference
    out = tmp_path / "run"
    proc = assay(
        "run", str(recipe), "--output", str(out), "--executor", "slurm",
        "--set", "executor.settings.time=00:30:00",
        "--set", "executor.settings.mem_per_cpu_gb=1",
        "--set", "executor.settings.poll_interval_s=1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert phases_of(out) == phases_of(ref_dir)
    for phase in phases_of(out):
        # each phase ran as its own job array, chained on the previous phase
        assert (out / "logs" / phase / "launch_script.slurm").is_file(), phase
        jobs = json.loads((out / "logs" / phase / "slurm_jobs.json").read_text())
        assert len(jobs) == 1, phase
    assert shard_checksums(out) == ref_sums
    assert (out / "manifest.json").is_file()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed: pip install 'assay[ray]'")
def test_assay_run_on_ray(recipe, reference, tmp_path: Path):
    ref_dir, ref_sums = reference
    out = tmp_path / "run"
    proc = assay(
        "run", str(recipe), "--output", str(out), "--executor", "ray",
        "--set", "executor.settings.num_cpus=2",
        "--set", "executor.settings.mem_per_cpu_gb=0.5",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert phases_of(out) == phases_of(ref_dir)
    for phase in phases_of(out):
        n_tasks = json.loads((out / "logs" / phase / "executor.json").read_text())["world_size"]
        assert len(list((out / "logs" / phase / "completions").iterdir())) == n_tasks, phase
    assert shard_checksums(out) == ref_sums


@pytest.mark.parametrize("seed", [7, 8])
def test_assay_run_kill_9_and_rerun(recipe, reference, tmp_path: Path, seed: int):
    ref_dir, ref_sums = reference
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "assay.pipeline.cli", "run", str(recipe), "--output", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    rng = random.Random(seed)
    # kill at a random task boundary: right after a random number of completed tasks (over all
    # phases), short of the last two (the light phases run in process and finish within ~0.1 s of
    # each other, so a delay of a second could outrun the whole run), plus a delay of a few ms
    total = sum(1 for _ in (ref_dir / "logs").glob("*/completions/*"))
    target = rng.randrange(0, total - 1)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        done = sum(1 for _ in (out / "logs").glob("*/completions/*")) if (out / "logs").is_dir() else 0
        if done >= target:
            break
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.01))
    assert proc.poll() is None, "the run finished before the kill"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "logs/finalize/completions/00000").exists()  # the kill interrupted the run

    finished = {
        p: p.stat().st_mtime_ns for p in (out / "logs").glob("*/logs/task_*.log")
        if (p.parent.parent / "completions" / p.stem.removeprefix("task_")).exists()
    } if (out / "logs").is_dir() else {}  # fmt: skip
    rerun = assay("run", str(recipe), "--output", str(out))
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert shard_checksums(out) == ref_sums
    # tasks that had finished before the kill were not run again
    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, path
