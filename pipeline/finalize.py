"""Last phase of a run: the manifest and the funnel report (one task, so Slurm/Ray runs get them too)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep


def finalize_run(run_dir: str | Path) -> dict:
    from assay.pipeline.inputs import expand_inputs, input_paths
    from assay.pipeline.manifest import build_manifest
    from assay.pipeline.recipe import recipe_from_dict
    from assay.pipeline.report import render_report
    from assay.stages.decisions.rules import tier_weights

    run_dir = Path(run_dir)
    # the decide tasks' shared staging parent (each rank removed its own folder inside it)
    shutil.rmtree(run_dir / ".staging", ignore_errors=True)
    # libyaml's safe loader when built: the same values, 0.06 -> 0.01 CPU-s on a default recipe
    data = yaml.load((run_dir / "recipe.resolved.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    recipe = recipe_from_dict(data)
    manifest = build_manifest(
        run_dir,
        recipe=recipe.to_dict(),
        recipe_hash=(run_dir / "recipe.sha256").read_text().strip(),
        inputs=expand_inputs(input_paths(recipe)),
        tier_weights=tier_weights(recipe.decisions),
    )
    if recipe.decisions.rebalance:
        manifest = _add_mixture_report(run_dir, recipe, manifest)
    render_report(run_dir)
    return manifest


def _add_mixture_report(run_dir: Path, recipe, manifest: dict) -> dict:
    """The achieved language / file-type mixture against the plan of the `plan` phase, in the manifest.

    Amounts come from the stored `doc__bytes` / `doc__tokens` signals of the written shards (their
    `signals` column), never from their text."""
    import polars as pl

    from assay.pipeline.manifest import write_json_atomically
    from assay.stages.decisions.plan_step import load_plan, mixture_report_from_plan

    plan_file = run_dir / "decide_plan" / "plan.json"
    if not plan_file.exists():
        return manifest
    plan = load_plan(plan_file)
    if "unit" not in plan:  # a plan without rebalancing (dedup keepers only): no mixture to report
        return manifest
    stored = "doc__bytes" if plan["unit"] == "bytes" else "doc__tokens"
    fallback = "n_bytes" if plan["unit"] == "bytes" else "token_count"
    shards = sorted((run_dir / "output").glob(f"source={plan['source']}/**/*.parquet"))
    written: dict[str, int] = {}
    if shards:
        df = pl.concat([pl.read_parquet(p, columns=["language", "signals", fallback]) for p in shards],
                       how="diagonal_relaxed")
        dtype = df.schema["signals"]
        if isinstance(dtype, pl.Struct):  # typed signals (one field per declared signal)
            has = stored in {f.name for f in dtype.fields}
            amount = pl.col("signals").struct.field(stored).cast(pl.Int64, strict=False) if has else pl.lit(None, pl.Int64)
        else:  # shards written before typed signals: a JSON string
            amount = pl.col("signals").str.json_path_match(f"$.{stored}").cast(pl.Int64, strict=False)
        amount = amount.fill_null(pl.col(fallback))
        for k, v in df.group_by(pl.col("language").fill_null("unknown")).agg(amount.sum()).iter_rows():
            written[str(k)] = int(v)
    manifest["rebalance"] = mixture_report_from_plan(plan, written)
    write_json_atomically(manifest, run_dir / "manifest.json")
    return manifest


class Finalize(PipelineStep):
    name = "finalize"
    type = "🏁 - FINALIZE"

    def __init__(self, run_dir: str):
        super().__init__()
        self.run_dir = run_dir

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        if rank == 0:
            finalize_run(self.run_dir)
            self.stat_update("runs_finalized")
