"""The `assay` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="assay: raw pretraining sources -> clean, deduplicated, quality-tiered Parquet shards.",
)
console = Console()
err = Console(stderr=True)

DEFAULT_OUTPUT = Path("runs/default")


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _load(recipe: Optional[str], overrides: list[str]):
    from assay.pipeline.recipe import RecipeError, load_recipe

    try:
        return load_recipe(recipe, overrides)
    except RecipeError as e:
        _fail(str(e))


def _step_stats(phase_stats: list[dict]) -> dict[str, dict]:
    out = {}
    for s in phase_stats:
        out[s.get("name", "?")] = {k: v.get("total", v) if isinstance(v, dict) else v for k, v in s.get("stats", {}).items()}
    return out


def print_summary(result) -> None:
    t = Table(title=f"assay run: {result.run_dir}", title_justify="left")
    for col in ("phase", "tasks", "seconds", "status"):
        t.add_column(col, justify="right" if col in ("tasks", "seconds") else "left")
    for ph in result.phases:
        t.add_row(ph.name, str(ph.tasks), f"{ph.seconds:.1f}", "skipped (complete)" if ph.skipped else "ran")
    console.print(t)

    decide = next((p for p in result.phases if p.name == "decide"), None)
    if decide and decide.stats:
        steps = _step_stats(decide.stats)
        d = next((v for k, v in steps.items() if "decide" in k), {})
        kept = d.get("forwarded", 0)
        total = d.get("total", 0)
        r = Table(title="documents", title_justify="left")
        r.add_column("outcome")
        r.add_column("documents", justify="right")
        r.add_row("[bold]read[/]", str(total))
        for k in sorted(d):
            if k.startswith("tier/"):
                r.add_row(f"kept, tier {k[5:]}", str(d[k]))
        for k in sorted(d):
            if k.startswith("dropped_"):
                r.add_row(f"excluded: {k[len('dropped_'):]}", str(d[k]))
        r.add_row("[bold]written[/]", str(kept))
        r.add_row("[bold]excluded[/]", str(d.get("dropped", 0)))
        console.print(r)
        for k in sorted(d):
            if k.startswith("rule_signal_absent/"):
                console.print(
                    f"[yellow]warning:[/] rule '{k.split('/', 1)[1]}': its signal was missing on documents it "
                    "applies to (typo, or a step not in the recipe?); it kept them (when_missing)", highlight=False
                )
    ocr_note = any(
        any(k.startswith("ocr_backend_unavailable") for k in st)
        for ph in result.phases
        for st in _step_stats(ph.stats).values()
    )
    if ocr_note:
        console.print("[yellow]note:[/] PDF OCR: no VLM backend configured (server: none); pages routed to "
                      "OCR used the text layer or were excluded with a reason", highlight=False)
    decont_missing = any(
        any(k.startswith("decont/eval_set_missing") for k in st)
        for ph in result.phases
        for st in _step_stats(ph.stats).values()
    )
    if decont_missing:  # H-pack: the default recipe runs without ../shared/data (docs/packing.md)
        console.print("[yellow]note:[/] decontamination: evaluation sets not found (decontamination_v1 eval_sets); "
                      "documents were not checked against them (signal decont__checked = false)", highlight=False)
    if result.manifest:
        m = result.manifest
        totals = m.get("totals", {})
        console.print(
            f"manifest: {result.run_dir / 'manifest.json'}  shards: {len(m.get('shards', []))}  "
            f"documents: {totals.get('documents', '?')}  tokens: {totals.get('tokens', '?')}"
        )
    if (result.run_dir / "report.html").exists():
        console.print(f"report:   {result.run_dir / 'report.html'}")


@app.command()
def run(
    recipe: Optional[str] = typer.Argument(None, help="recipe file or shipped recipe name (default: the embedded sample)"),
    output: Path = typer.Option(DEFAULT_OUTPUT, "--output", "-o", help="run directory"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local | slurm | ray (overrides the recipe)"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="parallel workers (local) / concurrency"),
    tasks: Optional[int] = typer.Option(None, "--tasks", min=1, help="tasks per parallel phase"),
    set_: list[str] = typer.Option([], "--set", help="override a recipe value: key.path=value (repeatable)"),
) -> None:
    """Run a recipe. With no recipe, runs the default recipe on the embedded sample."""
    from assay.pipeline.executors import PhaseFailedError
    from assay.pipeline.lock import RunLockedError
    from assay.pipeline.recipe import RecipeError
    from assay.pipeline.runner import RunFailed, apply_cli_overrides, run_recipe

    if executor and executor not in ("local", "slurm", "ray"):
        _fail(f"--executor must be local, slurm or ray, not '{executor}'")
    rec = _load(recipe, set_)
    try:
        rec = apply_cli_overrides(rec, executor=executor, workers=workers, tasks=tasks)
    except Exception as e:  # pydantic validation of overrides
        _fail(str(e).splitlines()[0])

    def on_phase(event, ph, i, n):
        if event == "superseded":
            console.print(f"[yellow]recipe changed:[/] the earlier run in this directory moved to {ph.name}; "
                          "starting a fresh run", highlight=False)
        if event == "start":
            console.print(f"[bold cyan]phase {i + 1}/{n}[/] {ph.name}: {ph.tasks} task(s)")

    try:
        result = run_recipe(rec, output, on_phase=on_phase)
    except (RecipeError, RunLockedError) as e:
        _fail(str(e))
    except (RunFailed, PhaseFailedError) as e:
        _fail(str(e), code=1)
    print_summary(result)


@app.command()
def describe(
    recipe: Optional[str] = typer.Argument(None, help="recipe file or shipped recipe name"),
    output: Path = typer.Option(DEFAULT_OUTPUT, "--output", "-o"),
    set_: list[str] = typer.Option([], "--set", help="override a recipe value: key.path=value"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Print the resolved recipe and the phases and steps it would run. Runs nothing."""
    import yaml

    from assay.pipeline.recipe import RecipeError
    from assay.pipeline.runner import describe as _describe

    rec = _load(recipe, set_)
    try:
        info = _describe(rec, output)
    except RecipeError as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(info, indent=2))
        return
    console.rule(f"recipe {rec.name} (sha256 {info['hash'][:12]})")
    console.print(yaml.safe_dump(info["recipe"], sort_keys=False), highlight=False, markup=False)
    for i, ph in enumerate(info["phases"], 1):
        console.print(f"[bold]phase {i}: {ph['name']}[/] ({ph['tasks']} task(s))")
        for s in ph["steps"]:
            console.print(f"  - {s}", highlight=False, markup=False)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory")) -> None:
    """Regenerate the funnel report (report.html) of a run and print its text summary."""
    if not (run_dir / "logs").is_dir():
        _fail(f"not a run directory: {run_dir}")
    from assay.pipeline.report import print_report, render_report

    path = render_report(run_dir)
    print_report(run_dir, console=console)
    console.print(f"report: {path}")


@app.command()
def show(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    tier: Optional[str] = typer.Option(None, "--tier", help="only this tier"),
    source: Optional[str] = typer.Option(None, "--source", help="only this source (web, code, pdf)"),
    excluded: bool = typer.Option(False, "--excluded", help="show excluded documents instead of kept ones"),
    reason: Optional[str] = typer.Option(None, "--reason", help="only excluded documents with this reason code"),
    sample: int = typer.Option(5, "--sample", min=1, help="how many documents"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Print sampled documents with their signals."""
    if not (run_dir / "logs").is_dir():
        _fail(f"not a run directory: {run_dir}")
    from assay.pipeline import show as _show

    docs = _show.show(
        run_dir, tier=tier, source=source, excluded=excluded or reason is not None, reason=reason, sample=sample,
        seed=seed,
    )
    _show.print_documents(docs, console=console)


# ---------------------------------------------------------------- plan / pack (H-pack)


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
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
