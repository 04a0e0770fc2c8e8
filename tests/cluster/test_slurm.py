"""Real Slurm runs: a two-phase datatrove pipeline submitted with sbatch through
``assay.pipeline.executors`` (CI sets the cluster up with .ci/slurm-setup.sh)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from assay.pipeline.executors import PhaseFailedError, make_executor, run_phases

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("sbatch") is None,
        reason="no 'sbatch' on PATH: run .ci/slurm-setup.sh (as root) to start a one-node Slurm cluster",
    ),
]


@pytest.fixture(scope="module", autouse=True)
def _slurm_up():
    proc = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    if "UP" not in proc.stdout:
        pytest.fail(f"sbatch is installed but slurmctld does not answer 'scontrol ping': {proc.stdout}{proc.stderr}")


SETTINGS = {"time": "00:10:00", "mem_per_cpu_gb": 1, "poll_interval_s": 1, "timeout_s": 240}


def _chain(phase1, phase2, work: Path, tasks=(4, 2), settings=SETTINGS):
    first = make_executor(
        "slurm", phase1, tasks=tasks[0], workers=-1, logging_dir=str(work / "logs/p1"), name="p1", settings=settings
    )
    second = make_executor(
        "slurm",
        phase2,
        tasks=tasks[1],
        workers=1,
        logging_dir=str(work / "logs/p2"),
        name="p2",
        depends=first,
        settings=settings,
    )
    return first, second


def test_two_phase_pipeline_through_sbatch(tmp_path: Path, cluster_inputs, ch):
    inputs, ids = cluster_inputs
    work = tmp_path / "run"
    first, second = _chain(*ch.two_phase_pipelines(inputs, work), work)

    job_ids = run_phases([first, second])

    assert len(job_ids) == 2 and all(job_ids) and job_ids[0] != job_ids[1]
    # the sbatch script of phase 2 waited for phase 1 (afterok) and activated this venv
    script2 = (work / "logs/p2/launch_script.slurm").read_text()
    assert "#SBATCH --array=0-1%1" in script2
    assert "bin/activate" in script2 and "--partition" not in script2
    assert f'"depends_job_id": "{job_ids[0]}"' in (work / "logs/p2/executor.json").read_text()
    # every task of both phases finished and every document went through both phases
    assert sorted((work / "logs/p1/completions").iterdir()) and len(list((work / "logs/p1/completions").iterdir())) == 4
    assert len(list((work / "logs/p2/completions").iterdir())) == 2
    assert sorted(ch.read_parquet_ids(work / "stage1")) == sorted(ids)
    assert sorted(ch.read_jsonl_ids(work / "final")) == sorted(ids)
    # the tasks really ran under Slurm (one raw log per array task)
    assert len(list((work / "logs/p1/slurm_logs").glob(f"{job_ids[0]}_*.out"))) == 4

    # a second submission finds every task completed and submits nothing
    again = _chain(*ch.two_phase_pipelines(inputs, work), work)
    assert run_phases(list(again)) == [None, None]


def test_resubmission_reattaches_to_running_chain(tmp_path: Path, cluster_inputs, ch):
    """`wait: false` returns after sbatch; running the same command again while the chain is
    queued/running waits for those jobs instead of submitting the tasks a second time."""
    inputs, ids = cluster_inputs
    work = tmp_path / "run"
    settings = {**SETTINGS, "wait": False}
    first, second = _chain(*ch.two_phase_pipelines(inputs, work), work, settings=settings)
    submitted = run_phases([first, second])
    assert all(submitted)

    again = _chain(*ch.two_phase_pipelines(inputs, work), work)  # wait: true
    assert run_phases(list(again)) == submitted  # same jobs, nothing new submitted
    for phase, job in zip(("p1", "p2"), submitted):
        recorded = json.loads((work / f"logs/{phase}/slurm_jobs.json").read_text())
        assert [r["job_id"] for r in recorded] == [job]
    assert sorted(ch.read_jsonl_ids(work / "final")) == sorted(ids)


def test_failed_phase_raises_and_cancels_the_rest(tmp_path: Path, ch):
    inputs = tmp_path / "inputs"
    ch.make_inputs(inputs, n_files=2, docs_per_file=20)
    work = tmp_path / "run"
    phase1, phase2 = ch.two_phase_pipelines(inputs, work)
    # phase 1 reads a Parquet file that is not Parquet: its task raises
    (work / "bad").mkdir(parents=True)
    (work / "bad/broken.parquet").write_bytes(b"PAR1 this is not a parquet file")
    from datatrove.pipeline.readers import ParquetReader

    phase1 = [ParquetReader(str(work / "bad")), phase1[1]]
    first, second = _chain(phase1, phase2, work, tasks=(1, 1))

    with pytest.raises(PhaseFailedError) as err:
        run_phases([first, second])
    assert err.value.phase == "p1" and err.value.incomplete == [0]
    assert not (work / "final").exists()
    # phase 2 never runs: cancelled (by us or by kill_invalid_depend)
    state = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", str(second.job_id), "-o", "%T"], capture_output=True, text=True
    ).stdout
    assert "RUNNING" not in state and "COMPLETED" not in state
    # nothing of the failed chain is left pending forever (datatrove's stats-merging jobs included)
    time.sleep(2)
    left = subprocess.run(
        ["squeue", "-h", "-t", "PD", "-n", "p1,p2", "-o", "%A %r"], capture_output=True, text=True
    ).stdout
    assert "DependencyNeverSatisfied" not in left, left
