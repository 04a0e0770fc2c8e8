"""Light phases in this process: a local phase whose run-local input is small runs its tasks one after
the other in the calling process (no worker pool, no multiprocessing manager), with the same tasks,
completion markers, stats and outputs; a run gives the same shards either way; the forkserver preloads
the modules of the run's steps."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter

from assay.pipeline.executors import AssayLocalExecutor, folder_bytes, make_executor, run_phases, step_modules


def _inputs(folder: Path, n_files: int = 4, per_file: int = 5) -> Path:
    import gzip

    folder.mkdir(parents=True)
    for f in range(n_files):
        with gzip.open(folder / f"{f}.jsonl.gz", "wt") as fh:
            for i in range(per_file):
                fh.write(json.dumps({"id": f"{f}-{i}", "text": f"document {f} {i} " * 5}) + "\n")
    return folder


def _phase(tmp: Path, inputs: Path, name: str, *, max_mb: float, workers: int = 2):
    return make_executor(
        "local", [JsonlReader(str(inputs)), JsonlWriter(str(tmp / name / "out"), output_filename="${rank}.jsonl.gz")],
        tasks=4, workers=workers, logging_dir=str(tmp / name / "logs"), name=name,
        settings={"inline_max_input_mb": max_mb}, inline_inputs=[str(inputs)],
    )


def _texts(folder: Path) -> list[str]:
    import gzip

    out = []
    for p in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as fh:
            out += [json.loads(line)["text"] for line in fh]
    return out


def test_small_input_runs_in_process_with_the_same_outputs(tmp_path):
    inputs = _inputs(tmp_path / "in")
    assert 0 < folder_bytes([str(inputs)]) < 2**20
    inline = _phase(tmp_path, inputs, "inline", max_mb=1)
    pool = _phase(tmp_path, inputs, "pool", max_mb=0)
    assert isinstance(inline, AssayLocalExecutor)
    run_phases([inline])
    run_phases([pool])
    assert inline.ran_inline and not pool.ran_inline
    assert sorted(_texts(tmp_path / "inline" / "out")) == sorted(_texts(tmp_path / "pool" / "out"))
    assert len(_texts(tmp_path / "inline" / "out")) == 20
    for name in ("inline", "pool"):
        logs = tmp_path / name / "logs"
        assert sorted(p.name for p in (logs / "completions").iterdir()) == [f"{r:05d}" for r in range(4)]
        assert json.loads((logs / "stats.json").read_text())


def test_input_above_the_limit_uses_the_pool(tmp_path):
    inputs = _inputs(tmp_path / "in")
    ex = _phase(tmp_path, inputs, "big", max_mb=folder_bytes([str(inputs)]) / 2**20 / 2)
    run_phases([ex])
    assert not ex.ran_inline
    assert len(_texts(tmp_path / "big" / "out")) == 20


def test_inline_phase_resumes_only_missing_tasks(tmp_path):
    inputs = _inputs(tmp_path / "in")
    ex = _phase(tmp_path, inputs, "p", max_mb=1)
    run_phases([ex])
    logs, out = tmp_path / "p" / "logs", tmp_path / "p" / "out"
    kept = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    (logs / "completions" / "00002").unlink()
    (out / "00002.jsonl.gz").unlink()
    again = _phase(tmp_path, inputs, "p", max_mb=1)
    assert again.get_incomplete_ranks() == [2]
    run_phases([again])
    assert again.ran_inline and again.get_incomplete_ranks() == []
    for name, mtime in kept.items():
        if name != "00002.jsonl.gz":
            assert (out / name).stat().st_mtime_ns == mtime  # finished tasks untouched
    assert len(_texts(out)) == 20


def test_step_modules_include_gated_steps():
    from assay.stages.common.gate import SourceGate
    from assay.stages.web.heuristics import WebHeuristicSignals

    mods = step_modules([[JsonlReader("/nonexistent"), SourceGate(WebHeuristicSignals(), "web"), lambda d, r, w: d]])
    assert "datatrove.pipeline.readers.jsonl" in mods
    assert "assay.stages.web.heuristics" in mods and "assay.stages.common.gate" in mods
    assert "builtins" not in mods


def test_step_modules_add_the_modules_a_step_imports_when_it_runs():
    from assay.stages.output.normalize import TextNormalizer

    mods = step_modules([[TextNormalizer()]])
    assert mods.index("assay.stages.output.normalize") < mods.index("ftfy")


_WORKER_IMPORTS_PROBE = """
import json, pickle, sys
from assay.pipeline.executors import STEP_RUNTIME_MODULES, WORKER_MODULES, arrow_modules
from assay.stages.web.extract import HtmlExtractor
from assay.stages.web.quality import WebQualityScore
for m in [*WORKER_MODULES, "assay.pipeline.cli", *STEP_RUNTIME_MODULES, *[x for v in STEP_RUNTIME_MODULES.values() for x in v],
          *arrow_modules()]:
    __import__(m)
pickle.loads(sys.stdin.buffer.read())  # a local phase's executor, as a pool's worker gets it
print(json.dumps(sorted(m for m in ("pydantic", "typer", "rich", "assay.pipeline.commands") if m in sys.modules)))
"""


def test_a_pool_worker_imports_no_cli_and_no_pydantic(tmp_path):
    """What every worker of a local pool holds (the forkserver's preloaded modules, the re-run ``assay`` script,
    the unpickled executor) leaves out the commands' typer and rich and the settings' and classifier training's
    pydantic (about 7 MiB of resident memory per worker, bench_e2e set O)."""
    import os
    import pickle
    import subprocess
    import sys

    ex = make_executor("local", [JsonlReader(str(tmp_path))], tasks=2, workers=2, logging_dir=str(tmp_path / "logs"),
                       name="w")
    assert ex.assay_settings.kind == "local"  # kept here, not sent to the workers
    out = subprocess.run([sys.executable, "-c", _WORKER_IMPORTS_PROBE], input=pickle.dumps(ex), capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert json.loads(out.stdout.decode().strip().splitlines()[-1]) == []


_THREADS_PROBE = """
import json, os, sys
from assay.pipeline.executors import STEP_RUNTIME_MODULES, WORKER_MODULES, arrow_modules
def threads():
    return len(os.listdir("/proc/self/task"))
for m in STEP_RUNTIME_MODULES:
    __import__(m)
before = threads()
for m in [*WORKER_MODULES, "assay.pipeline.cli", *[x for v in STEP_RUNTIME_MODULES.values() for x in v]]:
    __import__(m)
had_pyarrow = "pyarrow" in sys.modules
arrow = arrow_modules()  # what the forkserver preloads besides, in the environment it starts with
for m in arrow or ["pyarrow"]:
    __import__(m)
import pyarrow as pa
print(json.dumps([before, threads(), had_pyarrow, arrow, pa.default_memory_pool().backend_name]))
"""


def _probe_threads(env_conf: str | None, pool: str | None = None):
    import os
    import subprocess
    import sys

    from assay.pipeline.executors import ARROW_JEMALLOC_ENV, ARROW_POOL_ENV

    env = {k: v for k, v in os.environ.items() if k not in (ARROW_JEMALLOC_ENV, ARROW_POOL_ENV)}
    if env_conf is not None:
        env[ARROW_JEMALLOC_ENV] = env_conf
    if pool is not None:
        env[ARROW_POOL_ENV] = pool
    out = subprocess.run([sys.executable, "-c", _THREADS_PROBE], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_forkserver_preload_starts_no_thread():
    """The modules the forkserver preloads beyond the steps' own start no thread: it forks every worker,
    and a fork copies no thread. pyarrow (and the worker settings, pipeline/lean.py) are among them only with pyarrow's jemalloc set to run
    without its background thread (``arrow_modules`` sets that for the processes it starts; a user's own
    setting is kept, and then they are not preloaded: with the thread on, importing pyarrow starts it)."""
    from assay.pipeline.executors import ARROW_MODULES

    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc (Linux)")
    before, after, had_pyarrow, arrow, _pool = _probe_threads(None)
    assert not had_pyarrow
    assert arrow == list(ARROW_MODULES) and "assay.pipeline.lean_worker" in arrow
    assert after == before
    before, after, had_pyarrow, arrow, _pool = _probe_threads("background_thread:true")
    assert arrow == [] and after > before  # the user's setting: pyarrow's import starts the thread


def test_forkserver_workers_allocate_arrow_memory_through_the_system_pool():
    """The processes started after ``arrow_modules`` (the forkserver, so every worker) load pyarrow with the
    system allocator as their default pool (``ARROW_WORKER_POOL``: a signal-store part is then written in the
    glibc memory freed by earlier pages instead of pages mimalloc keeps beside it); a user's own
    ``ARROW_DEFAULT_MEMORY_POOL`` is kept. Fails if pyarrow stops reading the variable when it loads."""
    from assay.pipeline.executors import ARROW_WORKER_POOL

    assert ARROW_WORKER_POOL == "system"
    *_, pool = _probe_threads(None)
    assert pool == "system"
    *_, pool = _probe_threads(None, pool="jemalloc")
    assert pool == "jemalloc"


def test_text_normalizer_imports_ftfy_when_it_runs():
    """``STEP_RUNTIME_MODULES`` names what the step imports when it runs (not at module import)."""
    import subprocess
    import sys

    probe = ("import sys\nfrom datatrove.data import Document\nfrom assay.stages.output.normalize import TextNormalizer\n"
             "a = 'ftfy' in sys.modules\nlist(TextNormalizer().run(iter([Document(text='caf\\u00c3\\u00a9', id='1')])))\n"
             "print(a, 'ftfy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["False", "True"]


@pytest.mark.slow
def test_run_gives_the_same_shards_with_and_without_in_process_phases(tmp_path):
    """The default recipe on the embedded web sample: every phase in a pool vs the light phases in
    process: the same documents and texts in the same shards, the same exclusions."""
    from assay.pipeline.recipe import load_recipe
    from assay.pipeline.runner import run_recipe

    def run(out: Path, mb: float):
        rec = load_recipe(None, [f"executor.settings.inline_max_input_mb={mb}"])
        data = rec.to_dict()
        data["sources"] = [s for s in data["sources"] if s["name"] == "web"]
        rec = type(rec).model_validate(data)
        run_recipe(rec, out)
        rows = {}
        for sub in ("output", "excluded"):
            for p in sorted((out / sub).rglob("*.parquet")):
                t = pq.read_table(p, columns=["id", "text"]).to_pylist()
                rows[str(p.relative_to(out))] = sorted((r["id"], r["text"]) for r in t)
        return rows

    pooled = run(tmp_path / "pool", 0)
    inline = run(tmp_path / "inline", 8)
    assert pooled and pooled == inline


def test_loguru_library_folders_computed_once_per_process():
    """Each task adds two loguru sinks; loguru expands every sysconfig scheme per sink. The executors module
    caches those folders: same answer as loguru's own computation, computed once, sinks still work."""
    import sys

    from loguru import _better_exceptions as be
    from loguru import logger

    import assay.pipeline.executors  # noqa: F401  (installs the cache)

    cached = be.ExceptionFormatter._get_lib_dirs
    assert getattr(cached, "_assay_cached", False)
    first = cached()
    assert first == cached() and first is not cached()  # a fresh list each time, same folders
    assert first == cached._assay_original()  # loguru's own computation
    h = logger.add(sys.stderr, level="ERROR")
    logger.remove(h)


def test_tasks_run_with_the_existing_objects_frozen_and_unfrozen_after(tmp_path):
    """A task runs with the objects that existed at its start frozen (out of the collector's full
    collections), the objects it creates collectable (a reference cycle made by a step is collected),
    and the collector as before once it ends; a process that froze objects itself keeps its freeze."""
    import gc

    from datatrove.data import Document

    from assay.pipeline.executors import frozen_gc, make_executor

    seen = {}

    class Cycle:
        pass

    def step(data, rank=0, world_size=1):
        seen["frozen"] = gc.get_freeze_count()
        c = Cycle()
        c.me = c
        import weakref

        ref = weakref.ref(c)
        del c
        gc.collect()
        seen["cycle_collected"] = ref() is None
        yield Document(text="x", id="1")

    ex = make_executor("local", [step], tasks=1, workers=1, logging_dir=str(tmp_path / "logs"), name="t",
                       settings={"inline_in_child": False})  # (what the task saw is read in this process)
    assert gc.get_freeze_count() == 0
    ex.run()
    assert seen["frozen"] > 0 and seen["cycle_collected"]
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        n = gc.get_freeze_count()
        with frozen_gc():
            assert gc.get_freeze_count() == n
        assert gc.get_freeze_count() == n
    finally:
        gc.unfreeze()


def test_inline_phase_asks_the_collector_for_its_freeze_once(tmp_path, monkeypatch):
    """``gc.get_freeze_count()`` walks every frozen object (about 20 ms in a main process after its imports):
    an in-process phase asks it once, when it freezes for the phase, not again for each of its tasks, whose
    objects stay frozen as the phase's; the collector is as before once the phase ends."""
    import gc

    calls = []
    real = gc.get_freeze_count

    def counted():
        calls.append(1)
        return real()

    seen = []

    def step(data, rank=0, world_size=1):
        seen.append(real())
        yield from data or ()

    inputs = _inputs(tmp_path / "in")
    ex = make_executor(
        "local", [JsonlReader(str(inputs)), step], tasks=4, workers=2, logging_dir=str(tmp_path / "logs"), name="t",
        settings={"inline_max_input_mb": 1, "inline_in_child": False}, inline_inputs=[str(inputs)],
    )
    monkeypatch.setattr(gc, "get_freeze_count", counted)
    assert real() == 0
    run_phases([ex])
    assert ex.ran_inline and len(seen) == 4 and min(seen) > 0  # every task ran with the objects frozen
    assert len(calls) == 1
    assert real() == 0


def _release_log(tmp_path, monkeypatch, grow_mib: int) -> tuple[list[int], list[int]]:
    """Run a 4-task inline phase whose every task keeps ``grow_mib`` MiB alive; return the tasks done at each
    ``release_memory`` call and the tasks run."""
    import assay.pipeline.executors as ex_mod

    done: list[int] = []
    released: list[int] = []
    held: list[bytearray] = []

    def step(data, rank=0, world_size=1):
        yield from data or ()
        if grow_mib:
            held.append(bytearray(b"\x01") * (grow_mib << 20))  # written: resident, not just mapped
        done.append(rank)

    real = ex_mod.release_memory
    monkeypatch.setattr(ex_mod, "release_memory", lambda: (released.append(len(done)), real()))
    inputs = _inputs(tmp_path / "in")
    ex = make_executor(
        "local", [JsonlReader(str(inputs)), step], tasks=4, workers=2, logging_dir=str(tmp_path / "logs"), name="t",
        settings={"inline_max_input_mb": 1, "inline_in_child": False}, inline_inputs=[str(inputs)],
    )
    run_phases([ex])
    assert ex.ran_inline
    return released, done


def test_inline_phase_releases_memory_after_a_task_that_grew_the_process(tmp_path, monkeypatch):
    """A task that left the process RELEASE_GROWTH_BYTES bigger is followed by a release (the decide phase's
    ranks take well under the once-a-second pace), and every inline phase releases once when it ends."""
    from assay.pipeline.executors import RELEASE_GROWTH_BYTES, resident_bytes

    assert resident_bytes() > 0
    grow = (RELEASE_GROWTH_BYTES >> 20) + 8
    released, done = _release_log(tmp_path, monkeypatch, grow)
    assert len(done) == 4
    assert released == [1, 2, 3, 4, 4]  # after each growing task, then once at the phase's end


def test_inline_phase_of_small_tasks_releases_memory_once_at_its_end(tmp_path, monkeypatch):
    released, done = _release_log(tmp_path, monkeypatch, 0)
    assert len(done) == 4
    assert released[-1] == 4 and len(released) <= 2  # the end; a second only if a task took over a second


def _pid_step(data, rank=0, world_size=1):
    """Passes documents on with the id of the process that ran the task in their metadata."""
    import os

    for doc in data or ():
        doc.metadata["pid"] = os.getpid()
        yield doc


def _pids(folder: Path) -> set[int]:
    import gzip

    out = set()
    for p in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as fh:
            out |= {json.loads(line)["metadata"]["pid"] for line in fh}
    return out


_FRESH_ENV = "ASSAY_TEST_FRESH_PROCESS"


def _fork_here_or_in_a_fresh_process(test_name: str) -> bool:
    """Whether this test process can fork an inline phase's child (then the test runs here). Where it cannot
    because an earlier test started polars' thread pool in it (the whole suite), the test runs again in a
    fresh pytest process, which must pass: never a skip that hides the test in CI. Returns False when the
    fresh process ran it (the caller returns)."""
    import os
    import subprocess
    import sys

    from assay.pipeline.executors import can_fork_lean

    if can_fork_lean():
        return True
    if not hasattr(os, "fork"):
        pytest.skip("this platform has no fork()")
    assert not os.environ.get(_FRESH_ENV), "a fresh process cannot fork an inline phase's child"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{test_name}"],
                          env={**os.environ, _FRESH_ENV: "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    return False


def test_inline_phase_runs_in_a_forked_child_with_the_same_outputs(tmp_path):
    """By default an inline phase's tasks run in one child forked for the phase (what they allocate goes away
    with it): the same documents, completions and stats as in this process, the merged stats returned here."""
    import os

    if not _fork_here_or_in_a_fresh_process("test_inline_phase_runs_in_a_forked_child_with_the_same_outputs"):
        return
    inputs = _inputs(tmp_path / "in")
    runs = {}
    for name, child in (("child", True), ("here", False)):
        ex = make_executor(
            "local", [JsonlReader(str(inputs)), _pid_step, JsonlWriter(str(tmp_path / name / "out"),
                                                                      output_filename="${rank}.jsonl.gz")],
            tasks=4, workers=2, logging_dir=str(tmp_path / name / "logs"), name=name,
            settings={"inline_max_input_mb": 1, "inline_in_child": child}, inline_inputs=[str(inputs)],
        )
        stats = run_phases([ex])[0]
        assert ex.ran_inline and ex.ran_in_child == child and ex.get_incomplete_ranks() == []
        runs[name] = (ex, stats)
    child_pids, here_pids = _pids(tmp_path / "child" / "out"), _pids(tmp_path / "here" / "out")
    assert here_pids == {os.getpid()}
    assert len(child_pids) == 1 and os.getpid() not in child_pids  # one child for the phase's 4 tasks
    assert runs["child"][0].children_forked == 1
    assert sorted(_texts(tmp_path / "child" / "out")) == sorted(_texts(tmp_path / "here" / "out"))
    assert len(_texts(tmp_path / "child" / "out")) == 20
    child_stats, here_stats = runs["child"][1], runs["here"][1]
    assert type(child_stats) is type(here_stats)
    assert [type(st).__name__ for st in child_stats.stats] == [type(st).__name__ for st in here_stats.stats]
    assert json.loads((tmp_path / "child" / "logs" / "stats.json").read_text())


_HELD: list = []


def _growing_pid_step(data, rank=0, world_size=1):
    """``_pid_step`` that then keeps CHILD_RECYCLE_BYTES + 8 MiB alive in its process (written: resident)."""
    from assay.pipeline.executors import CHILD_RECYCLE_BYTES

    yield from _pid_step(data, rank, world_size)
    _HELD.append(bytearray(b"\x01") * (CHILD_RECYCLE_BYTES + (8 << 20)))


def test_inline_phase_gives_the_tasks_after_one_that_grew_its_child_a_fresh_child(tmp_path):
    """A child whose task left it CHILD_RECYCLE_BYTES bigger runs no further task: the next one starts in a
    fresh child forked from this process (not on top of what the previous task left); the same documents,
    completions and merged stats. (Tasks that leave little share one child: the test above.)"""
    import os

    if not _fork_here_or_in_a_fresh_process(
            "test_inline_phase_gives_the_tasks_after_one_that_grew_its_child_a_fresh_child"):
        return
    inputs = _inputs(tmp_path / "in")
    ex = make_executor(
        "local", [JsonlReader(str(inputs)), _growing_pid_step, JsonlWriter(str(tmp_path / "out"),
                                                                          output_filename="${rank}.jsonl.gz")],
        tasks=4, workers=2, logging_dir=str(tmp_path / "logs"), name="g",
        settings={"inline_max_input_mb": 1}, inline_inputs=[str(inputs)],
    )
    stats = run_phases([ex])[0]
    assert ex.ran_in_child and ex.children_forked == 4 and ex.get_incomplete_ranks() == []
    pids = _pids(tmp_path / "out")
    assert len(pids) == 4 and os.getpid() not in pids  # one child per task
    assert not _HELD  # the memory stayed in the children
    assert len(_texts(tmp_path / "out")) == 20
    assert stats.get_repr("x") and json.loads((tmp_path / "logs" / "stats.json").read_text())


def _failing_step(data, rank=0, world_size=1):
    for doc in data or ():
        if rank == 1:
            raise ValueError(f"no document {doc.id} wanted")
        yield doc


def test_inline_phase_failing_in_its_child_fails_the_phase_here(tmp_path):
    from assay.pipeline.executors import PhaseFailedError

    if not _fork_here_or_in_a_fresh_process("test_inline_phase_failing_in_its_child_fails_the_phase_here"):
        return
    inputs = _inputs(tmp_path / "in")
    ex = make_executor(
        "local", [JsonlReader(str(inputs)), _failing_step], tasks=4, workers=2, logging_dir=str(tmp_path / "logs"),
        name="f", settings={"inline_max_input_mb": 1}, inline_inputs=[str(inputs)],
    )
    with pytest.raises(PhaseFailedError) as err:
        run_phases([ex])
    assert ex.ran_in_child
    assert "ValueError: no document" in str(err.value) and err.value.incomplete == [1, 2, 3]
    assert sorted(p.name for p in (tmp_path / "logs" / "completions").iterdir()) == ["00000"]


_POLARS_POOL_PROBE = """
import json
from assay.pipeline.executors import can_fork_lean
before = can_fork_lean()  # (imports polars: no pool thread yet)
import polars as pl
pl.DataFrame({"a": [1, 2, 2]}).lazy().group_by("a").agg(pl.len()).collect()  # starts polars' pool
print(json.dumps([before, can_fork_lean()]))
"""


def test_no_child_is_forked_once_polars_pool_runs_here():
    """polars' thread pool starts with its first query; a child forked after that would have none of its
    threads: such a process runs inline phases in itself."""
    import subprocess
    import sys

    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc (Linux)")
    pytest.importorskip("polars")
    out = subprocess.run([sys.executable, "-c", _POLARS_POOL_PROBE], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [True, False]
