"""A run's temporary folders live in the run folder (issue 15: leftover multiprocessing temp folders after
killed runs). `kill -9` of `assay run` leaves no `pymp-*` folder in the system temp folder; the next run in
that folder removes what the killed one left in `<run>/.tmp`, and a finished run has no `.tmp`."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("assay_tests_run_faults", Path(__file__).with_name("test_run_faults.py"))
_rf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rf)


def _kill_family(pid: int) -> None:
    """SIGKILL the run's main process first (as a user's kill -9 does), then what it started, by pid."""
    family = _rf._descendants(pid)
    os.kill(pid, signal.SIGKILL)
    time.sleep(1.0)
    for p in family:
        if _rf._alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.slow
@pytest.mark.parametrize("where", ["run_folder", "long_path"])
def test_kill_9_leaves_no_multiprocessing_temp_folder_behind(tmp_path, fg, where):
    from assay.pipeline.runner import RUN_TMP, run_tmp_dir

    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "assay_test_slow_step.py").write_text(_rf.SLOW_STEP)
    driver = tmp_path / "driver.py"
    driver.write_text(_rf.DRIVER)
    data = tmp_path / "in"
    names = fg.good_code(data / "a", n=12) + fg.good_code(data / "b", n=12)
    pid_dir = tmp_path / "pids"

    def recipe(delay: float) -> Path:
        src = _rf._code_source([data / "a", data / "b"])
        src["steps"].append({"kind": "slow_test_v1", "params": {"delay": delay, "pid_dir": str(pid_dir)}})
        return fg.write_recipe(tmp_path / "r.yaml", [src], tasks=2)

    short = Path(tempfile.mkdtemp(prefix="ar", dir="/tmp"))
    systmp = short / "sys"  # the system temp folder of the run's processes (short, as /tmp is)
    systmp.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mod), os.environ.get("PYTHONPATH", "")]),
           "TMPDIR": str(systmp)}
    # a short run folder path keeps <run>/.tmp; a long one (Unix socket paths hold 107 bytes) uses a folder
    # in the system temp folder named after the run folder
    out = (short / "run") if where == "run_folder" else (tmp_path / ("deep-" * 12) / "run")
    proc = None
    try:
        proc = subprocess.Popen([sys.executable, str(driver), str(recipe(1.0)), str(out)], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(pid_dir.glob("*"))) < 2 and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None and len(list(pid_dir.glob("*"))) == 2, proc.stderr.read()[-3000:] if proc.poll() is not None else "both signal tasks should be running"
        os.environ["TMPDIR"], saved = str(systmp), os.environ.get("TMPDIR")
        tempfile.tempdir, saved_tempdir = None, tempfile.tempdir
        try:
            tmp = run_tmp_dir(out.resolve())  # as the run computes it, with the run's system temp folder
        finally:
            tempfile.tempdir = saved_tempdir
            os.environ.pop("TMPDIR") if saved is None else os.environ.__setitem__("TMPDIR", saved)
        assert (tmp == out.resolve() / RUN_TMP) == (where == "run_folder")
        assert list(tmp.glob("pymp-*")), "multiprocessing's folders should be in the run's temp folder"

        _kill_family(proc.pid)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert list(systmp.glob("pymp-*")) == []  # nothing in the system temp folder itself
        assert tmp.is_dir()  # the killed run's leftovers stay in its own temp folder ...

        rerun = subprocess.run([sys.executable, str(driver), str(recipe(0.0)), str(out)], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0 and "RUN-DONE" in rerun.stdout, rerun.stderr[-3000:]
        assert not tmp.exists()  # ... and the next run removes them, and its own
        assert not (out / RUN_TMP).exists()
        assert list(systmp.glob("pymp-*")) == [] and list(systmp.glob("assay-*")) == []
        assert (out / "manifest.json").exists() and len(names) == 24
    finally:
        if proc is not None and proc.poll() is None:  # a failed check: stop the run before removing its folder
            _kill_family(proc.pid)
            proc.communicate(timeout=30)
        shutil.rmtree(short, ignore_errors=True)
