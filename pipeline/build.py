"""Recipe -> datatrove phases. Composition only: every per-document action lives in `stages/`.

Phases (each a datatrove pipeline with its own task count and logging dir under `<run>/logs/`):
  signals           readers -> per-source steps -> common steps -> sizes -> signal store
  dedup_signatures  signal store (per signals task) -> dedup priority -> minhash + exact-hash signatures
  dedup_buckets     minhash candidate pairs per band (against earlier runs' indexes too)
  dedup_clusters    union-find, keep policy, this run's index for the next run
  decide_plan       one task: dedup keepers among filter survivors + mixture plan (no text) -> decide_plan/plan.json
  decide            signal store -> dedup annotations -> decisions/tiers -> shards + exclusions
  finalize          manifest + funnel report
Each phase carries a hash of the recipe settings its outputs depend on (`PHASE_GROUPS`), so the runner
reruns exactly the phases whose inputs changed.
A re-tier recipe (`retier_from`) runs only decide + finalize on the stored signals of an earlier run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.pipeline.recipe import Recipe, RecipeError, StepSpec
from assay.pipeline.phases import PHASE_GROUPS  # noqa: F401 (re-exported)
from assay.pipeline.inputs import SAMPLE_DIR, expand_inputs, input_paths, resolve_value  # noqa: F401 (re-exported)
from assay.pipeline.registry import build_step, get_kind, output_signal_schema, store_schema



@dataclass
class Phase:
    name: str
    steps: list[Any]
    tasks: int
    describe: list[str] = field(default_factory=list)
    digest: str = ""  # hash of what the phase's outputs depend on (`phase_hash`)
    groups: tuple[str, ...] = ()  # the recipe setting groups it depends on (`PHASE_GROUPS`)
    inputs: list[str] = field(default_factory=list)  # run-local folders it reads (small: run in-process)


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

    @property
    def decide_plan(self) -> Path:
        return self.root / "decide_plan"

    @property
    def staging(self) -> Path:
        return self.root / ".staging"

    def phase_outputs(self, phase: str) -> list[Path]:
        """What a phase writes (removed, with its logs, before the phase reruns in place)."""
        return {
            "signals": [self.signals],
            "dedup_signatures": [self.dedup / "signatures"],
            "dedup_buckets": [self.dedup / "buckets"],
            "dedup_clusters": [self.dedup / "clusters"],
            "decide_plan": [self.decide_plan],
            "decide": [self.output, self.excluded, self.staging / "decide"],
            "finalize": [self.root / "manifest.json"],
        }.get(phase, [])


def check_inputs(recipe: Recipe) -> None:
    """Every input exists: local paths on disk, fsspec URLs (``memory://``, ``s3://`` ...) through fsspec."""
    from assay.pipeline.inputs import input_exists

    for p in input_paths(recipe):
        if not input_exists(p):
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


def _dedup_signature_columns(recipe: Recipe) -> list[str]:
    """The store columns the dedup signatures phase reads: the text, what `DedupPriority` computes the ensemble
    bucket from (source and the ensemble's percentile signals) and what `MinhashSignatures` reads besides
    (reject reason, priority and date signals; `extra` holds any signal stored without a declared type)."""
    from assay.stages.common.store import EXTRA_COLUMN
    from assay.stages.decisions.tiers import percentile_signals

    cols = ["id", "text", "source", "reject_reason", EXTRA_COLUMN]
    cols += sorted(percentile_signals(recipe.decisions.model_dump(mode="json")))
    cols += [c for c in (recipe.dedup.priority_signal, recipe.dedup.date_signal) if c]
    return list(dict.fromkeys(cols))


def _dedup_tasks(recipe: Recipe) -> dict[str, int]:
    from assay.stages.dedup.config import dedup_phase_tasks

    return dedup_phase_tasks(_dedup_config(recipe))


def _digest(*parts: Any) -> str:
    payload = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


# What each phase's outputs depend on. Executor settings (kind, workers, Slurm/Ray options) are in
# none of them; `tasks` is, because it decides how the signal store and the shards are split.
HASH_GROUPS = ("signals", "dedup", "decisions", "output")


def group_hashes(recipe: Recipe) -> dict[str, str]:
    """One hash per group of recipe settings (see `PHASE_GROUPS` for which phases read which)."""
    data = recipe.to_dict()
    dedup = dict(data["dedup"])
    if dedup.get("keep") == "highest_priority" and dedup.get("priority_signal") == "quality__priority":
        # the keep policy reads the ensemble bucket, computed from these decision settings
        d = data["decisions"]
        dedup["priority_from"] = {k: d[k] for k in ("ensemble", "ensemble_mode", "unscored_bucket")}
    return {
        "signals": _digest(
            data["sources"], data["common_steps"], data["signal_store_rows"], data["retier_from"],
            data["executor"]["tasks"],
        ),
        "dedup": _digest(dedup),
        "decisions": _digest(data["decisions"]),
        "output": _digest(data["output"]),
        "pack": _digest(data.get("plan"), data.get("pack"), data.get("repo_documents")),
    }


def phase_hash(name: str, groups: dict[str, str]) -> str:
    return _digest(name, [groups[g] for g in PHASE_GROUPS[name]])


def build_phases(recipe: Recipe, run_dir: Path) -> list[Phase]:
    phases = _build_phases(recipe, run_dir)
    groups = group_hashes(recipe)
    for ph in phases:
        ph.digest = phase_hash(ph.name, groups)
        ph.groups = PHASE_GROUPS[ph.name]
    return phases


def _build_phases(recipe: Recipe, run_dir: Path) -> list[Phase]:
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
        from assay.stages.output.sizes import DocumentSize
        from assay.stages.common.store import SignalStoreWriter

        steps.append(DocumentSize())
        desc.append("document size (doc__bytes, doc__tokens) and store key")
        steps.append(SignalStoreWriter(str(layout.signals), rows_per_part=recipe.signal_store_rows,
                                       schema=store_schema(recipe)))
        desc.append("signal store writer")
        phases.append(Phase("signals", steps, tasks, desc))

        if dedup_on:
            from assay.stages.common.store import SignalStoreReader
            from assay.stages.decisions.priority import DedupPriority
            from assay.stages.dedup.minhash import MinhashBuckets, MinhashClusters, MinhashSignatures

            cfg = _dedup_config(recipe)
            phases.append(
                Phase(
                    "dedup_signatures",
                    [
                        # task r reads what signals task r stored, in order: the store position is the key;
                        # only the columns this phase reads (not every signal of the store)
                        SignalStoreReader(str(layout.signals), by_writer_rank=True,
                                          columns=_dedup_signature_columns(recipe)),
                        DedupPriority(recipe.decisions.model_dump(mode="json")),
                        MinhashSignatures(
                            output_folder=str(layout.dedup / "signatures"),
                            config=cfg,
                            priority_signal=recipe.dedup.priority_signal,
                            date_signal=recipe.dedup.date_signal,
                        ),
                    ],
                    tasks,
                    ["signal store reader (per signals task)", "dedup priority (ensemble bucket)",
                     "minhash + exact-hash signatures"],
                    inputs=[str(layout.signals)],
                )
            )
            ntasks = _dedup_tasks(recipe)
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
                    inputs=[str(layout.dedup / "signatures"), *[str(Path(p)) for p in recipe.dedup.index_from]],
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
    from assay.stages.decisions.plan_step import MixturePlan
    from assay.stages.decisions.step import Decide
    from assay.stages.output.shards import ExclusionWriter, ShardWriter

    spec = recipe.decisions.model_dump(mode="json")
    plan_file = None
    if recipe.decisions.rebalance or dedup_on:  # keepers among filter survivors, rebalancing: planned once
        plan_file = str(layout.decide_plan / "plan.json")
        phases.append(
            Phase(
                "decide_plan",
                [MixturePlan(str(store), spec, plan_file, clusters_folder=str(clusters) if dedup_on else None)],
                1,
                ["decide plan: dedup keepers among filter survivors, mixture (no text) -> decide_plan/plan.json"],
            )
        )

    decide_steps: list[Any] = [SignalStoreReader(str(store))]
    desc = [f"signal store reader ({store})"]
    if dedup_on:
        from assay.stages.dedup.minhash import DedupAnnotate

        # phase 1's sidecars beside the clusters (this run's, or the re-tiered run's) hold the exact hashes
        decide_steps.append(DedupAnnotate(clusters_folder=str(clusters), signatures_folder=str(clusters.parent / "signatures")))
        desc.append("dedup annotate (cluster id/size, duplicate_of)")
    out = recipe.output
    decide_steps.append(
        Decide(
            spec,
            plan_file=plan_file,
            exclusion_writer=ExclusionWriter(
                str(layout.excluded), include_text=out.exclusion_text, tokenizer_path=out.tokenizer_path,
                signal_schema=output_signal_schema(recipe),
            ),
        )
    )
    desc.append(
        f"decide ({len(recipe.decisions.rules)} rules, {len(recipe.decisions.tiers)} tiers"
        + (", plan from decide_plan/plan.json)" if plan_file else ")")
    )
    decide_steps.append(
        ShardWriter(
            str(layout.output),
            max_shard_bytes=out.max_shard_bytes,
            max_shard_tokens=out.max_shard_tokens,
            row_group_rows=out.row_group_rows,
            partition_by=list(out.partition_by),
            seed=out.seed,
            tokenizer_path=out.tokenizer_path,
            # outside output/: a rank cleaning its own shards never walks another rank's staging files
            staging_dir=str(layout.staging / "decide"),
            signal_schema=output_signal_schema(recipe),
        )
    )
    desc.append("parquet shard writer")
    phases.append(Phase("decide", decide_steps, tasks, desc, inputs=[str(store)]))

    if recipe.repo_documents.enabled:
        phases.append(_repo_docs_phase(recipe, layout, tasks))

    from assay.pipeline.finalize import Finalize

    phases.append(Phase("finalize", [Finalize(str(layout.root))], 1, ["manifest + funnel report"]))
    if recipe.pack.enabled:
        phases.extend(_pack_phases(recipe, layout, tasks))
    return phases


# ---------------------------------------------------------------- repository documents, plan, pack


def _repo_docs_phase(recipe: Recipe, layout: RunLayout, tasks: int) -> Phase:
    from assay.stages.code.repo_docs import RepoDocuments
    from assay.stages.output.shards import ShardWriter

    rd, out = recipe.repo_documents, recipe.output
    steps = [
        RepoDocuments(str(layout.output), max_chars=rd.max_chars, dedup_threshold=rd.dedup_threshold),
        ShardWriter(str(layout.root / "repo_docs"), max_shard_bytes=out.max_shard_bytes, row_group_rows=out.row_group_rows,
                    partition_by=list(out.partition_by), seed=out.seed, tokenizer_path=out.tokenizer_path),
    ]
    return Phase("repo_docs", steps, tasks, ["repository-level code documents (dependency order)", "parquet shard writer"])


def _pack_phases(recipe: Recipe, layout: RunLayout, tasks: int) -> list[Phase]:
    from assay.pipeline.pack import PackCheck, pack_params, pack_steps
    from assay.pipeline.plan import PlanStep

    pk = recipe.pack
    tok = resolve_value(pk.tokenizer)
    if not Path(tok).is_file():
        raise RecipeError(f"pack.tokenizer: file not found: {tok}")
    output = Path(pk.output) if pk.output else layout.root / "packed"
    params = pack_params(layout.root, tokenizer=tok, seq_len=pk.seq_len, algorithm=pk.algorithm, eos=pk.eos,
                         eos_token=pk.eos_token, pad_token=pk.pad_token, use_plan=pk.use_plan,
                         repo_documents=recipe.repo_documents.enabled, seed=pk.seed, plan_exists=True)
    steps, _ = pack_steps(params, output)
    phases = []
    if pk.use_plan:
        phases.append(Phase("plan", [PlanStep(str(layout.root))], 1, ["repetition plan (plan.json)"]))
    phases.append(Phase("pack", steps, tasks, [f"tokenize + {pk.algorithm} packing, seq_len {pk.seq_len} -> {output}"]))
    phases.append(Phase("pack_check", [PackCheck(str(output), str(layout.root), params=params)], 1,
                        ["read back with datatrove's reader; token round trip against the manifest"]))
    return phases
