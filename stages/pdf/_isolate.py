"""Run one parsing function in a forked child with a wall-clock limit and an address-space limit.

A hostile PDF (decompression bomb, endless object loop, malformed xref that makes MuPDF spin) must
not stall or kill a worker. ``run_isolated`` forks, sets ``RLIMIT_AS`` in the child, runs the
function, and pickles the result back through a pipe. The parent reads with ``select`` so a
large result never deadlocks, and kills the child with SIGKILL on timeout.

Cost: one ``fork`` (copy-on-write) per call, about 1-3 ms on Linux, negligible next to parsing.
Where ``fork`` is not available (or ``isolate=False``), the function runs in-process with no limit.

Memory limit (``max_memory_mb``) is a budget ON TOP of what the worker already uses: the child sets
``RLIMIT_AS = <its address-space size at fork> + max_memory_mb`` (VmSize from ``/proc/self/statm``;
a worker with pymupdf/numpy/pyarrow loaded already maps ~0.5 GB, which an absolute cap would eat).
Where ``/proc`` is missing, the cap falls back to the absolute ``max_memory_mb``.

Status rules (``MEMORY`` becomes ``pdf_oversized``, ``CRASH`` becomes ``pdf_corrupt`` in the PDF steps):

* ``MemoryError`` in the child, or a MuPDF allocation failure (error text "out of memory" /
  "malloc" / "cannot allocate") -> ``MEMORY``;
* any other exception while the child's peak address space (VmPeak) reached
  ``MEMORY_NEAR_CAP`` of the budget -> ``MEMORY``, else ``ERROR``;
* the child's peak address space reached ``CAP_NEAR`` (90 %) of the budget and it is still running
  ``CAP_STALL_S`` (3 s) later, or when the timeout fires -> killed, ``MEMORY`` (allocations failing
  inside a C loop, e.g. MuPDF's text-trace callback swallowing Python ``MemoryError`` for each of
  10**9 operations, would otherwise spin until the timeout);
* the child was killed by SIGKILL (not our timeout: the kernel OOM killer) -> ``MEMORY``;
* the child died by SIGSEGV / SIGBUS / SIGABRT (MuPDF crashes on an unchecked failed allocation
  at the cap) or mid-result, a memory budget was set and its peak RSS (``os.wait4`` ``ru_maxrss``)
  grew by at least ``MEMORY_NEAR_CAP`` of the budget above the child's RSS before the work (the
  child sends it first through the pipe) -> ``MEMORY``;
  otherwise -> ``CRASH`` (a native crash of a small parse is a corrupt file).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
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

# share of the memory budget that counts as "at the cap" for a child that crashed or raised
MEMORY_NEAR_CAP = 0.5
_MEMORY_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGKILL)
# a child whose peak address space reached CAP_NEAR of its budget and that is still running
# CAP_STALL_S later (polled every CAP_POLL_S) is stalled at the cap: killed, MEMORY
CAP_NEAR = 0.9
CAP_STALL_S = 3.0
CAP_POLL_S = 0.5
_HEADER = struct.Struct("<Q")
_OOM_TEXT = ("out of memory", "malloc", "cannot allocate", "memoryerror")


def _statm() -> tuple[int, int] | None:
    """(address-space size, resident size) of this process in bytes, from /proc/self/statm."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            size, resident = fh.read().split()[:2]
        page = os.sysconf("SC_PAGE_SIZE")
        return int(size) * page, int(resident) * page
    except (OSError, ValueError, AttributeError):
        return None


def _vm_peak() -> int | None:
    """Peak address-space size of this process in bytes (VmPeak), or None."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _child_at_cap(pid: int, base: int, max_memory_mb: int) -> bool:
    """The running child's peak address space reached ``CAP_NEAR`` of its memory budget."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024 - base >= CAP_NEAR * max_memory_mb * 1024 * 1024
    except (OSError, ValueError):
        pass
    return False


def address_space_cap(max_memory_mb: int, base_bytes: int | None) -> int:
    """RLIMIT_AS for a child: its address space at fork plus the budget (absolute if base unknown)."""
    return int(base_bytes or 0) + int(max_memory_mb) * 1024 * 1024


def _child(fn: Callable, args: tuple, max_memory_mb: int | None, wfd: int) -> None:  # pragma: no cover - in child
    try:
        import faulthandler

        # a fatal-signal handler that dumps tracebacks (pytest, python -X faulthandler) can deadlock in
        # malloc when MuPDF crashes at the memory cap: the parent classifies the signal instead
        faulthandler.disable()
        base = None
        if max_memory_mb:
            import resource

            st = _statm()
            base = st[0] if st else None
            limit = address_space_cap(max_memory_mb, base)
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):
                pass
        # header: the child's own resident size before the work (what it inherited), the baseline
        # the parent measures the peak RSS growth against if the child dies
        st = _statm()
        os.write(wfd, _HEADER.pack(st[1] if st else 0))
        try:
            payload = (OK, fn(*args))
        except MemoryError:
            payload = (MEMORY, None)
        except BaseException as e:  # noqa: BLE001 - everything becomes a status
            msg = f"{type(e).__name__}: {e}"[:500]
            peak = _vm_peak() if max_memory_mb else None
            near_cap = peak is not None and peak - (base or 0) >= MEMORY_NEAR_CAP * max_memory_mb * 1024 * 1024
            oom = any(t in msg.lower() for t in _OOM_TEXT)
            payload = (MEMORY, msg) if (oom or near_cap) else (ERROR, msg)
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

    st = _statm()
    rss_at_fork = st[1] if st else 0  # fallback baseline when the child wrote no header
    rfd, wfd = os.pipe()
    with FORK_LOCK:
        pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(rfd)
        _child(fn, args, max_memory_mb, wfd)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = None if not timeout_s else time.monotonic() + float(timeout_s)
    timed_out = stalled = False
    # a child stuck at its address-space cap (allocations failing inside a C callback loop that
    # swallows MemoryError) would otherwise burn the whole timeout: watch its VmPeak
    watch = bool(max_memory_mb) and st is not None
    at_cap_since = None
    try:
        while True:
            now = time.monotonic()
            remaining = None if deadline is None else deadline - now
            if remaining is not None and remaining <= 0:
                timed_out = True
                break
            wait = min(remaining, CAP_POLL_S) if (watch and remaining is not None) else (CAP_POLL_S if watch else remaining)
            ready, _, _ = select.select([rfd], [], [], wait)
            if not ready:
                if watch and _child_at_cap(pid, st[0], max_memory_mb):
                    at_cap_since = at_cap_since or now
                    if now - at_cap_since >= CAP_STALL_S:
                        timed_out = stalled = True
                        break
                continue
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if timed_out:
            if not stalled and watch and _child_at_cap(pid, st[0], max_memory_mb):
                stalled = True  # the deadline came while the child sat at its memory cap
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status, usage = os.wait4(pid, 0)
    if timed_out:
        return (MEMORY if stalled else TIMEOUT), None
    data = b"".join(chunks)
    if len(data) >= _HEADER.size:
        rss_at_fork = _HEADER.unpack_from(data)[0]
        data = data[_HEADER.size:]
    else:
        data = b""
    if data:
        try:
            return pickle.loads(data)
        except Exception:  # noqa: BLE001 - truncated pickle: the child died mid-write
            pass
    # died without (a whole) result: a native crash, the RLIMIT_AS cap or the kernel OOM killer
    return _classify_death(status, usage.ru_maxrss * 1024, rss_at_fork, max_memory_mb), None


def _classify_death(status: int, peak_rss: int, rss_at_fork: int, max_memory_mb: int | None) -> str:
    """MEMORY for SIGKILL (the kernel OOM killer) and for SIGSEGV/SIGBUS/SIGABRT with the child's RSS
    grown to near the budget; else CRASH."""
    if not os.WIFSIGNALED(status) or os.WTERMSIG(status) not in _MEMORY_SIGNALS:
        return CRASH
    if os.WTERMSIG(status) == signal.SIGKILL:  # not our timeout (handled before): the OOM killer
        return MEMORY
    if not max_memory_mb:
        return CRASH
    grown = peak_rss - rss_at_fork
    return MEMORY if grown >= MEMORY_NEAR_CAP * max_memory_mb * 1024 * 1024 else CRASH
