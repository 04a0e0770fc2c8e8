"""Run one parsing function in a forked child with a wall-clock limit and an address-space limit.

A hostile PDF (decompression bomb, endless object loop, malformed xref that makes MuPDF spin) must
not stall or kill a worker. ``run_isolated`` forks, sets ``RLIMIT_AS`` in the child, runs the
function, and pickles the result back through a pipe. The parent reads with ``select`` so a
large result never deadlocks, and kills the child with SIGKILL on timeout.

Cost: one ``fork`` (copy-on-write) per call, about 1-3 ms on Linux, negligible next to parsing.
Where ``fork`` is not available (or ``isolate=False``), the function runs in-process with no limit.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import threading
import time
from typing import Any, Callable

# Held around fork() and around MuPDF calls made from helper threads (page rendering in the OCR
# step): a child forked while another thread sits inside MuPDF would inherit its held locks and hang.
FORK_LOCK = threading.RLock()

OK = "ok"
TIMEOUT = "timeout"
MEMORY = "memory"
ERROR = "error"
CRASH = "crash"


def _child(fn: Callable, args: tuple, max_memory_mb: int | None, wfd: int) -> None:  # pragma: no cover - in child
    try:
        if max_memory_mb:
            import resource

            limit = int(max_memory_mb) * 1024 * 1024
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):
                pass
        try:
            payload = (OK, fn(*args))
        except MemoryError:
            payload = (MEMORY, None)
        except BaseException as e:  # noqa: BLE001 - everything becomes a status
            payload = (ERROR, f"{type(e).__name__}: {e}"[:500])
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            data = pickle.dumps((MEMORY, None))
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
    finally:
        os._exit(0)


def run_isolated(
    fn: Callable, *args: Any, timeout_s: float | None = 60.0, max_memory_mb: int | None = 2048, isolate: bool = True
) -> tuple[str, Any]:
    """Return ``(status, value)``; status is one of ok, timeout, memory, error, crash.

    ``value`` is the function result for ``ok`` and an error string for ``error``.
    """
    if not isolate or not hasattr(os, "fork"):
        try:
            return OK, fn(*args)
        except MemoryError:
            return MEMORY, None
        except Exception as e:  # noqa: BLE001
            return ERROR, f"{type(e).__name__}: {e}"[:500]

    rfd, wfd = os.pipe()
    with FORK_LOCK:
        pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(rfd)
        _child(fn, args, max_memory_mb, wfd)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = None if not timeout_s else time.monotonic() + float(timeout_s)
    timed_out = False
    try:
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd], [], [], remaining)
            if not ready:
                timed_out = True
                break
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if timed_out:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return TIMEOUT, None
    data = b"".join(chunks)
    if not data:
        # died without writing: killed by the kernel (OOM / RLIMIT) or a native crash
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT):
            return (MEMORY if os.WTERMSIG(status) == signal.SIGKILL else CRASH), None
        return CRASH, None
    try:
        return pickle.loads(data)
    except Exception as e:  # noqa: BLE001 - truncated pickle: the child died mid-write
        return CRASH, str(e)
