"""Run a recipe: checks before any work, phases on a datatrove executor, a summary at the end."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from assay.pipeline.build import Phase, build_phases, check_inputs, check_kinds
from assay.pipeline.recipe import Recipe, RecipeError


class RunFailed(RuntimeError):
    """A phase left tasks unfinished; the message names the phase and where its logs are."""


@dataclass
class PhaseResult:
    name: str
    tasks: int
    seconds: float
    skipped: bool
    stats: list[dict] = field(default_factory=list)


@dataclass
class RunResult:
    run_dir: Path
    recipe_hash: str
    phases: list[PhaseResult]
    manifest: dict | None


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


def prepare(recipe: Recipe, output: Path) -> tuple[Path, list[Phase]]:
    """Every check that can fail before work starts: kinds, parameters, inputs, output, recipe hash."""
    check_kinds(recipe)
    check_inputs(recipe)
    run_dir = Path(output).resolve()
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
        )
        executors.append(ex)
        prev = ex
    return executors


def read_phase_stats(run_dir: Path, phase: str) -> list[dict]:
    p = run_dir / "logs" / phase / "stats.json"
    if not p.exists():
        return []
    return json.loads(p.read_text())


SUPERSEDED = "superseded"


def supersede_changed_run(recipe: Recipe, run_dir: Path) -> Path | None:
    """A run directory that holds a run of another recipe: move that run to
    `<run_dir>/superseded/<old-hash-12>/` so the new recipe starts fresh and outputs never mix.
    Returns where the old run went, or None when there was nothing to move."""
    hash_file = run_dir / "recipe.sha256"
    if not hash_file.exists():
        return None
    old = hash_file.read_text().strip()
    if old == recipe.digest():
        return None
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
    from assay.pipeline.finalize import expand_inputs
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


def run_recipe(
    recipe: Recipe,
    output: Path,
    *,
    on_phase: Callable[[str, Phase, int, int], None] | None = None,
    incremental: bool = True,
) -> RunResult:
    """Run (or resume, or extend) a recipe in `output`.

    Same recipe, same inputs: completed tasks are skipped. Same recipe, more input files: only the
    new files are processed, in `output/increments/NNNN/`, deduplicated against the earlier indexes,
    and the manifest lists the new shards beside the old ones. Another recipe: the earlier run is
    moved to `output/superseded/<old-hash-12>/` and the new recipe starts a fresh run (no mixing).
    """
    run_dir, phases = prepare(recipe, output)
    from assay.pipeline.lock import run_lock

    with run_lock(run_dir):
        moved = supersede_changed_run(recipe, run_dir)
        if moved is not None and on_phase:
            on_phase("superseded", Phase(str(moved), [], 0), 0, 0)
        increment = plan_increment(recipe, run_dir) if incremental else None
        if increment is not None:
            n = len(list((run_dir / "increments").glob("[0-9]*"))) + 1
            inc_dir = run_dir / "increments" / f"{n:04d}"
            inc_dir.mkdir(parents=True, exist_ok=True)
            result = _run_phases(increment, inc_dir, build_phases(increment, inc_dir), on_phase)
            _merge_increment_manifest(run_dir, inc_dir)
            result.manifest = json.loads((run_dir / "manifest.json").read_text())
            return result
        return _run_phases(recipe, run_dir, phases, on_phase)


def _run_phases(recipe: Recipe, run_dir: Path, phases: list[Phase], on_phase) -> RunResult:
    digest = _write_recipe(recipe, run_dir)
    executors = _make_executors(recipe, phases, run_dir)
    if on_phase:  # where this run's phases log (an increment runs in increments/NNNN/)
        on_phase("run_dir", Phase(str(run_dir), [], 0), 0, len(phases))
    results: list[PhaseResult] = []
    if recipe.executor.kind == "local":
        # Phases run in order here, each checked before the next, so a failed task stops the run
        # with its logs named instead of a dependent phase waiting on it.
        for i, (ph, ex) in enumerate(zip(phases, executors)):
            ex.depends = None
            todo = ex.get_incomplete_ranks()
            if on_phase:
                on_phase("start", ph, i, len(phases))
            t0 = time.perf_counter()
            try:
                ex.run()
            except Exception as e:  # a task raised: say which phase and where its logs are
                raise RunFailed(
                    f"phase '{ph.name}' failed: {e.__class__.__name__}: {e} (logs: {run_dir / 'logs' / ph.name})"
                ) from e
            left = ex.get_incomplete_ranks(skip_completed=True)
            if left:
                raise RunFailed(
                    f"phase '{ph.name}' left tasks {left} unfinished (logs: {run_dir / 'logs' / ph.name})"
                )
            results.append(
                PhaseResult(ph.name, ph.tasks, time.perf_counter() - t0, not todo, read_phase_stats(run_dir, ph.name))
            )
            if on_phase:
                on_phase("done", ph, i, len(phases))
    else:
        from assay.pipeline.executors import run_phases

        t0 = time.perf_counter()
        run_phases(executors)
        dt = time.perf_counter() - t0
        for ph in phases:
            results.append(PhaseResult(ph.name, ph.tasks, dt, False, read_phase_stats(run_dir, ph.name)))
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    return RunResult(run_dir, digest, results, manifest)


def describe(recipe: Recipe, output: Path) -> dict[str, Any]:
    """What a run would do, without running anything."""
    check_kinds(recipe)
    phases = build_phases(recipe, Path(output).resolve())
    return {
        "recipe": recipe.to_dict(),
        "hash": recipe.digest(),
        "phases": [{"name": p.name, "tasks": p.tasks, "steps": p.describe} for p in phases],
    }
