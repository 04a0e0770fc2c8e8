"""An output-directory lock: two runs must never write the same output directory.

    with run_lock(run_dir):
        run_phases(executors)

The lock is ``<run_dir>/.assay.lock``, held with an fcntl (POSIX) record lock for the whole run
and holding the owner's ``{"pid", "host", "started", "argv"}`` as JSON. The kernel drops an fcntl
lock when its process dies (``kill -9`` included), so a crashed run never blocks the next one;
the file it leaves behind is simply taken over. POSIX locks also work across hosts on NFSv4 and
Lustre, where Slurm/Ray runs keep their outputs.

Where the filesystem refuses fcntl locks, the lock falls back to creating the file exclusively
(``O_EXCL``); a leftover file is then stale when it names this host and a pid that is no longer
alive, and is replaced. A file from another host cannot be checked and must be removed by hand
(the error says which file).

POSIX locks are per process, so a second ``run_lock`` on the same directory *inside the same
process* would not conflict at the kernel level; an in-process registry makes it conflict too.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LOCK_NAME", "RunLockedError", "LockInfo", "run_lock", "read_lock", "pid_alive"]

LOCK_NAME = ".assay.lock"

_held: set[str] = set()
_held_guard = threading.Lock()


class RunLockedError(RuntimeError):
    """The output directory is being written by another run."""


@dataclass(frozen=True)
class LockInfo:
    path: Path
    pid: int | None
    host: str | None
    started: str | None
    argv: list[str] | None

    @classmethod
    def parse(cls, path: Path, raw: str) -> LockInfo:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError
        except ValueError:
            return cls(path, None, None, None, None)
        pid = data.get("pid")
        return cls(
            path,
            pid if isinstance(pid, int) else None,
            data.get("host"),
            data.get("started"),
            data.get("argv") if isinstance(data.get("argv"), list) else None,
        )

    def describe(self) -> str:
        if self.pid is None:
            return "an unknown run (unreadable lock file)"
        cmd = " ".join(self.argv) if self.argv else "?"
        if len(cmd) > 120:
            cmd = cmd[:117] + "..."
        return f"pid {self.pid} on {self.host} since {self.started} ({cmd})"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def read_lock(run_dir: str | os.PathLike) -> LockInfo | None:
    """The owner recorded in ``run_dir``'s lock file (None when there is no lock file)."""
    path = Path(run_dir) / LOCK_NAME
    try:
        return LockInfo.parse(path, path.read_text())
    except FileNotFoundError:
        return None


def _owner_record() -> str:
    return json.dumps(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "argv": [os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:]],
        }
    )


def _locked_error(run_dir: Path, info: LockInfo | None, hint: str = "") -> RunLockedError:
    who = info.describe() if info else "another run"
    msg = f"output directory {run_dir} is locked by {who}"
    return RunLockedError(msg + (f"; {hint}" if hint else "; wait for it to finish or choose another --output"))


def _acquire_fcntl(path: Path, run_dir: Path) -> int | None:
    """Return an fd holding the lock, raise RunLockedError, or None if fcntl locks are unsupported."""
    for _ in range(5):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise _locked_error(run_dir, read_lock(run_dir)) from None
            if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                return None
            raise
        # the previous owner unlinks the file before unlocking: make sure we locked the live file
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    else:
        raise _locked_error(run_dir, read_lock(run_dir), f"the lock file {path} keeps changing")
    # we hold it: the file may name a dead owner (kill -9); take it over
    os.ftruncate(fd, 0)
    os.pwrite(fd, _owner_record().encode(), 0)
    os.fsync(fd)
    return fd


def _acquire_exclusive(path: Path, run_dir: Path) -> int:
    """Fallback without fcntl: create the lock file exclusively; replace it when provably stale."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            info = read_lock(run_dir)
            if info is None:
                continue  # removed meanwhile: retry
            if info.host == socket.gethostname() and info.pid is not None and not pid_alive(info.pid):
                path.unlink(missing_ok=True)  # stale: its owner died on this host
                continue
            hint = (
                f"it cannot be checked from {socket.gethostname()}; if that run is gone, delete {path}"
                if info.host != socket.gethostname()
                else "wait for it to finish or choose another --output"
            )
            raise _locked_error(run_dir, info, hint) from None
        os.write(fd, _owner_record().encode())
        os.fsync(fd)
        return fd
    raise _locked_error(run_dir, read_lock(run_dir), f"could not take over the lock file {path}")


@contextmanager
def run_lock(run_dir: str | os.PathLike) -> Iterator[Path]:
    """Hold the lock of ``run_dir`` (created if missing) for the duration of the block.

    Raises ``RunLockedError`` (one line: who holds it since when) when another live run holds it.
    Yields the lock file path. The lock file is removed on a clean exit.
    """
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_NAME
    key = str(path)
    with _held_guard:
        if key in _held:
            raise _locked_error(run_dir, read_lock(run_dir), "already locked by this process")
        _held.add(key)
    fd: int | None = None
    try:
        fd = _acquire_fcntl(path, run_dir)
        exclusive = fd is None
        if exclusive:
            fd = _acquire_exclusive(path, run_dir)
        try:
            yield path
        finally:
            # remove before unlocking so nobody takes over a file that is about to vanish
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            os.close(fd)  # releases the fcntl lock
    finally:
        with _held_guard:
            _held.discard(key)
