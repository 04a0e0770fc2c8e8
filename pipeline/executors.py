"""Executors: run lists of datatrove steps locally, on Slurm or on Ray.

A run is a chain of *phases* (signals -> dedup buckets -> dedup clusters -> decide ...). Each phase
is one datatrove executor with its own task count and logging directory; phase ``i`` depends on
phase ``i - 1`` through datatrove's ``depends=``. Completion markers
(``<logging_dir>/completions/<rank>``) make every phase resumable: a rerun of the same chain
skips finished tasks and redoes only the missing ones.

    executors = []
    for i, phase in enumerate(phases):
        executors.append(make_executor("slurm", phase.steps, tasks=phase.tasks, workers=-1,
                                       logging_dir=f"{run}/logs/{phase.name}", name=phase.name,
                                       depends=executors[-1] if executors else None,
                                       settings={"partition": "cpu", "time": "4:00:00"}))
    run_phases(executors)

``run_phases`` launches the chain the way each engine wants it and raises ``PhaseFailedError``
when a phase ends with unfinished tasks, so a CLI call fails loudly instead of hanging:

- local / ray: phases run one after the other in this process (``.run()``); after each phase
  its completion markers are checked. (datatrove's own ``depends`` loop would otherwise wait
  forever, polling every two minutes, for a dependency whose tasks failed.)
- slurm: the whole chain is submitted at once with ``sbatch --dependency=afterok:<id>``; with
  ``wait=True`` (default) the call blocks, polling ``squeue`` until the jobs have left the queue,
  then checks the completion markers of every phase and cancels the rest of the chain as soon
  as one phase fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Literal

from datatrove.executor.base import PipelineExecutor
from datatrove.executor.local import LocalPipelineExecutor
from datatrove.executor.ray import RayPipelineExecutor  # imports ray lazily, in run()
from datatrove.executor.slurm import SlurmPipelineExecutor
from datatrove.utils.logging import logger

from assay.pipeline.lean import ARROW_POOL_ENV

__all__ = [
    "EXECUTOR_KINDS",
    "ExecutorKind",
    "LocalSettings",
    "SlurmSettings",
    "RaySettings",
    "PhaseFailedError",
    "settings_model",
    "validate_settings",
    "make_executor",
    "run_phases",
    "wait_for_slurm_jobs",
    "active_jobs_in",
    "default_venv_activate",
    "AssaySlurmExecutor",
]

ExecutorKind = Literal["local", "slurm", "ray"]
EXECUTOR_KINDS: tuple[str, ...] = ("local", "slurm", "ray")


class PhaseFailedError(RuntimeError):
    """A phase of a run finished with tasks that did not complete."""

    def __init__(self, phase: str, incomplete: list[int], logging_dir: str, detail: str = ""):
        self.phase = phase
        self.incomplete = incomplete
        self.logging_dir = logging_dir
        shown = ", ".join(map(str, incomplete[:10])) + (" ..." if len(incomplete) > 10 else "")
        msg = f"phase {phase!r} failed: {len(incomplete)} task(s) did not complete (ranks {shown}); logs in {logging_dir}/logs"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)


# --------------------------------------------------------------------------------------- settings
# the settings models live in assay.pipeline.settings (pydantic); the names stay importable from here
_SETTINGS_NAMES = frozenset(("_Settings", "LocalSettings", "SlurmSettings", "RaySettings", "settings_model",
                             "validate_settings"))


def __getattr__(name: str):
    if name in _SETTINGS_NAMES:
        from assay.pipeline import settings

        return getattr(settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_venv_activate() -> str | None:
    """The ``bin/activate`` script of the virtualenv running this interpreter, if any."""
    if sys.prefix == sys.base_prefix:
        return None
    activate = Path(sys.prefix) / "bin" / "activate"
    return str(activate) if activate.is_file() else None


# ------------------------------------------------------------------------- executor subclasses
# At module level so that pickled executors (Slurm's executor.pik) find the class by reference.


class AssaySlurmExecutor(SlurmPipelineExecutor):
    """``SlurmPipelineExecutor`` that omits unset options (``partition=None``, ``qos=None``) instead
    of writing ``--partition=None``, and accepts fractional memory (``mem_per_cpu_gb=1.5``)."""

    def get_sbatch_args(self, max_array: int = 1) -> dict:
        args = super().get_sbatch_args(max_array)
        args["mem-per-cpu"] = f"{int(round(float(self.mem_per_cpu_gb) * 1024))}M"
        if self.partition is None:
            args.pop("partition", None)
        return args


# ------------------------------------------------------------- terminal logging and progress
# datatrove logs every task to the terminal (its banner, its pipeline, its stats). assay keeps those
# logs in <logging_dir>/logs/task_*.log only, unless `--verbose`; the CLI shows one progress line per
# phase instead, read from <logging_dir>/progress/<rank>.json, which each local task rewrites about
# once a second (documents and text characters that left the phase's readers).

#: level of task logs on the terminal; None = only in the task log files (set by configure_logging)
TASK_CONSOLE_LEVEL: str | None = None
_LOG_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | <level>{level: <8}</level> | {name}:{function}:{line} - <level>{message}</level>"


def configure_logging(verbose: bool = False, quiet: bool = False) -> None:
    """Terminal logging of this process and of the tasks it runs: datatrove's INFO logs only with
    ``verbose``; otherwise warnings (``quiet``: errors) of this process, and task logs in files only."""
    global TASK_CONSOLE_LEVEL
    TASK_CONSOLE_LEVEL = "INFO" if verbose else None
    _console_sink("INFO" if verbose else "ERROR" if quiet else "WARNING")


def _cache_loguru_lib_dirs() -> None:
    """loguru's ``logger.add`` computes the interpreter's library folders (``sysconfig`` path expansion for
    every install scheme) for each sink it adds: a task adds two, and a run has dozens of tasks. The
    folders do not change within a process: compute them once."""
    try:
        from loguru import _better_exceptions as be
    except ImportError:  # pragma: no cover - loguru is a datatrove dependency
        return
    fmt = getattr(be, "ExceptionFormatter", None)
    fn = getattr(fmt, "_get_lib_dirs", None)
    if fn is None or getattr(fn, "_assay_cached", False):
        return
    dirs: list = []

    def cached() -> list:
        if not dirs:
            dirs.append(fn())
        return list(dirs[0])

    cached._assay_cached = True
    cached._assay_original = fn
    fmt._get_lib_dirs = staticmethod(cached)


_cache_loguru_lib_dirs()


def _console_sink(level: str | None) -> None:
    logger.remove()
    if level:
        logger.add(sys.stderr, level=level, format=_LOG_FORMAT, colorize=None)


def release_memory() -> None:
    """Hand freed heap memory back to the system: glibc keeps the pages of freed objects (big pages'
    parse trees, flushed row buffers) mapped, so a task's resident memory only ever grows; trimming
    keeps it near what is live. pyarrow's pool is released too. Best effort (no glibc: nothing)."""
    global _LIBC
    try:
        import sys as _sys

        if "pyarrow" in _sys.modules:
            _sys.modules["pyarrow"].default_memory_pool().release_unused()
        if _LIBC is None:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
        _LIBC.malloc_trim(0)
    except (OSError, AttributeError):
        _LIBC = False


_LIBC = None

# an inline phase releases freed memory after a rank once a second, or sooner once the process grew this much
# since the last release: the decide phase's two ranks of set I take well under a second, and the second
# rank started on top of the first one's freed row buffers and Arrow pages (main process peak 325 MiB)
RELEASE_GROWTH_BYTES = 16 << 20
# an inline phase's child that grew this much since it was forked runs no further rank: the ranks left go to a
# fresh child (``AssayLocalExecutor._run_inline_in_children``). A rank of the decide phase on set O grows its
# child by about 70 MiB, one of the dedup buckets' 15 ranks by under 1 MiB
CHILD_RECYCLE_BYTES = 32 << 20


def resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``); 0 where that cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _ProgressTap:
    """Counts documents (and text characters) that pass; rewrites progress/<rank>.json now and then
    (and then releases freed memory: `release_memory`)."""

    def __init__(self, logging_dir, rank: int):
        self.logging_dir, self.rank = logging_dir, rank

    def _write(self, docs: int, chars: int, done: bool) -> None:
        try:
            with self.logging_dir.open(f"progress/{self.rank:05d}.json", "w") as f:
                json.dump({"documents": docs, "chars": chars, "done": done}, f)
        except OSError:  # progress is best effort; the run never fails for it
            pass

    def __call__(self, data, rank: int = 0, world_size: int = 1):
        if data is None:
            return None
        return self._count(data)

    def _count(self, data):
        docs = chars = 0
        last = time.monotonic()
        for doc in data:
            docs += 1
            chars += len(getattr(doc, "text", "") or "")
            if docs % 32 == 0 and time.monotonic() - last > 1.0:
                self._write(docs, chars, False)
                release_memory()
                last = time.monotonic()
            yield doc
        self._write(docs, chars, True)


def _reader_prefix(pipeline: list) -> int:
    """How many leading steps are readers (the progress tap goes right after them)."""
    n = 0
    for step in pipeline:
        if "READER" not in str(getattr(step, "type", "")):
            break
        n += 1
    return n


def folder_bytes(paths: Sequence[str]) -> int | None:
    """Total size of the files under local folders; None when one is not a local path."""
    total = 0
    for p in paths:
        if "://" in str(p):
            return None
        for dirpath, _dirs, files in os.walk(p):
            for f in files:
                try:
                    total += os.stat(os.path.join(dirpath, f)).st_size
                except OSError:
                    pass
    return total


# modules a step's module imports only when the step runs (lazily, to keep other processes light), so a
# worker imported them at its first document; the forkserver preloads them with the step's module. Only
# modules that start no thread when imported (checked by
# tests/pipeline/test_inline_phases.py::test_forkserver_preload_starts_no_thread): the forkserver forks every
# worker, and a fork copies no thread. pandas (imported by pyarrow's first array) is left out: importing
# pyarrow starts jemalloc's background thread.
STEP_RUNTIME_MODULES: dict[str, tuple[str, ...]] = {
    "assay.stages.output.normalize": ("ftfy",),
    "assay.stages.web.quality": ("assay.classifiers.predict",),
}
# what every worker imports before its first task: the module of the task function (unpickled by dill),
# and the CLI the ``assay`` script imports (multiprocess's forkserver never preloads ``__main__`` itself:
# it asks for a ``main_path`` key that ``get_preparation_data`` does not provide, so each worker re-runs
# the script)
WORKER_MODULES = ("assay.pipeline.executors",)


def step_modules(pipelines: Sequence[Sequence[Any]]) -> list[str]:
    """The modules defining the steps of these pipelines (a forkserver preloads them), in first-use order,
    each followed by the modules it imports when its step runs (``STEP_RUNTIME_MODULES``)."""
    out: list[str] = []
    for pipeline in pipelines:
        for step in pipeline:
            for obj in (step, getattr(step, "inner", None)):  # SourceGate wraps a step
                mod = getattr(type(obj), "__module__", None) if obj is not None else None
                if mod and mod != "builtins" and mod not in out:
                    out.append(mod)
                    out.extend(m for m in STEP_RUNTIME_MODULES.get(mod, ()) if m not in out)
    return out


# pyarrow (every worker writing a signal store or shards imports it, about 0.25 CPU-s per worker process)
# starts no thread when pyarrow's jemalloc runs without its background thread (arrow allocates through
# mimalloc by default; its jemalloc only purges pages itself then, no allocation changes). So the
# forkserver, started with that setting, preloads it too, then ``assay.pipeline.lean_worker``: pyarrow told
# there is no pandas (its first array imported all of pandas in every worker: about 50 MiB each) and pandas'
# hash tables loaded without the pandas package (pipeline/lean.py)
ARROW_MODULES = ("pyarrow", "pyarrow.parquet", "assay.pipeline.lean_worker")
ARROW_JEMALLOC_ENV = "JE_ARROW_MALLOC_CONF"
ARROW_JEMALLOC_QUIET = "background_thread:false"
# the Arrow memory pool of the processes started after the forkserver preload is set (the forkserver, hence
# every worker): glibc's, as in the launching process (``lean.lean_launcher``). A signals worker's Arrow
# memory is the signal-store parts it writes; with arrow's default mimalloc those pages stayed with mimalloc,
# on top of the glibc heap that big pages had grown, while the system pool writes a part in memory freed by
# earlier pages (set L, a worker's peak: 196 -> 180 MiB). Same tables and files: only where their buffers live
ARROW_WORKER_POOL = "system"


def arrow_modules() -> list[str]:
    """``ARROW_MODULES`` when the processes started from now on run pyarrow's jemalloc without its
    background thread: sets ``JE_ARROW_MALLOC_CONF`` so unless the user set it otherwise (then none: a
    thread in the forkserver would be lost in every forked worker). Also has those processes' Arrow
    allocate through the system allocator (``ARROW_DEFAULT_MEMORY_POOL``, unless set already; see
    ``ARROW_WORKER_POOL``)."""
    os.environ.setdefault(ARROW_POOL_ENV, ARROW_WORKER_POOL)
    conf = os.environ.setdefault(ARROW_JEMALLOC_ENV, ARROW_JEMALLOC_QUIET)
    return list(ARROW_MODULES) if ARROW_JEMALLOC_QUIET in conf.replace(" ", "").split(",") else []


def worker_modules() -> list[str]:
    """``WORKER_MODULES``, and ``assay.pipeline.cli`` when this process runs the ``assay`` CLI."""
    return [*WORKER_MODULES, *(["assay.pipeline.cli"] if "assay.pipeline.cli" in sys.modules else [])]


_PRELOADED: list[str] = []


def preload_forkserver(modules: Sequence[str]) -> bool:
    """Have multiprocess's forkserver import ``modules`` (besides ``__main__``) when it starts, so each
    worker forked from it starts with them loaded instead of importing them again per worker and phase.
    Only before the forkserver runs (the first pool of the process); returns whether it was set."""
    from multiprocess import forkserver

    server = getattr(forkserver, "_forkserver", None)
    if server is None or getattr(server, "_forkserver_pid", None) is not None:
        return False
    wanted = ["__main__", *[m for m in modules if m != "__main__"]]
    if wanted != _PRELOADED:
        forkserver.set_forkserver_preload(wanted)
        _PRELOADED[:] = wanted
    return True


@contextmanager
def frozen_gc():
    """Run a task with the objects that exist when it starts (the imported modules, the unpickled pipeline)
    moved out of the garbage collector's sight (``gc.freeze``), and back when it ends (``gc.unfreeze``).
    A full collection walks every object it tracks; a worker's full collections mostly walked imported
    code that can never be garbage (about 0.1 CPU-s per worker task on bench_e2e). Objects the task
    creates are collected as before.

    Nested (an inline phase freezes for the phase, then each of its tasks asks again) it leaves the outer
    freeze as it is without asking the collector: ``gc.get_freeze_count()`` walks every frozen object
    (about 20 ms in a main process after its imports, paid by every task of an inline phase)."""
    import gc

    global _FROZEN_DEPTH
    if _FROZEN_DEPTH or gc.get_freeze_count():  # frozen already (by this function, or the process itself)
        yield
        return
    gc.freeze()
    _FROZEN_DEPTH += 1
    try:
        yield
    finally:
        _FROZEN_DEPTH -= 1
        gc.unfreeze()


_FROZEN_DEPTH = 0  # frozen_gc calls holding their own freeze (0 or 1) in this process


# modules the small phases' steps import when they run (the decisions and the output's manifest: polars,
# about 0.3 CPU-s per import): imported in the launching process before it forks the first child for such a
# phase, so that each child starts with them instead of importing them again. polars starts no pool thread
# when imported (its thread pool starts at the first query): a child forked then runs its queries with a
# pool of its own. In a process where a query has run already (polars' pool threads exist) no child is
# forked (``can_fork_lean``): a fork would copy none of the pool's threads.
INLINE_CHILD_MODULES = ("polars",)
# names (/proc/self/task/*/comm) of threads that a fork would lose while they could hold what a child needs:
# polars' query pool ("polars-0", ...) and its async runtimes
_UNFORKABLE_THREADS = ("polars-", "async-executor", "tokio-rt")
_UNFORKABLE_EXCEPT = ("polars-ooc-clea",)  # polars' spill-folder cleaner (idle: the runs spill nothing)


def _thread_names() -> list[str] | None:
    """Names of this process's threads (Linux); None where they cannot be read."""
    try:
        tasks = os.listdir("/proc/self/task")
        names = []
        for t in tasks:
            try:
                with open(f"/proc/self/task/{t}/comm") as f:
                    names.append(f.read().strip())
            except FileNotFoundError:  # a thread that ended meanwhile
                pass
        return names
    except OSError:
        return None


def can_fork_lean() -> bool:
    """Whether an inline phase can run in a forked child here: the system can fork, this process's threads
    can be read, and none of them is one a child would need (``_UNFORKABLE_THREADS``). Imports
    ``INLINE_CHILD_MODULES`` first (once; a module that is not installed is skipped)."""
    if not hasattr(os, "fork"):
        return False
    for name in INLINE_CHILD_MODULES:
        if name not in sys.modules:
            try:
                __import__(name)
            except ImportError:
                pass
    names = _thread_names()
    if names is None:
        return False
    return not any(n.startswith(_UNFORKABLE_THREADS) and not n.startswith(_UNFORKABLE_EXCEPT) for n in names)


def _in_forked_child(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a forked child; its return value (pickled through a pipe) here. An exception in the child
    is raised here as ``ChildTaskError`` with the child's type, message and traceback; the child exits with
    ``os._exit`` (no exit handlers of this process run twice). Ctrl-C here stops the child too."""
    import pickle
    import signal
    import traceback

    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 1
        try:
            os.close(read_fd)
            try:
                payload = pickle.dumps(("ok", fn()))
                code = 0
            except BaseException as e:  # noqa: BLE001 - reported to the parent
                payload = pickle.dumps(("error", type(e).__name__, str(e), traceback.format_exc()))
            with os.fdopen(write_fd, "wb") as f:
                f.write(payload)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
    except BaseException:  # Ctrl-C (or anything) while waiting: the child goes too
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except OSError:
            pass
        raise
    try:
        result = pickle.loads(data)
    except Exception:  # noqa: BLE001 - the child died before reporting
        result = None
    if result and result[0] == "ok":
        return result[1]
    if result:
        raise ChildTaskError(f"{result[1]}: {result[2]}\n(in the child process)\n{result[3]}")
    raise ChildTaskError(f"the child process ended with status {os.waitstatus_to_exitcode(status)} without a result")


class ChildTaskError(RuntimeError):
    """An inline phase's forked child raised (its type, message and traceback are in the message)."""


class AssayLocalExecutor(LocalPipelineExecutor):
    """``LocalPipelineExecutor`` whose tasks log to their files only (terminal: ``console_level``),
    write progress for the CLI, and leave Ctrl-C to the main process (which stops the pool).

    ``inline_inputs`` / ``inline_max_bytes``: when the phase's input folders hold less than that many
    bytes, its tasks run one after the other in this process (datatrove's ``workers=1`` path, without
    its multiprocessing manager): for small inputs a worker pool costs more than the work. With
    ``inline_in_child`` they do so in one child forked from this process for the phase (``_in_forked_child``),
    so that what the phase allocates goes away with the child."""

    console_level: str | None = None
    inline_inputs: list[str] | None = None
    inline_max_bytes: int = 0
    inline_in_child: bool = False
    ran_inline: bool = False
    ran_in_child: bool = False
    children_forked: int = 0  # children an inline phase ran in (``_run_inline_in_children``)

    def __getstate__(self):
        """What a pool's worker unpickles: the executor without ``assay_settings`` (the launching process's
        bookkeeping, a pydantic model: the worker would import pydantic, about 3 MiB, for nothing)."""
        state = dict(self.__dict__)
        state.pop("assay_settings", None)
        return state

    def _small_input(self) -> bool:
        if not self.inline_inputs or self.inline_max_bytes <= 0:
            return False
        size = folder_bytes(self.inline_inputs)
        return size is not None and size < self.inline_max_bytes

    def run(self):
        if self.workers != 1 and not self._small_input():
            return super().run()
        self.ran_inline = True
        if self.inline_in_child and can_fork_lean():
            self.ran_in_child = True
            return self._run_inline_in_children()
        return self._run_inline()

    def _inline_ranks_left(self) -> list[int] | None:
        """The ranks an inline phase still has to run; None (logged) when all are done already."""
        ranks = range(self.local_rank_offset, self.local_rank_offset + self.local_tasks)
        if all(map(self.is_rank_completed, ranks)):
            logger.info(f"Not doing anything as all {self.local_tasks} tasks have already been completed.")
            return None
        return list(self.get_incomplete_ranks(ranks))

    def _run_inline(self):
        """datatrove's ``workers == 1`` path (ranks in order, in this process), without the manager
        process it starts for a pool's queue and counters."""
        ranks = self._inline_ranks_left()
        if ranks is None:
            return None
        self.save_executor_as_json()
        stats, _ = self._run_ranks(ranks)
        return self._merge_inline_stats(stats)

    def _run_inline_in_children(self):
        """``_run_inline`` in children forked from this process: one for the phase, and a fresh one for the
        ranks left whenever a child has grown by ``CHILD_RECYCLE_BYTES`` since it started (``_run_ranks``).
        A child ends with everything its ranks left behind (their row buffers, freed pages a trim cannot hand
        back, library code touched once): the next rank starts from this process's size, not on top of the
        previous rank's (bench_e2e set O, decide phase: its second rank peaked 11 MiB above its first). Ranks
        that leave little (the dedup buckets' many small ranks) share one child."""
        ranks = self._inline_ranks_left()
        if ranks is None:
            return None
        self.save_executor_as_json()
        stats: list = []
        while ranks:
            todo = ranks
            done, ranks = _in_forked_child(lambda: self._run_ranks(todo, recycle_bytes=CHILD_RECYCLE_BYTES))
            stats.extend(done)
            self.children_forked += 1
        return self._merge_inline_stats(stats)

    def _run_ranks(self, ranks: list[int], recycle_bytes: int | None = None) -> tuple[list, list[int]]:
        """Run ``ranks`` in order in this process: (their stats, the ranks not run). With ``recycle_bytes``,
        stops after a rank once this process has grown by that much since the call (the rest is left to a
        fresh child)."""
        import gc
        import queue
        from copy import deepcopy

        self._launched = True
        ranks_q: queue.Queue = queue.Queue()
        ranks_q.put(0)
        pipeline = self.pipeline
        stats = []
        started_at = resident_bytes()
        last_release, released_at = time.monotonic(), started_at
        ranks = list(ranks)
        # the collection between ranks looks only at what the ranks created: this process's modules and
        # objects (polars, pyarrow, the recipe, ...) are frozen for the phase (a full collection of them cost
        # about 0.1 CPU-s each time)
        try:
            with frozen_gc():
                while ranks:
                    rank = ranks.pop(0)
                    self.pipeline = deepcopy(pipeline)
                    stats.append(self._launch_run_for_rank(rank, ranks_q))
                    self.pipeline = None  # the rank's steps and what they hold
                    if ranks and recycle_bytes is not None and resident_bytes() - started_at >= recycle_bytes:
                        break  # the rest in a fresh child: no release needed, this one ends
                    # at most once a second (thousands of tiny tasks must not pay a full collection each),
                    # or after a rank that grew the process by RELEASE_GROWTH_BYTES
                    if (time.monotonic() - last_release > 1.0
                            or resident_bytes() - released_at >= RELEASE_GROWTH_BYTES):
                        gc.collect()
                        release_memory()
                        last_release, released_at = time.monotonic(), resident_bytes()
                # and once when the phase ends: what its ranks freed (a rank's whole batch of signatures,
                # the decide phase's row buffers) goes back to the system before the next phase grows
                if recycle_bytes is None:
                    gc.collect()
                    release_memory()
        finally:
            self.pipeline = pipeline
        return stats, ranks

    def _merge_inline_stats(self, stats: list):
        from datatrove.utils.stats import PipelineStats

        merged = sum(stats, start=PipelineStats())
        with self.logging_dir.open("stats.json", "wt") as statsfile:
            merged.save_to_disk(statsfile)
        logger.success(merged.get_repr(f"All {self.local_tasks} tasks"))
        return merged

    def _run_for_rank(self, rank: int, local_rank: int = 0, node_rank: int = -1):
        import datatrove.executor.base as dt_base
        import datatrove.utils.logging as dt_logging
        import multiprocess
        import signal

        if multiprocess.current_process().name != "MainProcess":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        level = self.console_level

        def add_task_logger(logging_dir, rank, local_rank=0, node_rank=-1):
            logger.remove()
            logfile = logging_dir.open(f"logs/task_{rank:05d}.log", "w")
            if level:
                logger.add(sys.stderr, level=level if local_rank == 0 else "ERROR", format=_LOG_FORMAT)
            logger.add(logfile, colorize=False, level="DEBUG", format=_LOG_FORMAT)
            logger.info(f"Launching pipeline for {rank=}")
            return logfile

        saved = dt_base.add_task_logger, dt_logging.setup_default_logger
        dt_base.add_task_logger = add_task_logger
        dt_logging.setup_default_logger = lambda: _console_sink(level or "WARNING")
        n = _reader_prefix(self.pipeline)
        if n and not self.is_rank_completed(rank):
            self.pipeline = [*self.pipeline[:n], _ProgressTap(self.logging_dir, rank), *self.pipeline[n:]]
        try:
            with frozen_gc():
                return super()._run_for_rank(rank, local_rank, node_rank)
        finally:
            dt_base.add_task_logger, dt_logging.setup_default_logger = saved


def make_executor(
    kind: str,
    pipeline: list,
    *,
    tasks: int,
    workers: int,
    logging_dir: str,
    depends: PipelineExecutor | None = None,
    name: str,
    settings: dict | BaseModel | None = None,
    skip_completed: bool = True,
    inline_inputs: Sequence[str] | None = None,
) -> PipelineExecutor:
    """Build the datatrove executor for one phase.

    ``workers`` is the number of tasks running at the same time (local: worker processes; slurm:
    array throttle ``%N``; ray: concurrent Ray tasks); ``-1`` means as many as ``tasks``.
    ``depends`` is the executor of the previous phase (same kind). ``settings`` is validated with
    the kind's settings model (unknown keys are rejected). ``inline_inputs`` (local only): the phase's
    input folders; below ``LocalSettings.inline_max_input_mb`` its tasks run in this process.
    """
    from assay.pipeline.settings import LocalSettings, RaySettings, SlurmSettings, validate_settings

    cfg = validate_settings(kind, settings)
    if tasks < 1:
        raise ValueError(f"phase {name!r}: tasks must be >= 1, got {tasks}")
    if workers == 0 or workers < -1:
        raise ValueError(f"phase {name!r}: workers must be >= 1 or -1, got {workers}")
    workers = min(workers, tasks) if workers != -1 else -1
    logging_dir = str(logging_dir)

    if isinstance(cfg, LocalSettings):
        if depends is not None and not isinstance(depends, LocalPipelineExecutor):
            raise TypeError(f"phase {name!r}: a local phase must depend on a local phase")
        ex = AssayLocalExecutor(
            pipeline=pipeline,
            tasks=tasks,
            workers=workers,
            logging_dir=logging_dir,
            depends=depends,
            skip_completed=skip_completed,
            start_method=cfg.start_method,
            randomize_start_duration=cfg.randomize_start_duration,
        )
        ex.console_level = TASK_CONSOLE_LEVEL
        ex.inline_inputs = [str(p) for p in inline_inputs] if inline_inputs else None
        ex.inline_max_bytes = int(cfg.inline_max_input_mb * 2**20)
        ex.inline_in_child = cfg.inline_in_child
    elif isinstance(cfg, SlurmSettings):
        if depends is not None and not isinstance(depends, AssaySlurmExecutor):
            raise TypeError(f"phase {name!r}: a slurm phase must depend on a slurm phase")
        sbatch_args = dict(cfg.sbatch_args)
        if cfg.account:
            sbatch_args.setdefault("account", cfg.account)
        venv = cfg.venv_path if cfg.venv_path is not None else default_venv_activate()
        ex = AssaySlurmExecutor(
            pipeline=pipeline,
            tasks=tasks,
            time=cfg.time,
            partition=cfg.partition,
            cpus_per_task=cfg.cpus_per_task,
            mem_per_cpu_gb=cfg.mem_per_cpu_gb,
            workers=workers,
            job_name=f"{cfg.job_name}-{name}" if cfg.job_name else name,
            qos=cfg.qos or "",
            env_command=cfg.env_command,
            venv_path=None if cfg.env_command else venv,
            sbatch_args=sbatch_args,
            srun_args=dict(cfg.srun_args) or None,
            max_array_size=cfg.max_array_size,
            tasks_per_job=cfg.tasks_per_job,
            depends=depends,
            logging_dir=logging_dir,
            skip_completed=skip_completed,
            slurm_logs_folder=cfg.logs_dir,
            requeue=cfg.requeue,
        )
    elif isinstance(cfg, RaySettings):
        if depends is not None and not isinstance(depends, RayPipelineExecutor):
            raise TypeError(f"phase {name!r}: a ray phase must depend on a ray phase")
        ex = RayPipelineExecutor(
            pipeline=pipeline,
            tasks=tasks,
            workers=workers,
            depends=depends,
            skip_completed=skip_completed,
            logging_dir=logging_dir,
            cpus_per_task=cfg.cpus_per_task,
            mem_per_cpu_gb=cfg.mem_per_cpu_gb,
            gpus_per_task=cfg.gpus_per_task,
            ray_remote_kwargs=dict(cfg.ray_remote_kwargs) or None,
            tasks_per_job=cfg.tasks_per_job,
            time=cfg.time_limit_s,
        )
    else:  # pragma: no cover - validate_settings covers every kind
        raise AssertionError(kind)
    # bookkeeping for run_phases (plain attributes: they survive pickling to jobs/actors)
    ex.assay_phase = name
    ex.assay_kind = cfg.kind
    ex.assay_settings = cfg
    return ex


# --------------------------------------------------------------------------------------- running


def _kind_of(ex: PipelineExecutor) -> str:
    kind = getattr(ex, "assay_kind", None)
    if kind:
        return kind
    name = type(ex).__name__.lower()
    for k in EXECUTOR_KINDS:
        if k in name:
            return k
    raise TypeError(f"cannot tell the kind of executor {type(ex).__name__}")


def _phase_name(ex: PipelineExecutor, i: int) -> str:
    return getattr(ex, "assay_phase", "") or f"phase{i}"


def _check_phase(ex: PipelineExecutor, i: int, detail: str = "") -> None:
    incomplete = ex.get_incomplete_ranks(skip_completed=True)
    if incomplete:
        raise PhaseFailedError(_phase_name(ex, i), incomplete, ex.logging_dir.path, detail)


def _chain(executors: Sequence[PipelineExecutor]) -> list[PipelineExecutor]:
    """The phases to run, in order. A single executor stands for itself and its ``depends`` chain."""
    executors = list(executors)
    if len(executors) == 1:
        chain = [executors[0]]
        while getattr(chain[0], "depends", None) is not None:
            chain.insert(0, chain[0].depends)
        return chain
    return executors


PhaseEvent = Callable[[str, int, PipelineExecutor], None]


def prepare_steps(pipelines: Sequence[Sequence[Any]]) -> None:
    """Call ``prepare_run()`` once, in the launching process, on every step of the pipelines that has one
    (the decontamination step builds its cached index): work that each task would otherwise repeat on a
    cold cache, at the same time, on every worker (datatrove has no such hook).

    In a forked child where the system can fork: what a prepare builds (the decontamination index: about
    120 MiB on a cold cache) is written to its cache and needed by the tasks, not by this process, which
    otherwise kept that memory through the run (the launching process runs the small phases inline and was
    the run's largest). A child that fails leaves the prepares to this process, so errors raise here."""
    prepares = [p for pipeline in pipelines for step in pipeline if callable(p := getattr(step, "prepare_run", None))]
    if prepares and hasattr(os, "fork") and _prepare_in_child(prepares):
        return
    for prepare in prepares:
        prepare()


def _prepare_in_child(prepares: Sequence[Callable[[], Any]]) -> bool:
    """Call ``prepares`` in a forked child (``_in_forked_child``, as inline phases); whether it succeeded."""

    def call_all() -> None:
        for prepare in prepares:
            prepare()

    try:
        _in_forked_child(call_all)
    except ChildTaskError:
        return False
    return True


def run_phases(
    executors: Sequence[PipelineExecutor], *, wait: bool | None = None, on_phase: PhaseEvent | None = None
) -> list:
    """Run a chain of phases (all of the same kind) to completion; return per-phase stats.

    ``executors`` are in run order (or just the last one: its ``depends`` chain is followed).
    Finished tasks (completion markers) are skipped, so calling this again after a crash or a
    ``kill -9`` resumes the run. Raises ``PhaseFailedError`` when a phase has unfinished tasks.
    For Slurm, returns the submitted job ids per phase (``None`` for a phase with nothing left to
    do) and, unless ``wait`` is false (argument, else ``SlurmSettings.wait``), blocks until done.
    ``on_phase(event, index, executor)`` is called with "start" and "done" around each phase of a
    local or Ray chain (a Slurm chain is submitted at once: no per-phase events).
    """
    chain = _chain(executors)
    if not chain:
        return []
    prepare_steps([ex.pipeline for ex in chain])
    kinds = {_kind_of(ex) for ex in chain}
    if len(kinds) != 1:
        raise ValueError(f"all phases of a run must use the same executor, got {sorted(kinds)}")
    kind = kinds.pop()
    if kind == "slurm":
        return _run_slurm(chain, wait=wait)
    if kind == "ray":
        return _run_ray(chain, on_phase)
    cfg = getattr(chain[-1], "assay_settings", None)
    from assay.pipeline.settings import LocalSettings

    if isinstance(cfg, LocalSettings) and cfg.preload and cfg.start_method == "forkserver":
        preload_forkserver([*worker_modules(), *step_modules([ex.pipeline for ex in chain]), *arrow_modules()])
    return _run_sequential(chain, on_phase)


def _run_sequential(chain: list[PipelineExecutor], on_phase: PhaseEvent | None = None) -> list:
    """The one local run loop: phases in order, each checked before the next, so a failed task stops
    the run with its phase and logs named (datatrove's own ``depends`` loop would wait on it forever)."""
    results = []
    for i, ex in enumerate(chain):
        ex.depends = None  # ordering is this loop's job
        if on_phase:
            on_phase("start", i, ex)
        try:
            results.append(ex.run())
        except Exception as e:  # a task raised: name the phase, its unfinished tasks and its logs
            incomplete = ex.get_incomplete_ranks(skip_completed=True)
            raise PhaseFailedError(_phase_name(ex, i), incomplete, ex.logging_dir.path, f"{type(e).__name__}: {e}") from e
        _check_phase(ex, i)
        if on_phase:
            on_phase("done", i, ex)
    return results


def _run_ray(chain: list[PipelineExecutor], on_phase: PhaseEvent | None = None) -> list:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the ray executor needs Ray: pip install 'assay[ray]'") from e
    from assay.pipeline.settings import RaySettings

    cfg = getattr(chain[-1], "assay_settings", None) or RaySettings()
    if all(not ex.get_incomplete_ranks() for ex in chain):
        return [None] * len(chain)  # nothing to do: do not start or join a Ray cluster
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if cfg.runtime_env:
            kwargs["runtime_env"] = cfg.runtime_env
        if cfg.address:
            ray.init(address=cfg.address, **kwargs)
        else:
            ray.init(num_cpus=cfg.num_cpus, **kwargs)
        started = True
    try:
        return _run_sequential(chain, on_phase)
    finally:
        if started and cfg.shutdown:
            ray.shutdown()


# ----------------------------------------------------------------------------------------- slurm

_SLURM_TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "SPECIAL_EXIT",
    "REVOKED",
}


def _squeue_states(job_id: str) -> list[tuple[str, str]] | None:
    """(state, reason) of every element of a job (array); None when Slurm no longer knows it."""
    proc = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T|%r"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return None
        raise RuntimeError(f"squeue failed for job {job_id}: {proc.stderr.strip()}")
    rows = [line.split("|", 1) for line in proc.stdout.splitlines() if line.strip()]
    return [(s.strip().split()[0] if s.strip() else "", r.strip()) for s, r in rows] or None


def _job_finished(job_id: str) -> tuple[bool, str]:
    """(finished, note). A job pending on a dependency that can never be met counts as finished."""
    states = _squeue_states(job_id)
    if states is None:
        return True, "gone from squeue"
    if all(s in _SLURM_TERMINAL for s, _ in states):
        bad = sorted({s for s, _ in states if s != "COMPLETED"})
        return True, ",".join(bad)
    if any("DependencyNeverSatisfied" in r for _, r in states):
        return True, "DependencyNeverSatisfied"
    return False, ""


def wait_for_slurm_jobs(
    job_ids: Sequence[str], *, poll_interval_s: float = 5.0, timeout_s: float | None = None
) -> dict[str, str]:
    """Poll ``squeue`` until every job (array) has left the running/pending states.

    Returns ``{job_id: note}`` where note lists non-COMPLETED final states ("" = all completed).
    Raises ``TimeoutError`` after ``timeout_s`` (the jobs keep running).
    """
    pending = [str(j) for j in job_ids]
    notes: dict[str, str] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while pending:
        for job in list(pending):
            done, note = _job_finished(job)
            if done:
                notes[job] = note
                pending.remove(job)
        if not pending:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"slurm jobs {', '.join(pending)} still queued/running after {timeout_s:.0f}s")
        time.sleep(poll_interval_s)
    return notes


def _scancel(job_ids: Sequence[str]) -> None:
    if job_ids and shutil.which("scancel"):
        subprocess.run(["scancel", *map(str, job_ids)], capture_output=True)


def _cancel_orphans(job_names: Sequence[str]) -> None:
    """Cancel this user's jobs with these names that wait on a dependency that failed (datatrove's
    stats-merging job of a failed phase, on clusters without DependencyParameters=kill_invalid_depend)."""
    if not job_names or not shutil.which("squeue"):
        return
    proc = subprocess.run(
        ["squeue", "-h", "-u", str(os.getuid()), "-t", "PD", "-n", ",".join(job_names), "-o", "%A|%r"],
        capture_output=True,
        text=True,
    )
    stuck = [row.split("|")[0] for row in proc.stdout.split() if row.endswith("|DependencyNeverSatisfied")]
    _scancel(stuck)


_JOBS_FILE = "slurm_jobs.json"


def _record_job(ex: PipelineExecutor, job_id: str) -> None:
    try:
        with ex.logging_dir.open(_JOBS_FILE, "r") as f:
            jobs = json.load(f)
    except (FileNotFoundError, ValueError):
        jobs = []
    jobs.append({"job_id": job_id, "submitted": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    with ex.logging_dir.open(_JOBS_FILE, "w") as f:
        json.dump(jobs, f, indent=1)


def _active_recorded_jobs(ex: PipelineExecutor) -> list[str]:
    """Recorded jobs of this phase still queued/running. Jobs stuck on a dependency that can never
    be met are cancelled (clusters without kill_invalid_depend keep them pending forever)."""
    try:
        with ex.logging_dir.open(_JOBS_FILE, "r") as f:
            jobs = [str(j["job_id"]) for j in json.load(f)]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return []
    active = []
    for job in jobs:
        done, note = _job_finished(job)
        if done and note == "DependencyNeverSatisfied":
            _scancel([job])
        elif not done:
            active.append(job)
    return active


def active_jobs_in(logging_dir: str | Path) -> list[str]:
    """Slurm jobs recorded in a phase's logging dir (``slurm_jobs.json``) that are still queued or
    running; [] without a record or without ``squeue``. Whatever executor the next run uses, those
    jobs may still be writing into the run folder."""
    path = Path(logging_dir) / _JOBS_FILE
    if not path.is_file() or shutil.which("squeue") is None:
        return []
    try:
        jobs = [str(j["job_id"]) for j in json.loads(path.read_text())]
    except (ValueError, KeyError, TypeError):
        return []
    return [j for j in jobs if not _job_finished(j)[0]]


def _run_slurm(chain: list[PipelineExecutor], *, wait: bool | None) -> list:
    if "SLURM_ARRAY_TASK_ID" in os.environ:
        raise RuntimeError("refusing to submit a run from inside a Slurm array task; run it from a login node")
    if shutil.which("sbatch") is None:
        raise RuntimeError("the slurm executor needs 'sbatch' on PATH (run on a Slurm login node)")
    from assay.pipeline.settings import SlurmSettings

    cfg: SlurmSettings = getattr(chain[-1], "assay_settings", None) or SlurmSettings()
    if wait is None:
        wait = cfg.wait
    # launch_job() wires --dependency=afterok:<id of the previous phase>. A phase whose jobs from
    # an earlier submission (recorded in <logging_dir>/slurm_jobs.json) are still queued or running
    # is re-attached instead of submitted twice: rerunning the command after the submitting process
    # died, or while a `wait: false` chain is still running, never duplicates work.
    for ex in chain:
        if ex.job_id:
            continue
        active = _active_recorded_jobs(ex)
        if active:
            logger.info(f"phase {ex.job_name}: re-attaching to queued/running slurm job(s) {', '.join(active)}")
            ex.job_id = active[-1]
            continue
        ex.launch_job()
        if ex.job_id not in (None, -1):
            _record_job(ex, str(ex.job_id))
    job_ids = [None if ex.job_id in (None, -1) else str(ex.job_id) for ex in chain]
    if not wait:
        return job_ids
    deadline = None if cfg.timeout_s is None else time.monotonic() + cfg.timeout_s
    for i, (ex, job) in enumerate(zip(chain, job_ids)):
        note = ""
        if job is not None:
            remaining = None if deadline is None else max(1.0, deadline - time.monotonic())
            note = wait_for_slurm_jobs([job], poll_interval_s=cfg.poll_interval_s, timeout_s=remaining)[job]
        try:
            _check_phase(ex, i, detail=f"slurm job {job} {note}".strip() + f"; slurm logs in {ex.slurm_logs_folder}")
        except PhaseFailedError:
            _scancel([j for j in job_ids[i + 1 :] if j])
            _cancel_orphans([e.job_name for e in chain[i:]])
            raise
    return job_ids
