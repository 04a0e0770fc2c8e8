"""Load a run's stored signals for notebooks and re-tiering: the signal store joined with the dedup
clusters (the same annotations `DedupAnnotate` adds in the decide phase), one row per document."""

from __future__ import annotations

from pathlib import Path

import yaml


def run_store_dirs(run_dir: str | Path) -> tuple[Path, Path]:
    """(signal store, dedup clusters) of a run; a re-tier run points at its source run's."""
    run_dir = Path(run_dir)
    recipe = yaml.safe_load((run_dir / "recipe.resolved.yaml").read_text())
    base = Path(recipe["retier_from"]) if recipe.get("retier_from") else run_dir
    return base / "signals", base / "dedup" / "clusters"


def load_run_signals(run_dir: str | Path):
    from assay.stages.common.store import read_signals
    from assay.stages.decisions.rebalance import join_dedup_lookup

    store, clusters = run_store_dirs(run_dir)
    return join_dedup_lookup(read_signals(store), clusters / "lookup.parquet")
