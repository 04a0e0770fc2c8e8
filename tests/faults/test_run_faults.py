"""Run-layer faults of issue 15, each with inputs generated at test time.

  item 1   an output folder inside an input folder (or an input inside the output, or an output
           inside another run's folder) is refused with one line, exit 2, before anything is written;
  item 5   SIGTERM / SIGHUP to the main process stop the workers and the multiprocessing manager
           before the lock is released; no pymp-* temp folder is left; the next run resumes cleanly;
  item 8   a decide phase with many tasks: ranks never touch each other's staging files (50, 400 and
           2,000 tasks, repeatedly);
  items 12, 13  recipes load through a safe YAML loader: duplicate keys are refused with the key and
           its line; an alias bomb fails fast with bounded memory (`assay run` and `assay describe`).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from assay.pipeline.recipe import RecipeError, load_recipe

ROOT = Path(__file__).resolve().parents[2]


def _code_source(paths: list[Path]) -> dict:
    return {"name": "code", "reader": {"kind": "code_reader_v1", "params": {"paths": [str(p) for p in paths]}},
            "steps": [{"kind": "code_signals_v1"}]}


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------------- item 1: paths
def test_output_inside_input_is_refused(tmp_path, fg):
    data = tmp_path / "D"
    fg.good_code(data, n=2)
    recipe = fg.write_recipe(tmp_path / "r.yaml", [_code_source([data])])
    out = data / "runs" / "r1"
    proc = fg.assay("run", str(recipe), "--output", str(out), timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_line_error(proc)
    assert "inside input folder" in line and str(data.resolve()) in line
    assert not (data / "runs").exists(), "nothing may be written into the input before the refusal"


def test_input_inside_output_is_refused(tmp_path, fg):
    out = tmp_path / "out"
    data = out / "inputs"
    fg.good_code(data, n=2)
    recipe = fg.write_recipe(tmp_path / "r.yaml", [_code_source([data])])
    proc = fg.assay("run", str(recipe), "--output", str(out), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "is inside output folder" in _one_line_error(proc)
    assert sorted(p.name for p in out.iterdir()) == ["inputs"]


def test_output_inside_another_run_is_refused(tmp_path, fg):
    data = tmp_path / "in"
    fg.good_code(data, n=2)
    recipe = fg.write_recipe(tmp_path / "r.yaml", [_code_source([data])])
    first = tmp_path / "run1"
    ok = fg.assay("run", str(recipe), "--output", str(first), timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    proc = fg.assay("run", str(recipe), "--output", str(first / "logs" / "nested"), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "inside the run folder" in _one_line_error(proc)
    assert not (first / "logs" / "nested").exists()


# ------------------------------------------------------------------------------ item 5: SIGTERM
SLOW_STEP = '''
import os, time
from pathlib import Path
from datatrove.pipeline.base import PipelineStep


class SlowStep(PipelineStep):
    """Sleeps per document and records the pid of the worker running it (test only)."""
    name = "slow"

    def __init__(self, delay: float = 0.0, pid_dir: str = ""):
        super().__init__()
        self.delay, self.pid_dir = delay, pid_dir

    def run(self, data, rank=0, world_size=1):
        if self.pid_dir:
            Path(self.pid_dir).mkdir(parents=True, exist_ok=True)
            (Path(self.pid_dir) / str(os.getpid())).write_text(str(rank))
        for doc in data:
            time.sleep(self.delay)
            yield doc
'''

DRIVER = '''
import sys
from assay.pipeline.registry import REGISTRY, StageKind
from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe

REGISTRY["slow_test_v1"] = StageKind("slow_test_v1", "assay_test_slow_step:SlowStep", "signal", "test only")
if __name__ == "__main__":  # forkserver workers import this file as __mp_main__
    run_recipe(load_recipe(sys.argv[1]), sys.argv[2])
    print("RUN-DONE")
'''


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def _descendants(pid: int) -> list[int]:
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))):
            parents[int(d.name)] = st[1]
    out, frontier = [], {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier}
        out.extend(frontier)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_stops_workers_before_the_lock_is_released(tmp_path, fg, signum):
    from assay.stages.common.store import read_signals

    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "assay_test_slow_step.py").write_text(SLOW_STEP)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    data = tmp_path / "in"
    names = fg.good_code(data / "a", n=20) + fg.good_code(data / "b", n=20)
    pid_dir = tmp_path / "pids"

    def recipe(delay: float) -> Path:
        src = _code_source([data / "a", data / "b"])
        src["steps"].append({"kind": "slow_test_v1", "params": {"delay": delay, "pid_dir": str(pid_dir)}})
        return fg.write_recipe(tmp_path / "r.yaml", [src], tasks=2, dedup=True)

    mptmp = tmp_path / "mptmp"
    mptmp.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mod), os.environ.get("PYTHONPATH", "")]),
           "TMPDIR": str(mptmp)}
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(driver), str(recipe(1.0)), str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(pid_dir.glob("*"))) < 2 and proc.poll() is None:
        time.sleep(0.2)
    workers = [int(p.name) for p in pid_dir.glob("*")]
    assert len(workers) == 2 and proc.poll() is None, "both signal tasks should be running"
    family = _descendants(proc.pid)  # workers, multiprocessing manager, forkserver
    assert set(workers) <= set(family) and len(family) >= 3  # + the manager (and the forkserver)
    assert (out / ".assay.lock").exists()

    os.kill(proc.pid, signum)
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not stop within 60 s of {signal.Signals(signum).name}")
    assert proc.returncode != 0
    # every process of the run (workers, multiprocessing manager, forkserver) is gone ...
    time.sleep(0.5)
    assert [p for p in family if _alive(p)] == []
    # ... the lock was released by a clean exit (its file removed), and no multiprocessing temp folder stays
    assert not (out / ".assay.lock").exists()
    assert list(mptmp.glob("pymp-*")) == []
    completions = out / "logs" / "signals" / "completions"
    assert not completions.exists() or len(list(completions.iterdir())) < 2, "the signal came too late to test"

    # the next run resumes cleanly and loses nothing
    rerun = subprocess.run([sys.executable, str(driver), str(recipe(0.0)), str(out)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0 and "RUN-DONE" in rerun.stdout, rerun.stderr[-3000:]
    assert read_signals(out / "signals").height == len(names)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["totals"]["documents"] + manifest["excluded"]["documents"] == len(names)
    assert list(mptmp.glob("pymp-*")) == []


# ------------------------------------------------------------------- item 8: many decide tasks
@pytest.fixture(scope="module")
def small_run(tmp_path_factory, fg):
    """A finished 1-task run over 5 documents, re-tiered below with many decide tasks."""
    base = tmp_path_factory.mktemp("many")
    fg.good_code(base / "in", n=5)
    recipe = fg.write_recipe(base / "r.yaml", [_code_source([base / "in"])], tasks=1)
    from assay.pipeline.runner import run_recipe

    run_recipe(load_recipe(recipe), base / "run")
    return base


def _retier(base: Path, name: str, tasks: int) -> Path:
    path = base / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "retier_from": str(base / "run"),
        "executor": {"kind": "local", "tasks": tasks, "workers": 2},
    }))
    return path


@pytest.mark.parametrize("tasks,repeats", [
    (50, 3),
    pytest.param(400, 2, marks=pytest.mark.slow),
    pytest.param(2000, 1, marks=pytest.mark.slow),
])
def test_many_decide_tasks_never_touch_each_others_staging(small_run, tasks, repeats):
    import polars as pl

    from assay.pipeline.build import build_phases
    from assay.pipeline.runner import run_recipe

    recipe = load_recipe(_retier(small_run, f"t{tasks}", tasks))
    decide = next(p for p in build_phases(recipe, small_run / "x") if p.name == "decide")
    writer = decide.steps[-1]
    assert not Path(writer.staging_dir).resolve().is_relative_to(Path(writer.output_folder).resolve())
    for i in range(repeats):
        out = small_run / f"retier-{tasks}-{i}"
        result = run_recipe(recipe, out)
        assert [p.name for p in result.phases] == ["decide", "finalize"]
        kept = pl.concat([pl.read_parquet(p) for p in (out / "output").rglob("shard-*.parquet")])
        assert kept.height == 5
        assert len(list((out / "logs" / "decide" / "completions").iterdir())) == tasks
        assert not (out / ".staging" / "decide").exists() or not any((out / ".staging" / "decide").iterdir())


# ------------------------------------------------------------------------- items 12, 13: YAML
BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    + ["name: bomb", "sources: []"]
) + "\n"


def test_duplicate_key_is_refused_with_key_and_line(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(textwrap.dedent("""\
        name: dup
        retier_from: /nowhere
        decisions:
          rules: []
        output: {seed: 1}
        decisions:
          drop_tiers: [low]
        """))
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    msg = str(err.value)
    assert "duplicate key 'decisions'" in msg and ":" in msg and "line 6" in msg and "line 3" in msg
    assert "\n" not in msg
    # nested mappings too
    path.write_text("name: n\nretier_from: /x\noutput:\n  seed: 1\n  seed: 2\n")
    with pytest.raises(RecipeError, match=r"line 5: duplicate key 'seed'"):
        load_recipe(path)


@pytest.mark.parametrize("command", ["run", "describe"])
def test_alias_bomb_fails_fast_with_bounded_memory(tmp_path, command):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 700  # 9 levels of 9 aliases each: 9**9 (387 million) leaves when expanded

    def limit():  # 1 GiB of address space: expanding the bomb would need tens of GiB
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "assay.pipeline.cli", command, str(path), "--output",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          preexec_fn=limit)
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = _one_line_error(proc)
    assert "alias" in line and str(path) in line
    assert elapsed < 30
    assert not (tmp_path / "out").exists()


def test_plain_aliases_still_load(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(textwrap.dedent("""\
        name: ok
        sources: [{name: code, reader: {kind: code_reader_v1, params: {paths: [/nowhere]}}}]
        output: &out {seed: 3, row_group_rows: 100}
        x_unused: *out
        """))
    with pytest.raises(RecipeError, match="unknown key 'x_unused'"):  # aliases load; the key is then checked
        load_recipe(path)
