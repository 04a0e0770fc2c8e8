"""Recipe -> datatrove phases. Composition only: every per-document action lives in `stages/`.

Phases (each a datatrove pipeline with its own task count and logging dir under `<run>/logs/`):
  signals         readers -> per-source steps -> common steps -> minhash signatures -> signal store
  dedup_buckets   minhash candidate pairs per band (against earlier runs' indexes too)
  dedup_clusters  union-find, keep policy, this run's index for the next run
  decide          signal store -> dedup annotations -> decisions/tiers -> shards + exclusions
  finalize        manifest + funnel report
A re-tier recipe (`retier_from`) runs only decide + finalize on the stored signals of an earlier run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.pipeline.recipe import Recipe, RecipeError, StepSpec
from assay.pipeline.registry import build_step, get_kind, output_signal_schema, store_schema

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"


@dataclass
class Phase:
    name: str
    steps: list[Any]
    tasks: int
    describe: list[str] = field(default_factory=list)


@dataclass
class RunLayout:
    root: Path

    @property
    def signals(self) -> Path:
        return self.root / "signals"

    @property
    def dedup(self) -> Path:
        return self.root / "dedup"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def excluded(self) -> Path:
        return self.root / "excluded"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


def resolve_value(value: Any) -> Any:
    """`sample:web` / `sample:code` / `sample:pdf` -> the embedded sample's folders."""
    if isinstance(value, str) and value.startswith("sample:"):
        p = SAMPLE_DIR / value.split(":", 1)[1]
        if not p.exists():
            raise RecipeError(f"no embedded sample named '{value}'")
        return str(p)
    if isinstance(value, list):
        return [resolve_value(v) for v in value]
    if isinstance(value, dict):
        return {k: resolve_value(v) for k, v in value.items()}
    return value


def input_paths(recipe: Recipe) -> list[Path]:
    """Every input path named by the recipe's readers (resolved), for checks and the manifest."""
    out: list[Path] = []
    for src in recipe.sources:
        params = resolve_value(src.reader.params)
        paths = params.get("paths") or params.get("data_folder") or []
        if isinstance(paths, str):
            paths = [paths]
        out.extend(Path(p) for p in paths)
    return out


def check_inputs(recipe: Recipe) -> None:
    for p in input_paths(recipe):
        if not p.exists():
            raise RecipeError(f"input path does not exist: {p}")
    if recipe.retier_from:
        store = Path(recipe.retier_from) / "signals"
        if not store.is_dir():
            raise RecipeError(f"retier_from has no signal store: {store}")


def check_kinds(recipe: Recipe) -> None:
    """Fail on an unknown stage kind or parameter before any work starts."""
    from assay.pipeline.registry import check_params

    specs: list[StepSpec] = [*recipe.common_steps]
    for src in recipe.sources:
        specs.append(src.reader)
        specs.extend(src.steps)
    for spec in specs:
        kind = get_kind(spec.kind)
        check_params(kind.load(), spec.kind, spec.params)


def _dedup_config(recipe: Recipe):
    from assay.stages.dedup.config import DedupConfig

    d = recipe.dedup
    return DedupConfig(
        n=d.ngram, bands=d.bands, rows=d.rows, seed=d.seed, shingle=d.shingle, keep_policy=d.keep,
        exact=d.exact, near=d.near,
    )


def _dedup_tasks(recipe: Recipe) -> dict[str, int]:
    from assay.stages.dedup.config import dedup_phase_tasks

    return dedup_phase_tasks(_dedup_config(recipe))


def build_phases(recipe: Recipe, run_dir: Path) -> list[Phase]:
    layout = RunLayout(Path(run_dir))
    tasks = recipe.executor.tasks
    phases: list[Phase] = []
    dedup_on = recipe.dedup.enabled and (recipe.dedup.exact or recipe.dedup.near)
    store = layout.signals
    clusters = layout.dedup / "clusters"

    if recipe.retier_from:
        prev = Path(recipe.retier_from)
        store = prev / "signals"
        clusters = prev / "dedup" / "clusters"
        dedup_on = dedup_on and clusters.exists()
    else:
        steps: list[Any] = []
        desc: list[str] = []
        for src in recipe.sources:
            steps.append(build_step(src.reader, resolve=resolve_value))
            desc.append(f"{src.reader.kind} [{src.name}]")
        from assay.stages.common.gate import SourceGate

        for src in recipe.sources:
            for spec in src.steps:
                steps.append(SourceGate(build_step(spec, resolve=resolve_value), src.name))
                desc.append(f"{spec.kind} [{src.name}]")
        for spec in recipe.common_steps:
            steps.append(build_step(spec, resolve=resolve_value))
            desc.append(spec.kind)
        if dedup_on:
            from assay.stages.decisions.priority import DedupPriority
            from assay.stages.dedup.minhash import MinhashSignatures

            steps.append(DedupPriority(recipe.decisions.model_dump(mode="json")))
            desc.append("dedup priority (ensemble bucket)")
            steps.append(
                MinhashSignatures(
                    output_folder=str(layout.dedup / "signatures"),
                    config=_dedup_config(recipe),
                    priority_signal=recipe.dedup.priority_signal,
                    date_signal=recipe.dedup.date_signal,
                )
            )
            desc.append("minhash + exact-hash signatures")
        from assay.stages.common.store import SignalStoreWriter

        steps.append(SignalStoreWriter(str(layout.signals), rows_per_part=recipe.signal_store_rows,
                                       schema=store_schema(recipe)))
        desc.append("signal store writer")
        phases.append(Phase("signals", steps, tasks, desc))

        if dedup_on:
            from assay.stages.dedup.minhash import MinhashBuckets, MinhashClusters

            ntasks = _dedup_tasks(recipe)
            cfg = _dedup_config(recipe)
            phases.append(
                Phase(
                    "dedup_buckets",
                    [
                        MinhashBuckets(
                            input_folder=str(layout.dedup / "signatures"),
                            output_folder=str(layout.dedup / "buckets"),
                            config=cfg,
                            index_folders=[str(Path(p)) for p in recipe.dedup.index_from],
                        )
                    ],
                    ntasks.get("buckets", cfg.bands),
                    ["minhash buckets (+ earlier runs' indexes)"],
                )
            )
            phases.append(
                Phase(
                    "dedup_clusters",
                    [
                        MinhashClusters(
                            input_folder=str(layout.dedup / "buckets"),
                            output_folder=str(clusters),
                            config=cfg,
                            keep_policy=recipe.dedup.keep,
                        )
                    ],
                    1,
                    ["union-find clusters, keep policy, index for the next run"],
                )
            )

    from assay.stages.common.store import SignalStoreReader
    from assay.stages.decisions.step import Decide
    from assay.stages.output.shards import ExclusionWriter, ShardWriter

    decide_steps: list[Any] = [SignalStoreReader(str(store))]
    desc = [f"signal store reader ({store})"]
    if dedup_on:
        from assay.stages.dedup.minhash import DedupAnnotate

        decide_steps.append(DedupAnnotate(clusters_folder=str(clusters)))
        desc.append("dedup annotate (cluster id/size, duplicate_of)")
    out = recipe.output
    decide_steps.append(
        Decide(
            recipe.decisions.model_dump(mode="json"),
            exclusion_writer=ExclusionWriter(
                str(layout.excluded), include_text=out.exclusion_text, tokenizer_path=out.tokenizer_path,
                signal_schema=output_signal_schema(recipe),
            ),
            store_folder=str(store),
            clusters_folder=str(clusters) if dedup_on else None,
        )
    )
    desc.append(f"decide ({len(recipe.decisions.rules)} rules, {len(recipe.decisions.tiers)} tiers)")
    decide_steps.append(
        ShardWriter(
            str(layout.output),
            max_shard_bytes=out.max_shard_bytes,
            max_shard_tokens=out.max_shard_tokens,
            row_group_rows=out.row_group_rows,
            partition_by=list(out.partition_by),
            seed=out.seed,
            tokenizer_path=out.tokenizer_path,
            signal_schema=output_signal_schema(recipe),
        )
    )
    desc.append("parquet shard writer")
    phases.append(Phase("decide", decide_steps, tasks, desc))

    from assay.pipeline.finalize import Finalize

    phases.append(Phase("finalize", [Finalize(str(layout.root))], 1, ["manifest + funnel report"]))
    return phases
