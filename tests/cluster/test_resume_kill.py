"""Resume after ``kill -9``: a two-phase local run (8 tasks -> Parquet, then 2 tasks -> Parquet) is
killed with SIGKILL at a random point; rerunning the same command finishes the work, redoes at most
the tasks that were in flight, leaves finished tasks' files untouched and produces byte-identical
shards to an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TASKS, WORKERS = 8, 2

JOB = textwrap.dedent(
    """
    import sys, time
    from datatrove.pipeline.readers import JsonlReader, ParquetReader
    from datatrove.pipeline.writers import ParquetWriter
    from assay.pipeline.executors import make_executor, run_phases
    from assay.pipeline.lock import run_lock


    def slow(data, rank, world_size):  # stands in for real per-document work
        for doc in data:
            time.sleep(0.004)
            doc.metadata["rank_len"] = len(doc.text)
            yield doc


    def main():
        inputs, out = sys.argv[1], sys.argv[2]
        with run_lock(out):
            p1 = make_executor(
                "local",
                [JsonlReader(inputs, glob_pattern="*.jsonl.gz"), slow,
                 ParquetWriter(f"{out}/stage1", output_filename="${rank}.parquet")],
                tasks=%(tasks)d, workers=%(workers)d, logging_dir=f"{out}/logs/p1", name="p1",
            )
            p2 = make_executor(
                "local",
                [ParquetReader(f"{out}/stage1"), slow,
                 ParquetWriter(f"{out}/final", output_filename="${rank}.parquet")],
                tasks=2, workers=%(workers)d, logging_dir=f"{out}/logs/p2", name="p2", depends=p1,
            )
            run_phases([p1, p2])
        print("DONE")


    if __name__ == "__main__":  # the forkserver re-imports __main__
        main()
    """
) % {"tasks": TASKS, "workers": WORKERS}


def _run(script: Path, inputs: Path, out: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(script), str(inputs), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a job: kill -9 hits the pool workers too
        **kw,
    )


def _finish(proc: subprocess.Popen, timeout: float = 180) -> None:
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0 and "DONE" in stdout, stderr[-3000:]


def _ranks(folder: Path, prefix: str = "") -> set[int]:
    if not folder.is_dir():
        return set()
    return {int(p.name.removeprefix(prefix).split(".")[0]) for p in folder.iterdir()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, request):
    """Inputs + an uninterrupted run's output checksums."""
    ch = request.getfixturevalue("ch")
    base = tmp_path_factory.mktemp("resume")
    inputs = base / "inputs"
    ids = ch.make_inputs(inputs, n_files=TASKS, docs_per_file=180)
    script = base / "job.py"
    script.write_text(JOB)
    _finish(_run(script, inputs, base / "ref"))
    sums = ch.file_checksums(base / "ref/final")
    assert sorted(ch.read_parquet_ids(base / "ref/final")) == sorted(ids)
    return script, inputs, sums


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_then_rerun_resumes(tmp_path: Path, reference, ch, seed):
    script, inputs, ref_sums = reference
    out = tmp_path / "out"
    rng = random.Random(seed)

    proc = _run(script, inputs, out)
    # a random point of the run: after a random number of the 10 tasks (8 + 2) have completed,
    # plus a random fraction of a task
    target = rng.randrange(0, TASKS + 2)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        n_done = len(_ranks(out / "logs/p1/completions")) + len(_ranks(out / "logs/p2/completions"))
        if n_done >= target and _ranks(out / "logs/p1/logs", "task_"):
            break
        time.sleep(0.02)
    time.sleep(rng.uniform(0.0, 0.3))
    assert proc.poll() is None, "the run finished before the kill: make it slower"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)  # let the killed pool workers disappear

    phases = {"p1": TASKS, "p2": 2}
    done, in_flight, mtimes = {}, {}, {}
    for ph in phases:
        done[ph] = _ranks(out / f"logs/{ph}/completions")
        started = _ranks(out / f"logs/{ph}/logs", "task_")
        in_flight[ph] = started - done[ph]
        assert len(in_flight[ph]) <= WORKERS, (ph, in_flight[ph])
        mtimes[ph] = {r: (out / f"logs/{ph}/logs/task_{r:05d}.log").stat().st_mtime_ns for r in done[ph]}
    assert len(done["p1"]) + len(done["p2"]) < TASKS + 2  # the kill interrupted the run
    # ParquetWriter names files <counter>_<rank>.parquet
    finished_shards = {p: p.stat().st_mtime_ns for r in done["p1"] for p in (out / "stage1").glob(f"*{r:05d}.parquet")}
    assert len(finished_shards) >= len(done["p1"])

    _finish(_run(script, inputs, out))  # the same command again

    for ph, n in phases.items():
        assert _ranks(out / f"logs/{ph}/completions") == set(range(n))
        # tasks finished before the kill were not run again (their task logs were not rewritten)
        for r, mtime in mtimes[ph].items():
            assert (out / f"logs/{ph}/logs/task_{r:05d}.log").stat().st_mtime_ns == mtime, (ph, r)
    for path, mtime in finished_shards.items():
        assert path.stat().st_mtime_ns == mtime, path
    # same shards, byte for byte, as the uninterrupted run
    assert ch.file_checksums(out / "final") == ref_sums
    assert not (out / ".assay.lock").exists()
