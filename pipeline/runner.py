"""Run a recipe: checks before any work, phases on a datatrove executor, a summary at the end.

Phase-level reruns: `<run>/phases.json` records, per phase, a hash of the recipe settings its outputs
depend on (`assay.pipeline.build.PHASE_GROUPS`). On a rerun of the same output directory:
  * unchanged phase, all tasks done -> reused; some tasks missing -> resumed (finished tasks skipped);
  * changed phase (decisions, dedup or output settings) -> its logs and outputs are removed and it
    reruns in place on the stored signals, and so does every later phase;
  * changed signals (sources, steps, tasks) -> the earlier run moves to `superseded/<hash-12>/`.
Executor settings (`kind`, `workers`, Slurm/Ray options) are in no hash. `RunResult.reuse` says, per
phase, what was done and why; the runner never prints (callers get `on_phase` events).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from assay.pipeline.build import (
    HASH_GROUPS,
    Phase,
    RunLayout,
    build_phases,
    check_inputs,
    check_kinds,
    group_hashes,
    input_paths,
)
from assay.pipeline.executors import PhaseFailedError
from assay.pipeline.recipe import Recipe, RecipeError

RunFailed = PhaseFailedError  # a phase left tasks unfinished; the message names the phase and its logs

STATE_FILE = "phases.json"
STATE_VERSION = 1
GROUP_LABELS = {
    "signals": "sources, steps or tasks",
    "dedup": "dedup settings",
    "decisions": "decisions",
    "output": "output settings",
    "pack": "plan, pack or repository-document settings",
}


class RunInterrupted(KeyboardInterrupt):
    """SIGTERM / SIGHUP reached the run: workers were stopped, then the lock was released."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


@dataclass
class PhaseResult:
    name: str
    tasks: int
    seconds: float
    skipped: bool
    stats: list[dict] = field(default_factory=list)


@dataclass
class PhaseDecision:
    """What the runner does with one phase of a run directory, and why."""

    phase: str
    action: str  # "run" (new) | "reuse" (done, unchanged) | "resume" (unchanged, tasks missing) | "rerun" (changed)
    reason: str

    def line(self) -> str:
        return f"{self.phase}: {self.action} ({self.reason})"


@dataclass
class RunResult:
    run_dir: Path
    recipe_hash: str
    phases: list[PhaseResult]
    manifest: dict | None
    reuse: list[PhaseDecision] = field(default_factory=list)
    superseded: Path | None = None


def check_output_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".assay-write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise RecipeError(f"output directory is not writable: {out} ({e.strerror or e})") from None


def apply_cli_overrides(recipe: Recipe, *, executor: str | None, workers: int | None, tasks: int | None) -> Recipe:
    data = recipe.to_dict()
    if executor:
        data["executor"]["kind"] = executor
    if workers:
        data["executor"]["workers"] = workers
    if tasks:
        data["executor"]["tasks"] = tasks
    return Recipe.model_validate(data)


RUN_MARKERS = ("recipe.sha256", STATE_FILE, ".assay.lock")  # a finished run, or one still starting


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output_placement(recipe: Recipe, out: Path) -> None:
    """Refuse an output folder inside an input folder (the run's own files would be read back as
    data), an input inside the output folder, and an output inside another run's folder."""
    from assay.pipeline.inputs import local_path

    out = out.resolve()
    for url_or_path in input_paths(recipe):
        inp = local_path(url_or_path)  # a URL of another file system (memory://, s3://) cannot overlap the output
        if inp is None:
            continue
        inp = inp.resolve()
        if _inside(out, inp):
            raise RecipeError(f"output folder {out} is inside input folder {inp}; choose an output outside every input")
        if _inside(inp, out):
            raise RecipeError(f"input {inp} is inside output folder {out}; choose an output outside every input")
    for parent in out.parents:
        if any((parent / m).is_file() for m in RUN_MARKERS):
            raise RecipeError(f"output folder {out} is inside the run folder {parent}; choose an output outside it")


def prepare(recipe: Recipe, output: Path) -> tuple[Path, list[Phase]]:
    """Every check that can fail before work starts: kinds, parameters, inputs, output, recipe hash."""
    check_kinds(recipe)
    check_inputs(recipe)
    run_dir = Path(output).resolve()
    check_output_placement(recipe, run_dir)
    check_output_dir(run_dir)
    phases = build_phases(recipe, run_dir)
    return run_dir, phases


def _write_recipe(recipe: Recipe, run_dir: Path) -> str:
    digest = recipe.digest()
    (run_dir / "recipe.resolved.yaml").write_text(yaml.safe_dump(recipe.to_dict(), sort_keys=False))
    (run_dir / "recipe.sha256").write_text(digest + "\n")
    return digest


def _make_executors(recipe: Recipe, phases: list[Phase], run_dir: Path) -> list[Any]:
    from assay.pipeline.executors import make_executor

    executors = []
    prev = None
    for ph in phases:
        ex = make_executor(
            recipe.executor.kind,
            ph.steps,
            tasks=ph.tasks,
            workers=min(recipe.executor.workers, ph.tasks),
            logging_dir=str(run_dir / "logs" / ph.name),
            depends=prev,
            name=f"assay-{recipe.name}-{ph.name}",
            settings=recipe.executor.settings,
            inline_inputs=ph.inputs if ph.name != "signals" else None,
        )
        ex.assay_phase = ph.name  # errors name the phase as the run layout does (the job name keeps the prefix)
        executors.append(ex)
        prev = ex
    return executors


def read_phase_stats(run_dir: Path, phase: str) -> list[dict]:
    p = run_dir / "logs" / phase / "stats.json"
    if not p.exists():
        return []
    return json.loads(p.read_text())


SUPERSEDED = "superseded"


def supersede_run(run_dir: Path) -> Path | None:
    """Move the run in `run_dir` to `<run_dir>/superseded/<old-hash-12>/` so a recipe with other
    signals starts fresh and outputs never mix. Returns where it went (None: nothing to move)."""
    hash_file = run_dir / "recipe.sha256"
    if not hash_file.exists():
        return None
    old = hash_file.read_text().strip()
    dest = run_dir / SUPERSEDED / old[:12]
    n = 1
    while dest.exists():
        n += 1
        dest = run_dir / SUPERSEDED / f"{old[:12]}-{n}"
    dest.mkdir(parents=True)
    for entry in run_dir.iterdir():
        if entry.name in (SUPERSEDED, ".assay.lock") or entry.name.startswith(".assay-write-test"):
            continue
        os.replace(entry, dest / entry.name)
    return dest


def read_state(run_dir: Path) -> dict | None:
    try:
        state = json.loads((run_dir / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return state if isinstance(state, dict) and state.get("version") == STATE_VERSION else None


def _write_state(run_dir: Path, recipe: Recipe, phases: list[Phase]) -> None:
    from assay.pipeline.manifest import write_json_atomically

    write_json_atomically(
        {"version": STATE_VERSION, "groups": group_hashes(recipe), "phases": {p.name: p.digest for p in phases},
         "tasks": {p.name: p.tasks for p in phases}},
        run_dir / STATE_FILE,
    )


def supersede_changed_run(recipe: Recipe, run_dir: Path) -> Path | None:
    """Move the earlier run aside when its signals cannot be reused (sources, steps, tasks changed),
    when it predates phase hashes and its recipe differs, or when it has increments and anything
    changed (increments are built on the base run as it was). Returns where it went, or None."""
    hash_file = run_dir / "recipe.sha256"
    if not hash_file.exists():
        return None
    state = read_state(run_dir)
    if state is None:
        changed = hash_file.read_text().strip() != recipe.digest()
    else:
        groups = group_hashes(recipe)
        old = state.get("groups", {})
        changed = old.get("signals") != groups["signals"] or (
            (run_dir / "increments").exists() and any(old.get(g) != groups[g] for g in HASH_GROUPS)
        )
    if not changed:
        return None
    refuse_if_jobs_active(run_dir, what="start a run with other signals here")
    return supersede_run(run_dir)


def _changed_groups(old: dict, new: dict, groups: tuple[str, ...]) -> list[str]:
    return [GROUP_LABELS[g] for g in groups if old.get(g) != new.get(g)]


def reconcile_phases(recipe: Recipe, run_dir: Path, phases: list[Phase], executors: list[Any]) -> list[PhaseDecision]:
    """Decide, per phase, reuse / resume / rerun from the recorded hashes; remove the logs and outputs
    of every phase that reruns (so no stale shard or completion marker survives), then record the
    new hashes."""
    state = read_state(run_dir) or {}
    old_phases, old_groups = state.get("phases", {}), state.get("groups", {})
    new_groups = group_hashes(recipe)
    layout = RunLayout(run_dir)
    decisions: list[PhaseDecision] = []
    for ph, ex in zip(phases, executors):
        old = old_phases.get(ph.name)
        if old == ph.digest:
            todo = ex.get_incomplete_ranks()
            if todo:
                decisions.append(PhaseDecision(ph.name, "resume", f"unchanged; {len(todo)} of {ph.tasks} task(s) left"))
            else:
                decisions.append(PhaseDecision(ph.name, "reuse", "unchanged, all tasks done"))
        elif old is None:
            decisions.append(PhaseDecision(ph.name, "run", "new run" if not state else "phase not in the earlier run"))
        else:
            changed = _changed_groups(old_groups, new_groups, ph.groups) or ["inputs"]
            decisions.append(PhaseDecision(ph.name, "rerun", " and ".join(changed) + " changed"))
    if state:  # only a folder known to hold this kind of run has its phase outputs removed
        stale = [d.phase for d in decisions if d.action in ("run", "rerun")]
        refuse_if_jobs_active(run_dir, stale, "rerun these phases with other settings")
        for name in stale:
            for path in [layout.logs / name, *layout.phase_outputs(name)]:
                if path.is_dir():
                    shutil.rmtree(path)
                elif path.exists():
                    path.unlink()
    _write_state(run_dir, recipe, phases)
    return decisions


def refuse_if_jobs_active(run_dir: Path, phases: list[str] | None = None, what: str = "change this run") -> None:
    """Slurm jobs outlive the command that submitted them: never remove or move files they still write."""
    from assay.pipeline.executors import active_jobs_in

    logs = run_dir / "logs"
    names = phases if phases is not None else sorted(p.name for p in logs.iterdir()) if logs.is_dir() else []
    busy = {name: jobs for name in names if (jobs := active_jobs_in(logs / name))}
    if busy:
        listed = "; ".join(f"{k}: {', '.join(v)}" for k, v in busy.items())
        raise RecipeError(f"slurm jobs of the earlier run are still queued/running ({listed}); "
                          f"wait for them or scancel them before you {what}")


@contextmanager
def stop_on_signals(signums: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Turn SIGTERM / SIGHUP into `RunInterrupted` in the main thread, so the executor's `with Pool`
    and `finally` blocks stop the workers and the multiprocessing manager, and the lock (held by an
    outer `with`) is released only after that. A forked worker that inherited the handler dies at once.
    Further signals while stopping are ignored. Outside the main thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    stopping = []

    def handler(signum, frame):
        if os.getpid() != owner:  # a forked child: behave as if no handler were installed
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if stopping:
            return
        stopping.append(signum)
        raise RunInterrupted(signum)

    previous = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


RUN_TMP = ".tmp"  # the run's temporary folder: multiprocessing's pymp-* folders and workers' tempfiles


def _mp_modules() -> Iterator[tuple[Any, Any, Any]]:
    """(util, process, forkserver) of ``multiprocessing`` and of ``multiprocess`` (datatrove's fork of it)."""
    import importlib

    for name in ("multiprocessing", "multiprocess"):
        try:
            yield tuple(importlib.import_module(f"{name}.{m}") for m in ("util", "process", "forkserver"))
        except ImportError:
            continue


def _enter_mp_tempdir() -> list[Any]:
    """Make multiprocessing create its next ``pymp-*`` folder under the current ``tempfile.tempdir``: forget
    the folder it cached for this process (kept, still used by what lives there; removed at exit as before).
    Returns the cached values, for :func:`_leave_mp_tempdir`."""
    saved = []
    for _util, process, _fs in _mp_modules():
        config = process.current_process()._config
        saved.append(config.get("tempdir"))
        config["tempdir"] = None
    return saved


def _leave_mp_tempdir(tmp: Path, saved: list[Any]) -> None:
    """Stop what this run started inside ``tmp`` (a forkserver listens on a socket there), remove the
    ``pymp-*`` folder made there now (not at interpreter exit, when it is gone) and restore the cached one."""
    inside = str(tmp) + os.sep
    for (util, process, forkserver), old in zip(_mp_modules(), saved):
        server = getattr(forkserver, "_forkserver", None)
        address = getattr(server, "_forkserver_address", None)
        if isinstance(address, str) and address.startswith(inside):
            try:
                server._stop()
            except Exception:  # noqa: BLE001 - already gone
                pass
        config = process.current_process()._config
        cached = config.get("tempdir")
        if cached and str(cached).startswith(inside):
            for fin in list(getattr(util, "_finalizer_registry", {}).values()):
                if getattr(fin, "_callback", None) is util._remove_temp_dir and fin._args[1:] == (cached,):
                    fin._args = (lambda path, **_kw: shutil.rmtree(path, ignore_errors=True), cached)
                    fin()  # removes the folder now and unregisters itself
        config["tempdir"] = old


_MAX_TMP_CHARS = 72  # multiprocessing's sockets live at <tmp>/pymp-XXXXXXXX/listener-XXXXXXXX (+32 chars);
# a Unix socket path holds at most 107


def run_tmp_dir(run_dir: Path) -> Path | None:
    """The run's temporary folder: ``<run>/.tmp``; for a run folder whose path is too long for the Unix socket
    paths under it, ``<system temp>/assay-<10 hex of the run folder's path>`` (a name fixed per run folder, so
    the next run there still finds and removes what a killed run left); None when even that is too long (the
    processes then keep the system temp folder, as before)."""
    import hashlib

    tmp = Path(run_dir) / RUN_TMP
    if len(str(tmp)) <= _MAX_TMP_CHARS:
        return tmp
    digest = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:10]
    tmp = Path(tempfile.gettempdir()) / f"assay-{digest}"
    return tmp if len(str(tmp)) <= _MAX_TMP_CHARS else None


def clear_run_tmp(run_dir: Path) -> None:
    """Remove the run's temporary folder (what a killed run left there)."""
    shutil.rmtree(Path(run_dir) / RUN_TMP, ignore_errors=True)
    if (tmp := run_tmp_dir(run_dir)) is not None:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def run_tmp(run_dir: Path, *, enabled: bool = True) -> Iterator[Path | None]:
    """Point every temporary folder of the run's processes into ``<run>/.tmp`` while the run executes.

    ``tempfile.tempdir`` and ``TMPDIR`` are set before any executor starts, so multiprocessing's ``pymp-*``
    folders (the manager's and forkserver's sockets, made in this process) and the workers' own temp files land
    there; a run killed with ``kill -9`` leaves them in its own folder, never in the system temp folder, and the
    next run in that folder removes them (:func:`clear_run_tmp`). A clean end (or an exception) removes the
    folder and restores the previous settings.

    Only for the local executor (`enabled`): Ray puts its own session sockets under the temp folder (a run
    folder's path can exceed a Unix socket's 107 bytes there), and Slurm jobs inherit the environment on other
    nodes, where the folder must not be removed under them."""
    clear_run_tmp(run_dir)
    tmp = run_tmp_dir(run_dir) if enabled else None
    if tmp is None:
        yield None
        return
    tmp.mkdir(parents=True)
    saved_tempdir, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = str(tmp)
    os.environ["TMPDIR"] = str(tmp)
    saved_mp = _enter_mp_tempdir()  # a pymp folder cached by an earlier run of this process lies elsewhere
    try:
        yield tmp
    finally:
        _leave_mp_tempdir(tmp, saved_mp)
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        clear_run_tmp(run_dir)


def _known_inputs(run_dir: Path) -> set[tuple[str, str]]:
    known: set[tuple[str, str]] = set()
    manifests = [run_dir / "manifest.json", *sorted((run_dir / "increments").glob("*/manifest.json"))]
    for m in manifests:
        if m.exists():
            for e in json.loads(m.read_text()).get("inputs", []):
                if e.get("sha256"):
                    known.add((str(Path(e["path"]).resolve()), e["sha256"]))
    return known


def plan_increment(recipe: Recipe, run_dir: Path) -> Recipe | None:
    """For a completed run whose inputs grew: a recipe over only the new (or changed) input files,
    deduplicated against the indexes of the run and its earlier increments. None when nothing is new."""
    from assay.pipeline.build import resolve_value
    from assay.pipeline.inputs import expand_inputs
    from assay.pipeline.manifest import file_sha256

    if recipe.retier_from or not (run_dir / "manifest.json").exists():
        return None
    known = _known_inputs(run_dir)
    data = recipe.to_dict()
    sources = []
    for src in data["sources"]:
        params = resolve_value(src["reader"]["params"])
        paths = params.get("paths") or []
        paths = [paths] if isinstance(paths, str) else paths
        new = [
            str(f) for f in expand_inputs([Path(p) for p in paths])
            if (str(f.resolve()), file_sha256(f)) not in known
        ]
        if new:
            src["reader"]["params"] = {**src["reader"]["params"], "paths": new}
            sources.append(src)
    if not sources:
        return None
    data["sources"] = sources
    indexes = [run_dir / "dedup" / "clusters" / "index", *sorted((run_dir / "increments").glob("*/dedup/clusters/index"))]
    data["dedup"]["index_from"] = [*data["dedup"]["index_from"], *[str(p) for p in indexes if p.exists()]]
    data["name"] = f"{recipe.name}-increment"
    return Recipe.model_validate(data)


def _merge_increment_manifest(run_dir: Path, inc_dir: Path) -> None:
    """The run's manifest lists each increment (its inputs, shards and totals) beside the first run's."""
    from assay.pipeline.manifest import write_json_atomically

    top = json.loads((run_dir / "manifest.json").read_text())
    inc = json.loads((inc_dir / "manifest.json").read_text())
    rel = inc_dir.relative_to(run_dir)
    entry = {
        "path": str(rel),
        "recipe_sha256": inc.get("recipe_sha256"),
        "inputs": inc.get("inputs", []),
        "shards": [{**s, "path": str(rel / s["path"])} for s in inc.get("shards", [])],
        "totals": inc.get("totals", {}),
    }
    incs = [i for i in top.get("increments", []) if i["path"] != entry["path"]] + [entry]
    top["increments"] = incs
    grand = dict(top.get("totals", {}))
    base = top.get("base_totals") or dict(grand)
    top["base_totals"] = base
    for k, v in base.items():
        if isinstance(v, (int, float)):
            grand[k] = v + sum(i["totals"].get(k, 0) or 0 for i in incs)
    top["totals"] = grand
    write_json_atomically(top, run_dir / "manifest.json")


PhaseCallback = Callable[[str, Phase, int, int], None]


def run_recipe(
    recipe: Recipe,
    output: Path,
    *,
    on_phase: PhaseCallback | None = None,
    incremental: bool = True,
) -> RunResult:
    """Run (or resume, or extend, or partly rerun) a recipe in `output`.

    Same recipe, same inputs: completed tasks are skipped. Same recipe, more input files: only the
    new files are processed, in `output/increments/NNNN/`, deduplicated against the earlier indexes,
    and the manifest lists the new shards beside the old ones. Changed decisions / dedup / output
    settings: the phases that depend on them rerun in place (see the module docstring). Changed
    signals: the earlier run is moved to `output/superseded/<old-hash-12>/` and the new recipe starts
    a fresh run (no mixing).

    `on_phase(event, phase, i, n)` events: "superseded" (phase.name = where the old run went),
    "plan" (once per phase before any work: phase.describe[-1] is the decision line), "start", "done".
    """
    run_dir, phases = prepare(recipe, output)
    from assay.pipeline.lock import run_lock

    with run_lock(run_dir), stop_on_signals():
        clear_run_tmp(run_dir)  # a killed run's temp folder: never moved aside with the run
        moved = supersede_changed_run(recipe, run_dir)
        if moved is not None and on_phase:
            on_phase("superseded", Phase(str(moved), [], 0), 0, 0)
        increment = plan_increment(recipe, run_dir) if incremental else None
        if increment is not None:
            n = len(list((run_dir / "increments").glob("[0-9]*"))) + 1
            inc_dir = run_dir / "increments" / f"{n:04d}"
            inc_dir.mkdir(parents=True, exist_ok=True)
            with run_tmp(run_dir, enabled=recipe.executor.kind == "local"):
                result = _run_phases(increment, inc_dir, build_phases(increment, inc_dir), on_phase)
            _merge_increment_manifest(run_dir, inc_dir)
            result.manifest = json.loads((run_dir / "manifest.json").read_text())
            result.superseded = moved
            return result
        with run_tmp(run_dir, enabled=recipe.executor.kind == "local"):
            result = _run_phases(recipe, run_dir, phases, on_phase)
        result.superseded = moved
        return result


def _run_phases(recipe: Recipe, run_dir: Path, phases: list[Phase], on_phase: PhaseCallback | None) -> RunResult:
    from assay.pipeline.executors import run_phases

    executors = _make_executors(recipe, phases, run_dir)
    if on_phase:  # where this run's phases log (an increment runs in increments/NNNN/)
        on_phase("run_dir", Phase(str(run_dir), [], 0), 0, len(phases))
    decisions = reconcile_phases(recipe, run_dir, phases, executors)
    digest = _write_recipe(recipe, run_dir)
    if on_phase:
        for i, (ph, d) in enumerate(zip(phases, decisions)):
            on_phase("plan", Phase(ph.name, [], ph.tasks, [d.line()]), i, len(phases))
    by_name = {ph.name: ph for ph in phases}
    times: dict[str, float] = {}
    todo = {ph.name: bool(ex.get_incomplete_ranks()) for ph, ex in zip(phases, executors)}

    def event(kind: str, i: int, ex: Any) -> None:
        name = phases[i].name
        if kind == "start":
            times[name] = time.perf_counter()
        else:
            times[name] = time.perf_counter() - times[name]
        if kind == "done" and name == "signals":  # ids are unique by construction; this is the loud backstop
            from assay.stages.common.ids import DuplicateIdError, check_unique_ids

            try:
                check_unique_ids(run_dir / "signals")
            except DuplicateIdError as e:
                raise RunFailed(f"phase 'signals' wrote duplicate document ids: {e}") from e
        if on_phase:
            on_phase(kind, by_name[name], i, len(phases))

    t0 = time.perf_counter()
    run_phases(executors, on_phase=event)
    total = time.perf_counter() - t0
    results = [
        PhaseResult(ph.name, ph.tasks, times.get(ph.name, total), not todo[ph.name], read_phase_stats(run_dir, ph.name))
        for ph in phases
    ]
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    return RunResult(run_dir, digest, results, manifest, decisions)


def describe(recipe: Recipe, output: Path) -> dict[str, Any]:
    """What a run would do, without running anything."""
    check_kinds(recipe)
    phases = build_phases(recipe, Path(output).resolve())
    return {
        "recipe": recipe.to_dict(),
        "hash": recipe.digest(),
        "phases": [{"name": p.name, "tasks": p.tasks, "steps": p.describe, "hash": p.digest} for p in phases],
    }
