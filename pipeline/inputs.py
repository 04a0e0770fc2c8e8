"""The input paths a recipe names: the embedded sample's `sample:` names resolved, folders expanded.

Shared by the phase builder (input checks), the runner (increments) and finalize (the manifest's inputs),
so none of them imports another for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.pipeline.recipe import Recipe, RecipeError

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"


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


def expand_inputs(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        elif p.exists():
            files.append(p)
    return files
