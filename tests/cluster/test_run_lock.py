"""Output-directory lock: a second run on the same output fails at once with a one-line error;
a run killed with -9 does not leave the directory locked."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from assay.pipeline import lock as lock_mod
from assay.pipeline.lock import LOCK_NAME, RunLockedError, pid_alive, read_lock, run_lock

HOLDER = textwrap.dedent(
    """
    import sys, time
    from assay.pipeline.lock import run_lock
    with run_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(120)
    """
)


def _start_holder(run_dir: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_records_owner_and_is_removed_on_exit(tmp_path: Path):
    with run_lock(tmp_path / "out") as path:
        assert path == (tmp_path / "out" / LOCK_NAME).resolve()
        info = read_lock(tmp_path / "out")
        assert info.pid == os.getpid() and info.host == socket.gethostname()
        assert json.loads(path.read_text())["started"]
    assert not path.exists()
    # reusable after release
    with run_lock(tmp_path / "out"):
        pass


def test_same_process_cannot_lock_twice(tmp_path: Path):
    with run_lock(tmp_path):
        with pytest.raises(RunLockedError, match="already locked by this process"):
            with run_lock(tmp_path):
                pass
    with run_lock(tmp_path):  # released properly after the failed attempt
        pass


def test_second_process_gets_one_line_error(tmp_path: Path):
    run_dir = tmp_path / "out"
    proc = _start_holder(run_dir)
    try:
        with pytest.raises(RunLockedError) as err:
            with run_lock(run_dir):
                pytest.fail("acquired a lock held by another process")
        msg = str(err.value)
        assert "\n" not in msg
        assert f"pid {proc.pid} on {socket.gethostname()}" in msg and str(run_dir.resolve()) in msg
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()


def test_kill_9_leaves_no_stale_lock(tmp_path: Path):
    run_dir = tmp_path / "out"
    proc = _start_holder(run_dir)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (run_dir / LOCK_NAME).exists()  # the file stays behind ...
    assert read_lock(run_dir).pid == proc.pid and not pid_alive(proc.pid)
    with run_lock(run_dir):  # ... but the kernel released the lock: taken over
        assert read_lock(run_dir).pid == os.getpid()


def test_fallback_without_fcntl_detects_stale_and_live_owners(tmp_path: Path, monkeypatch):
    """On filesystems without fcntl locks: O_EXCL file + pid/host staleness check."""
    monkeypatch.setattr(lock_mod, "_acquire_fcntl", lambda path, run_dir: None)
    run_dir = tmp_path / "out"
    run_dir.mkdir()
    lock_file = run_dir / LOCK_NAME

    # a dead pid on this host: stale, replaced
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock_file.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": "x", "argv": ["a"]}))
    with run_lock(run_dir):
        assert read_lock(run_dir).pid == os.getpid()
    assert not lock_file.exists()

    # a live pid on this host: refused
    lock_file.write_text(json.dumps({"pid": os.getppid(), "host": socket.gethostname(), "started": "x"}))
    with pytest.raises(RunLockedError, match=f"pid {os.getppid()}"):
        with run_lock(run_dir):
            pass

    # another host: cannot be checked, refused with the file to delete
    lock_file.write_text(json.dumps({"pid": 1, "host": "elsewhere-node", "started": "x"}))
    with pytest.raises(RunLockedError, match="cannot be checked") as err:
        with run_lock(run_dir):
            pass
    assert str(lock_file) in str(err.value)


def test_concurrent_processes_exactly_one_wins(tmp_path: Path):
    run_dir = tmp_path / "out"
    script = textwrap.dedent(
        """
        import sys, time
        from assay.pipeline.lock import run_lock, RunLockedError
        time.sleep(float(sys.argv[2]) - time.time())
        try:
            with run_lock(sys.argv[1]):
                time.sleep(1.5)
                print("won")
        except RunLockedError:
            print("lost")
        """
    )
    start = time.time() + 1.5
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(run_dir), str(start)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    results = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert results == ["lost", "lost", "lost", "won"]
