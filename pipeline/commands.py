"""The `assay` command line: its commands (the entry point, `assay.pipeline.cli`, imports this module when it runs).

Terminal contract: a default run prints one progress line per phase and a short summary (task logs
go to ``<run>/logs/<phase>/logs/``; ``--verbose`` shows them, ``--quiet`` shows only the summary and
errors). Every user error is one line on stderr and exit code 2; a failed run exits 1; Ctrl-C says
what finished and the command that resumes, and exits 130.
"""

from __future__ import annotations

from contextlib import contextmanager

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from assay.io.paths import shown_path

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="assay: raw pretraining sources -> clean, deduplicated, quality-tiered Parquet shards.",
)


def _make_console(stderr: bool = False) -> Console:
    """A rich console that does not wrap at 80 columns when the output is not a terminal, and prints text such
    as ``:fire:`` (in a path, a recipe value) as it is, not as an emoji: rich's emoji codes are never looked
    up, so its table of them (about 2 MiB of resident memory, loaded by the first line printed, in the
    process that launches a run and then in every phase's child forked from it) is never loaded."""
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if tty or os.environ.get("COLUMNS") else 10_000
    return Console(stderr=stderr, width=width, soft_wrap=not tty, highlight=False, emoji=False)


console = _make_console()
err = _make_console(stderr=True)

RUNS_DIR = Path("runs")


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("assay")
        except PackageNotFoundError:  # pragma: no cover - running from a checkout without install
            v = "unknown"
        console.print(f"assay {v}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True, help="print the version"),
) -> None:
    """assay: raw pretraining sources -> clean, deduplicated, quality-tiered Parquet shards."""


def _load(recipe: Optional[str], overrides: list[str]):
    from assay.pipeline.recipe import RecipeError, load_recipe

    try:
        return load_recipe(recipe, overrides)
    except RecipeError as e:
        _fail(str(e))


def default_output(recipe) -> Path:
    """Where a recipe writes without ``--output``: ``runs/<recipe name>``."""
    return RUNS_DIR / recipe.name


def _step_stats(phase_stats: list[dict]) -> dict[str, dict]:
    out = {}
    for s in phase_stats:
        out[s.get("name", "?")] = {k: v.get("total", v) if isinstance(v, dict) else v for k, v in s.get("stats", {}).items()}
    return out


def _counts(items: dict[str, int], limit: int = 6) -> str:
    top = sorted(items.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k} {v:,}" for k, v in top[:limit])
    return text + (f", +{len(top) - limit} more" if len(top) > limit else "")


def summary_lines(result) -> list[str]:
    """The end-of-run summary: a few lines (documents, tiers, exclusions, where things are)."""
    lines: list[str] = []
    steps: dict[str, dict] = {}
    for ph in result.phases:
        steps.update(_step_stats(ph.stats))
    decide = next((v for k, v in steps.items() if "decide" in k), {})
    m = result.manifest or {}
    totals = m.get("totals", {})
    excl = m.get("excluded", {}) if isinstance(m.get("excluded"), dict) else {}
    written = totals.get("documents", decide.get("forwarded", 0))
    n_excl = excl.get("documents", decide.get("dropped", 0))
    lines.append(
        f"{written + n_excl:,} documents: {written:,} written ({totals.get('tokens', 0):,} tokens, "
        f"{totals.get('shards', 0)} shards), {n_excl:,} excluded"
    )
    tiers = {t: v["documents"] for t, v in m.get("by_tier", {}).items()} or {
        k[5:]: v for k, v in decide.items() if k.startswith("tier/")
    }
    if tiers:
        lines.append(f"  kept by tier: {_counts(tiers, 8)}")
    by_stage = {st: v["documents"] for st, v in excl.get("by_stage", {}).items() if v.get("documents")}
    if by_stage:
        lines.append(f"  excluded by stage: {_counts(by_stage)}")
    reasons = {r: v["documents"] for r, v in excl.get("by_reason", {}).items()} or {
        k[len("dropped_"):]: v for k, v in decide.items() if k.startswith("dropped_")
    }
    if reasons:
        lines.append(f"  top reasons: {_counts(reasons, 3)}")
    absent = sorted(k.split("/", 1)[1] for st in steps.values() for k in st if k.startswith("rule_signal_absent/"))
    if absent:
        lines.append(
            f"warning: rules whose signal was missing on documents they apply to (kept them): {', '.join(absent)} "
            "(typo, or a step not in the recipe?)"
        )
    if any(k.startswith("decont/eval_set_missing") for st in steps.values() for k in st):
        lines.append("note: decontamination: evaluation sets not found; documents were not checked "
                     "(signal decont__checked = false)"
        )
    if any(k.startswith("ocr_backend_unavailable") for st in steps.values() for k in st):
        lines.append("note: OCR off (server: none): OCR pages used the text layer or were excluded")
    run_dir = shown_path(result.run_dir)
    lines.append(f"run: {run_dir}/ (output/, manifest.json, report.html)")
    lines.append(f"next: assay report {run_dir}   assay show {run_dir}")
    return lines


@contextmanager
def _ctrl_c_watchdog(line, grace_s: float = 60.0):
    """Ctrl-C raises KeyboardInterrupt as usual, so the executor stops its workers and the lock is released
    in order; if that stopping itself stalls (a helper process killed by the same signal can leave a pool
    or manager waiting forever), the process prints the resume line and exits 130 after `grace_s`."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    started: list[threading.Timer] = []

    def force_exit() -> None:
        sys.stderr.write(line() + "\n")
        sys.stderr.flush()
        os._exit(130)

    def handler(signum, frame):
        if os.getpid() != owner:  # a forked child: as if no handler were installed
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if not started:
            t = threading.Timer(grace_s, force_exit)
            t.daemon = True
            t.start()
            started.append(t)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        for t in started:
            t.cancel()


def _reuse_lines(plans: list[str]) -> list[str]:
    """One line saying which phases of an existing run are reused, resumed or rerun, and why (nothing for a
    fresh run: every phase just runs). `plans` holds the runner's lines, `phase: action (reason)`."""
    groups: dict[str, list[str]] = {}
    for p in plans:
        phase, _, rest = p.partition(": ")
        groups.setdefault(rest, []).append(phase)
    if all(rest.startswith("run ") for rest in groups):
        return []
    return ["phases: " + "; ".join(f"{rest.split(' ', 1)[0]} {', '.join(ph)} {rest.partition(' ')[2]}".rstrip()
                                   for rest, ph in groups.items())]


def _check_executor(rec) -> None:
    """Executor problems the run would only meet later, as one-line user errors."""
    from pydantic import ValidationError

    from assay.pipeline.executors import validate_settings

    try:
        validate_settings(rec.executor.kind, rec.executor.settings)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "settings"
        _fail(f"executor.settings.{where}: {first['msg']} (executor {rec.executor.kind})")
    except ValueError as e:
        _fail(f"executor.settings: {e}")
    if rec.executor.kind == "slurm" and shutil.which("sbatch") is None:
        _fail("--executor slurm needs 'sbatch' on PATH: run on a Slurm login node (or use --executor local)")
    if rec.executor.kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            _fail("--executor ray needs Ray: pip install 'assay[ray]'")


def _resume_command() -> str:
    return shlex.join(["assay", *sys.argv[1:]])


@app.command()
def run(
    recipe: Optional[str] = typer.Argument(None, help="recipe file or shipped recipe name (default: the embedded sample)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="run directory (default: runs/<recipe name>)"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local | slurm | ray (overrides the recipe)"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="parallel workers (local) / concurrency"),
    tasks: Optional[int] = typer.Option(None, "--tasks", min=1, help="tasks per parallel phase"),
    set_: list[str] = typer.Option(
        [], "--set",
        help="override a recipe value: key.path=value; list items by index or name "
        "(decisions.rules.min_words.value=200); key=@file.yaml reads the value from a file (repeatable)",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print only the final summary and errors"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="also print datatrove's task logs"),
) -> None:
    """Run a recipe. With no recipe, runs the default recipe on the embedded sample."""
    from pydantic import ValidationError

    from assay.pipeline.executors import PhaseFailedError, configure_logging
    from assay.pipeline.lock import RunLockedError
    from assay.pipeline.progress import PhaseProgress
    from assay.pipeline.recipe import RecipeError
    from assay.pipeline.runner import RunFailed, apply_cli_overrides, run_recipe

    if executor and executor not in ("local", "slurm", "ray"):
        _fail(f"--executor must be local, slurm or ray, not '{executor}'")
    if quiet and verbose:
        _fail("--quiet and --verbose exclude each other")
    configure_logging(verbose=verbose, quiet=quiet)
    rec = _load(recipe, set_)
    try:
        rec = apply_cli_overrides(rec, executor=executor, workers=workers, tasks=tasks)
    except ValidationError as e:  # e.g. --executor slurm with settings written for another executor
        first = e.errors()[0]
        _fail(f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}")
    _check_executor(rec)
    output = output if output is not None else default_output(rec)

    progress = PhaseProgress(console, live=console.is_terminal and not console.is_dumb_terminal, enabled=not quiet)
    where = {"run_dir": Path(output)}
    plans: list[str] = []

    def on_phase(event, ph, i, n):
        if event == "run_dir":
            where["run_dir"] = Path(ph.name)
        elif event == "superseded" and not quiet:
            console.print(f"recipe changed: the earlier run in this directory moved to {shown_path(Path(ph.name))}; "
                          "starting a fresh run", highlight=False, markup=False)
        elif event == "plan":  # the runner's reuse / resume / rerun decision for one phase
            plans.append(ph.describe[0] if ph.describe else ph.name)
            if i == n - 1 and not quiet:
                for line in _reuse_lines(plans):
                    console.print(line, highlight=False, markup=False)
        elif event == "start":
            progress.start(ph.name, where["run_dir"] / "logs" / ph.name, ph.tasks)
        elif event == "done":
            progress.finish()

    if rec.executor.kind != "local" and not quiet:
        console.print(f"{rec.executor.kind}: the phases run as cluster jobs; their task logs go to "
                      f"{shown_path(Path(output))}/logs/<phase>/ (--verbose also prints the submission logs)", markup=False)
    def interrupted_line() -> str:
        running = progress.running_tasks()
        done = ", ".join(progress.finished) or "no phase"
        now = f"; {progress.current} had {running[0]}/{running[1]} tasks done" if running else ""
        return f"interrupted: finished {done}{now}; resume with: {_resume_command()}"

    from assay.pipeline.lean import lean_launcher

    lean_launcher()  # this process exits after the run: no pandas, allocators that give memory back (pipeline/lean.py)
    try:
        with _ctrl_c_watchdog(interrupted_line):
            result = run_recipe(rec, output, on_phase=on_phase)
    except KeyboardInterrupt:
        line = interrupted_line()
        progress.close()
        err.print(line, markup=False)
        raise typer.Exit(130)
    except (RecipeError, RunLockedError) as e:
        progress.close()
        _fail(str(e))
    except (RunFailed, PhaseFailedError) as e:
        progress.close()
        _fail(str(e), code=1)
    finally:  # whatever happened, give the terminal its cursor back
        progress.close()
    for line in summary_lines(result):
        console.print(line, markup=False)


@app.command()
def describe(
    recipe: Optional[str] = typer.Argument(None, help="recipe file or shipped recipe name"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="run directory (default: runs/<recipe name>)"),
    set_: list[str] = typer.Option([], "--set", help="override a recipe value: key.path=value"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Print the resolved recipe and the phases and steps it would run. Runs nothing."""
    import yaml

    from assay.pipeline.recipe import RecipeError
    from assay.pipeline.runner import describe as _describe

    rec = _load(recipe, set_)
    try:
        info = _describe(rec, output if output is not None else default_output(rec))
    except RecipeError as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(info, indent=2))
        return
    console.print(f"# recipe {rec.name} (sha256 {info['hash'][:12]})", markup=False)
    console.print(yaml.safe_dump(info["recipe"], sort_keys=False), highlight=False, markup=False)
    for i, ph in enumerate(info["phases"], 1):
        console.print(f"[bold]phase {i}: {ph['name']}[/] ({ph['tasks']} task(s))")
        for s in ph["steps"]:
            console.print(f"  - {s}", highlight=False, markup=False)


def _run_dir_arg(run_dir: Path) -> Path:
    if not run_dir.exists():
        _fail(f"no such run directory: {run_dir}")
    if not (run_dir / "logs").is_dir() and not (run_dir / "recipe.resolved.yaml").exists():
        _fail(f"not a run directory: {run_dir} (no logs/ or recipe.resolved.yaml)")
    return run_dir


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory")) -> None:
    """Regenerate the funnel report (report.html) of a run and print its text summary."""
    _run_dir_arg(run_dir)
    from assay.pipeline.report import print_report, render_report

    path = render_report(run_dir)
    print_report(run_dir, console=console)
    console.print(f"report: {path}", markup=False)


@app.command()
def show(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    tier: Optional[str] = typer.Option(None, "--tier", help="only this tier"),
    source: Optional[str] = typer.Option(None, "--source", help="only this source (web, code, pdf)"),
    excluded: bool = typer.Option(False, "--excluded", help="show excluded documents instead of kept ones"),
    reason: Optional[str] = typer.Option(None, "--reason", help="only excluded documents with this reason code"),
    sample: int = typer.Option(5, "--sample", min=1, help="how many documents"),
    seed: int = typer.Option(0, "--seed"),
    signals: bool = typer.Option(False, "--signals", help="every signal (default: a compact summary per group)"),
    max_chars: int = typer.Option(1200, "--chars", min=1, help="characters of text to print per document"),
) -> None:
    """Print sampled documents: their text first, then a compact summary of their signals."""
    _run_dir_arg(run_dir)
    from assay.pipeline import show as _show

    docs = _show.show(
        run_dir, tier=tier, source=source, excluded=excluded or reason is not None, reason=reason, sample=sample,
        seed=seed,
    )
    if not docs:
        console.print(_show.nothing_found(run_dir, tier=tier, source=source, excluded=excluded or reason is not None,
                                          reason=reason), markup=False)
        return
    _show.print_documents(docs, console=console, all_signals=signals, max_chars=max_chars)


# ---------------------------------------------------------------- plan / pack


@app.command()
def plan(
    run_dir: Path = typer.Argument(..., help="a finished run directory"),
    tokens: Optional[str] = typer.Option(None, "--tokens", help="target token budget, e.g. 1T, 500B, 20M"),
    max_repeats: Optional[float] = typer.Option(None, "--max-repeats", help="cap on epochs per slice (recipe plan.max_repeats, default 4)"),
) -> None:
    """Epochs per source x tier x language for a token budget; writes RUN/plan.json and updates the report."""
    from assay.pipeline.plan import build_plan, plan_table

    try:
        result = build_plan(run_dir, tokens=tokens, max_repeats=max_repeats)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    if (run_dir / "logs").is_dir():
        from assay.pipeline.report import render_report

        render_report(run_dir)
    console.print(plan_table(result))
    for w in result["warnings"]:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    console.print(f"plan: {run_dir / 'plan.json'}")


@app.command()
def pack(
    run_dir: Path = typer.Argument(..., help="a finished run directory"),
    tokenizer: Path = typer.Option(..., "--tokenizer", help="a `tokenizers` JSON file"),
    seq_len: int = typer.Option(8192, "--seq-len", min=1, help="training sequence length (each sequence holds seq_len + 1 tokens)"),
    output: Path = typer.Option(..., "--output", "-o", help="output folder (datatrove tokenized format)"),
    algorithm: str = typer.Option("best_fit", "--algorithm", help="best_fit | concat (concatenate-and-split baseline)"),
    no_eos: bool = typer.Option(False, "--no-eos", help="do not append an EOS token to each document"),
    no_plan: bool = typer.Option(False, "--no-plan", help="ignore RUN/plan.json (every document once)"),
    repo_documents: bool = typer.Option(False, "--repo-documents", help="pack RUN/repo_docs instead of single code files"),
    tasks: int = typer.Option(2, "--tasks", min=1),
    workers: int = typer.Option(2, "--workers", min=1),
) -> None:
    """Tokenize the run's shards, apply the plan's epochs and pack them into fixed-length sequences."""
    from assay.pipeline.pack import PackCheckFailed, run_pack

    if algorithm not in ("best_fit", "concat"):
        _fail(f"--algorithm must be best_fit or concat, not '{algorithm}'")
    if not tokenizer.is_file():
        _fail(f"tokenizer file not found: {tokenizer}")
    try:
        res = run_pack(run_dir, output, tokenizer=str(tokenizer), seq_len=seq_len, algorithm=algorithm, eos=not no_eos,
                       use_plan=not no_plan, repo_documents=repo_documents, tasks=tasks, workers=workers)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    except PackCheckFailed as e:
        _fail(str(e), code=1)
    t = res["totals"]
    console.print(f"packed {t['documents']:,} document copies ({t['unique_documents']:,} unique) into "
                  f"{t['sequences']:,} sequences of {seq_len + 1} tokens: {t['content_tokens']:,} document tokens, "
                  f"{t['eos_tokens']:,} EOS, {t['pad_tokens']:,} padding ({100 * t['padding_share']:.2f}%), "
                  f"{t['truncated_documents']:,} documents split ({100 * t['truncated_share']:.2f}%)", highlight=False)
    if not res["params"]["plan"]:
        console.print("[yellow]note:[/] no plan.json used: every document packed once (run `assay plan` first)", highlight=False)
    cmp = "equal to" if res["manifest_counts_comparable"] else "not comparable with (other token count method)"
    console.print(f"read back with datatrove's reader: {res['readback']['tokens']:,} tokens; unique document tokens "
                  f"{cmp} the manifest's {res['manifest_tokens']:,}", highlight=False)
    console.print(f"pack: {output / 'pack.json'}")


def main() -> None:  # console script entry point
    try:  # typer (pinned 0.29) carries its own copy of click
        from typer._click.exceptions import NoArgsIsHelpError, UsageError
    except ImportError:  # pragma: no cover - typer releases that use click itself
        from click.exceptions import NoArgsIsHelpError, UsageError

    try:
        rc = app(standalone_mode=False, prog_name="assay")
    except NoArgsIsHelpError as e:  # bare `assay`: the help text
        console.print(e.ctx.get_help(), markup=False)
        rc = 0
    except UsageError as e:  # one line, like every other user error
        cmd = e.ctx.command_path if e.ctx else "assay"
        err.print(f"[bold red]error:[/] {e.format_message()} (see: {cmd} --help)", highlight=False, soft_wrap=True)
        rc = 2
    except typer.Abort:
        err.print("interrupted", markup=False)
        rc = 130
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        rc = 130
    sys.exit(rc or 0)


if __name__ == "__main__":
    main()
