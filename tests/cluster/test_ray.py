"""Real Ray runs: a two-phase datatrove pipeline through ``assay.pipeline.executors`` on (1) a private
local Ray instance started by ``run_phases`` and (2) a cluster started with ``ray start --head``."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.pipeline.executors import PhaseFailedError, make_executor, run_phases

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="ray is not installed: pip install 'assay[ray]'"
    ),
]


def _chain(phase1, phase2, work: Path, settings: dict, tasks=(3, 2)):
    first = make_executor(
        "ray", phase1, tasks=tasks[0], workers=2, logging_dir=str(work / "logs/p1"), name="p1", settings=settings
    )
    second = make_executor(
        "ray",
        phase2,
        tasks=tasks[1],
        workers=2,
        logging_dir=str(work / "logs/p2"),
        name="p2",
        depends=first,
        settings=settings,
    )
    return first, second


def _check_outputs(ch, work: Path, ids: list[str], tasks=(3, 2)) -> None:
    assert len(list((work / "logs/p1/completions").iterdir())) == tasks[0]
    assert len(list((work / "logs/p2/completions").iterdir())) == tasks[1]
    assert sorted(ch.read_parquet_ids(work / "stage1")) == sorted(ids)
    assert sorted(ch.read_jsonl_ids(work / "final")) == sorted(ids)
    # per-task logs were copied back from the Ray workers
    assert len(list((work / "logs/p2/logs").glob("task_*.log"))) == tasks[1]


def test_two_phase_pipeline_on_private_ray(tmp_path: Path, cluster_inputs, ch):
    import ray

    inputs, ids = cluster_inputs
    work = tmp_path / "run"
    settings = {"num_cpus": 2, "mem_per_cpu_gb": 0.5}
    results = run_phases(list(_chain(*ch.two_phase_pipelines(inputs, work), work, settings)))
    assert len(results) == 2
    _check_outputs(ch, work, ids)
    assert not ray.is_initialized()  # run_phases shut down the instance it started

    # a phase whose task raises makes run_phases fail loudly instead of waiting forever
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.parquet").write_bytes(b"PAR1 not parquet")
    from datatrove.pipeline.readers import ParquetReader

    phase1, phase2 = ch.two_phase_pipelines(bad, tmp_path / "run2")
    first, second = _chain([ParquetReader(str(bad)), phase1[1]], phase2, tmp_path / "run2", settings, tasks=(1, 1))
    with pytest.raises(PhaseFailedError) as err:
        run_phases([first, second])
    assert err.value.phase == "p1" and err.value.incomplete == [0]
    assert not (tmp_path / "run2/final").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head(tmp_path_factory):
    """A Ray head node started with the `ray` CLI (as a user would), stopped at teardown."""
    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the 'ray' command is not installed")
    port = _free_port()
    temp_dir = tmp_path_factory.mktemp("ray")
    proc = subprocess.Popen(
        [
            ray_cli,
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = subprocess.run([ray_cli, "status", f"--address={address}"], capture_output=True, text=True)
        if status.returncode == 0 and "CPU" in status.stdout:
            break
        if proc.poll() is not None:
            pytest.fail(f"ray start --head exited: {proc.stdout.read()}")
        time.sleep(1)
    else:
        proc.kill()
        pytest.fail("ray head did not come up within 120 s")
    yield address
    # `ray start --block` stops every process of the cluster it started when interrupted
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_two_phase_pipeline_on_ray_cluster(tmp_path: Path, cluster_inputs, ray_head, ch):
    import ray

    inputs, ids = cluster_inputs
    work = tmp_path / "run"
    settings = {"address": ray_head, "mem_per_cpu_gb": 0.5}
    run_phases(list(_chain(*ch.two_phase_pipelines(inputs, work), work, settings)))
    _check_outputs(ch, work, ids)
    assert not ray.is_initialized()

    # resuming a finished run on the cluster does nothing and changes nothing
    before = {p: p.stat().st_mtime_ns for p in (work / "final").iterdir()}
    run_phases(list(_chain(*ch.two_phase_pipelines(inputs, work), work, settings)))
    assert {p: p.stat().st_mtime_ns for p in (work / "final").iterdir()} == before
