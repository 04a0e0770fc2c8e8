"""The executor layer without a cluster: settings validation, the sbatch script we would submit,
squeue polling (with a fake squeue on PATH) and local multi-phase runs."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from datatrove.executor.local import LocalPipelineExecutor
from datatrove.executor.ray import RayPipelineExecutor
from pydantic import ValidationError

from assay.pipeline.executors import (
    AssaySlurmExecutor,
    LocalSettings,
    PhaseFailedError,
    RaySettings,
    SlurmSettings,
    default_venv_activate,
    make_executor,
    run_phases,
    validate_settings,
    wait_for_slurm_jobs,
)


def test_settings_reject_unknown_and_mismatched_keys():
    assert validate_settings("local", None) == LocalSettings()
    assert validate_settings("slurm", {"partition": "cpu", "time": "1:00:00"}).partition == "cpu"
    with pytest.raises(ValidationError, match="partiton"):
        validate_settings("slurm", {"partiton": "cpu"})
    with pytest.raises(ValidationError):
        validate_settings("ray", {"cpus_per_task": 0})
    with pytest.raises(ValueError, match="settings for executor 'ray'"):
        validate_settings("slurm", {"kind": "ray"})
    with pytest.raises(ValueError, match="unknown executor 'k8s'; choose one of local, slurm, ray"):
        validate_settings("k8s", {})
    # the settings module (pydantic, never loaded by pool workers) does not import the executors: same kinds
    from assay.pipeline import executors, settings

    assert tuple(settings._SETTINGS) == executors.EXECUTOR_KINDS
    with pytest.raises(ValueError, match="RaySettings"):
        validate_settings("slurm", RaySettings())
    # a settings object embeds in a recipe model and round-trips through a dict
    s = SlurmSettings(partition="gpu", sbatch_args={"constraint": "intel", "exclusive": None})
    assert validate_settings("slurm", s.model_dump()) == s


def test_make_executor_local_and_ray_types(tmp_path: Path):
    first = make_executor("local", [], tasks=4, workers=8, logging_dir=str(tmp_path / "a"), name="a")
    assert isinstance(first, LocalPipelineExecutor) and first.workers == 4  # capped at tasks
    second = make_executor(
        "local", [], tasks=1, workers=-1, logging_dir=str(tmp_path / "b"), name="b", depends=first
    )
    assert second.depends is first and second.workers == 1
    ray_ex = make_executor(
        "ray",
        [],
        tasks=3,
        workers=2,
        logging_dir=str(tmp_path / "r"),
        name="r",
        settings={"cpus_per_task": 2, "mem_per_cpu_gb": 1.5, "time_limit_s": 60},
    )
    assert isinstance(ray_ex, RayPipelineExecutor)
    assert (ray_ex.cpus_per_task, ray_ex.mem_per_cpu_gb, ray_ex.time, ray_ex.workers) == (2, 1.5, 60, 2)
    with pytest.raises(TypeError, match="must depend on a local phase"):
        make_executor("local", [], tasks=1, workers=1, logging_dir=str(tmp_path / "c"), name="c", depends=ray_ex)
    with pytest.raises(ValueError, match="tasks must be >= 1"):
        make_executor("local", [], tasks=0, workers=1, logging_dir=str(tmp_path / "d"), name="d")


def test_slurm_launch_script(tmp_path: Path):
    settings = {
        "time": "02:00:00",
        "cpus_per_task": 2,
        "mem_per_cpu_gb": 1.5,
        "account": "proj",
        "sbatch_args": {"constraint": "intel"},
        "job_name": "nightly",
    }
    ex = make_executor(
        "slurm", [], tasks=10, workers=3, logging_dir=str(tmp_path / "logs"), name="signals", settings=settings
    )
    assert isinstance(ex, AssaySlurmExecutor)
    script = ex.get_launch_file_contents(ex.get_sbatch_args(10), "launch_pickled_pipeline x.pik")
    lines = script.splitlines()
    for expected in (
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem-per-cpu=1536M",
        "#SBATCH --time=02:00:00",
        "#SBATCH --job-name=nightly-signals",
        "#SBATCH --array=0-9%3",
        "#SBATCH --account=proj",
        "#SBATCH --constraint=intel",
    ):
        assert expected in lines, expected
    # unset partition/qos are left to the cluster's defaults instead of '--partition=None'
    assert not any(line.startswith(("#SBATCH --partition", "#SBATCH --qos")) for line in lines)
    # the job activates the virtualenv running this test, so `launch_pickled_pipeline` is found
    venv = default_venv_activate()
    if venv:
        assert f"source {venv}" in script
    custom = make_executor(
        "slurm",
        [],
        tasks=1,
        workers=-1,
        logging_dir=str(tmp_path / "l2"),
        name="x",
        settings={"partition": "cpu", "qos": "high", "env_command": "module load python"},
    )
    script = custom.get_launch_file_contents(custom.get_sbatch_args(1), "true")
    assert "#SBATCH --partition=cpu" in script and "#SBATCH --qos=high" in script
    assert "module load python" in script and "source " not in script


def _fake_squeue(bin_dir: Path, responses: dict[str, str]) -> None:
    """A `squeue` that answers from files: <bin>/<job>.state holds the lines to print."""
    bin_dir.mkdir(exist_ok=True)
    for job, text in responses.items():
        (bin_dir / f"{job}.state").write_text(text)
    script = bin_dir / "squeue"
    script.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = "-j" ] && job="$2"; shift; done\n'
        f'f="{bin_dir}/$job.state"\n'
        'if [ -f "$f" ]; then cat "$f"; else echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_wait_for_slurm_jobs_states(tmp_path: Path, monkeypatch):
    bin_dir = tmp_path / "bin"
    _fake_squeue(
        bin_dir,
        {
            "11": "COMPLETED|None\nCOMPLETED|None\n",
            "12": "FAILED|NonZeroExitCode\nCOMPLETED|None\n",
            "13": "PENDING|DependencyNeverSatisfied\n",
            "14": "RUNNING|None\n",
        },
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    notes = wait_for_slurm_jobs(["11", "12", "13", "99"], poll_interval_s=0.01)
    assert notes == {"11": "", "12": "FAILED", "13": "DependencyNeverSatisfied", "99": "gone from squeue"}
    with pytest.raises(TimeoutError, match="14"):
        wait_for_slurm_jobs(["14"], poll_interval_s=0.01, timeout_s=0.1)


def _count_step(data, rank, world_size):
    for doc in data or []:
        yield doc


def _failing_step(data, rank, world_size):
    if rank == 1:
        raise RuntimeError("boom in rank 1")
    yield from data or []


def test_local_chain_runs_in_order_and_resumes(tmp_path: Path, ch):
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    ids = ch.make_inputs(tmp_path / "in", n_files=3, docs_per_file=30)
    p1 = make_executor(
        "local",
        [JsonlReader(str(tmp_path / "in")), JsonlWriter(str(tmp_path / "mid"), output_filename="${rank}.jsonl.gz")],
        tasks=3,
        workers=1,
        logging_dir=str(tmp_path / "logs/p1"),
        name="p1",
    )
    p2 = make_executor(
        "local",
        [JsonlReader(str(tmp_path / "mid")), JsonlWriter(str(tmp_path / "out"), output_filename="${rank}.jsonl.gz")],
        tasks=1,
        workers=1,
        logging_dir=str(tmp_path / "logs/p2"),
        name="p2",
        depends=p1,
    )
    stats = run_phases([p2])  # the last phase stands for its whole depends chain
    assert len(stats) == 2
    assert sorted(ch.read_jsonl_ids(tmp_path / "out")) == sorted(ids)
    # resume: remove one completion marker of phase 1; only that task runs again
    (tmp_path / "logs/p1/completions/00001").unlink()
    before = (tmp_path / "logs/p1/logs/task_00000.log").stat().st_mtime_ns
    p1b = make_executor(
        "local",
        [JsonlReader(str(tmp_path / "in")), JsonlWriter(str(tmp_path / "mid"), output_filename="${rank}.jsonl.gz")],
        tasks=3,
        workers=1,
        logging_dir=str(tmp_path / "logs/p1"),
        name="p1",
    )
    run_phases([p1b])
    assert (tmp_path / "logs/p1/completions/00001").exists()
    assert (tmp_path / "logs/p1/logs/task_00000.log").stat().st_mtime_ns == before


def test_local_failed_task_stops_the_chain(tmp_path: Path):
    p1 = make_executor(
        "local",
        [_failing_step],
        tasks=2,
        workers=1,
        logging_dir=str(tmp_path / "logs/p1"),
        name="p1",
    )
    p2 = make_executor(
        "local", [_count_step], tasks=1, workers=1, logging_dir=str(tmp_path / "logs/p2"), name="p2", depends=p1
    )
    with pytest.raises(PhaseFailedError, match="RuntimeError: boom in rank 1") as err:
        run_phases([p1, p2])
    assert err.value.phase == "p1" and err.value.incomplete == [1]
    assert (tmp_path / "logs/p1/completions/00000").exists()  # rank 0 finished
    assert not (tmp_path / "logs/p1/completions/00001").exists()
    assert not (tmp_path / "logs/p2/completions").exists()


def test_phase_failed_error_message():
    err = PhaseFailedError("dedup", list(range(12)), "/runs/x/logs/dedup", "slurm job 7 FAILED")
    msg = str(err)
    assert msg.startswith("phase 'dedup' failed: 12 task(s) did not complete (ranks 0, 1, 2")
    assert "..." in msg and "/runs/x/logs/dedup/logs" in msg and msg.endswith("slurm job 7 FAILED")


def test_ray_requires_ray_kind_chain(tmp_path: Path):
    a = make_executor("local", [], tasks=1, workers=1, logging_dir=str(tmp_path / "a"), name="a")
    b = make_executor("ray", [], tasks=1, workers=1, logging_dir=str(tmp_path / "b"), name="b")
    with pytest.raises(ValueError, match="same executor"):
        run_phases([a, b])


def test_refuses_to_submit_from_inside_a_slurm_task(tmp_path: Path, monkeypatch):
    ex = make_executor("slurm", [], tasks=1, workers=1, logging_dir=str(tmp_path / "s"), name="s")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    with pytest.raises(RuntimeError, match="inside a Slurm array task"):
        run_phases([ex])


def test_module_has_no_side_effect_imports():
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import sys, assay.pipeline.executors, assay.pipeline.lock; print('ray' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "False"
