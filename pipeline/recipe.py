"""Recipes: YAML validated into typed models.

Thresholds live only here. Unknown keys are rejected with the key's name and its line in the file.
The decision models (rules, tiers, ensemble, rebalancing) are defined in `assay.stages.decisions.spec`;
after validation, the decisions are checked against the signals the recipe's steps declare
(`assay.pipeline.registry.check_decisions`), so a misspelt signal fails here, before any work.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.pipeline.registry import RecipeError, check_decisions
from assay.stages.decisions.spec import (  # noqa: F401 (the decision models, re-exported for recipe users)
    CodeRuleSpec,
    DecisionSpec,
    Op,
    RebalanceSpec,
    RuleSpec,
    TierSpec,
    default_tiers,
)

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StepSpec(_Model):
    """One stage: a registry kind (versioned name) and its keyword parameters."""

    kind: str
    params: dict[str, Any] = Field(default_factory=dict)


class SourceSpec(_Model):
    """One input family: a reader and the parse/signal steps that apply to its documents."""

    name: Literal["web", "code", "pdf"]
    reader: StepSpec
    steps: list[StepSpec] = Field(default_factory=list)


class DedupSpec(_Model):
    enabled: bool = True
    exact: bool = True
    near: bool = True
    ngram: int = Field(5, ge=1, le=32)
    bands: int = Field(14, ge=1, le=64)
    rows: int = Field(8, ge=1, le=64)
    seed: int = 1
    shingle: Literal["auto", "word", "char"] = "auto"
    keep: Literal["highest_priority", "oldest", "first_id"] = "highest_priority"
    priority_signal: str | None = "quality__priority"
    date_signal: str | None = "date"
    index_from: list[str] = Field(default_factory=list, description="dedup index folders of earlier runs")


class OutputSpec(_Model):
    max_shard_bytes: int = Field(256 * 1024 * 1024, ge=1024)
    max_shard_tokens: int | None = None
    row_group_rows: int = Field(2048, ge=1)
    partition_by: list[Literal["source", "tier", "language"]] = Field(
        default_factory=lambda: ["source", "tier", "language"]
    )
    tokenizer_path: str | None = None
    seed: int = 0
    exclusion_text: bool = False
    normalize: bool = True


class ExecutorSpec(_Model):
    kind: Literal["local", "slurm", "ray"] = "local"
    tasks: int = Field(2, ge=1)
    workers: int = Field(2, ge=1)
    settings: dict[str, Any] = Field(default_factory=dict)


class Recipe(_Model):
    name: str
    version: int = 1
    description: str = ""
    sources: list[SourceSpec] = Field(default_factory=list)
    common_steps: list[StepSpec] = Field(default_factory=list)
    signal_store_rows: int = Field(2000, ge=1, description="documents per signal-store part file")
    dedup: DedupSpec = Field(default_factory=DedupSpec)
    decisions: DecisionSpec = Field(default_factory=DecisionSpec)
    output: OutputSpec = Field(default_factory=OutputSpec)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    retier_from: str | None = Field(
        None, description="a previous run directory: re-run only decisions and output from its stored signals"
    )

    @model_validator(mode="after")
    def _sources_or_retier(self) -> "Recipe":
        if not self.sources and not self.retier_from:
            raise ValueError("a recipe needs `sources` (or `retier_from` a previous run)")
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"each source name may appear once, got {names}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """Hash of the resolved recipe (stable key order); decides whether outputs may be mixed."""
        payload = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()


# ---------------------------------------------------------------- loading with line numbers


def _line_index(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map every key path in a YAML document to its 1-based line."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = (*path, k.value)
            out[key] = k.start_mark.line + 1
            _line_index(v, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _line_index(v, (*path, i), out)
    return out


def _line_of(lines: dict[tuple, int], loc: tuple) -> int | None:
    loc = tuple(loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return None


def _first_error(err: ValidationError, lines: dict[tuple, int], where: str) -> RecipeError:
    e = err.errors()[0]
    loc = tuple(x for x in e["loc"])
    dotted = ".".join(str(x) for x in loc) or "<root>"
    line = _line_of(lines, loc)
    at = f"{where}:{line}" if line else where
    if e["type"] == "extra_forbidden":
        return RecipeError(f"{at}: unknown key '{loc[-1]}' (at {dotted})")
    return RecipeError(f"{at}: {dotted}: {e['msg'].removeprefix('Value error, ')}")


def set_override(data: dict, dotted: str, value: Any) -> None:
    """Apply `a.b.0.c=value` to nested dicts/lists (creating dicts as needed)."""
    keys = dotted.split(".")
    cur: Any = data
    for i, k in enumerate(keys[:-1]):
        nxt_is_index = keys[i + 1].isdigit()
        if isinstance(cur, list):
            cur = cur[int(k)]
            continue
        if k not in cur or cur[k] is None:
            cur[k] = [] if nxt_is_index else {}
        cur = cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def parse_override(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise RecipeError(f"--set expects key=value, got '{item}'")
    key, raw = item.split("=", 1)
    return key.strip(), yaml.safe_load(raw) if raw.strip() else ""


def resolve_recipe_path(recipe: str | Path | None) -> Path:
    """A path, or the name of a recipe shipped in pipeline/recipes (`default`, `retier`, ...)."""
    if recipe is None:
        return RECIPES_DIR / "default.yaml"
    p = Path(recipe)
    if p.exists():
        return p
    shipped = RECIPES_DIR / f"{recipe}.yaml"
    if shipped.exists():
        return shipped
    raise RecipeError(f"recipe not found: {recipe}")


def load_recipe(recipe: str | Path | None = None, overrides: list[str] | None = None) -> Recipe:
    path = resolve_recipe_path(recipe)
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a YAML mapping")
    lines = _line_index(node) if node is not None else {}
    data = copy.deepcopy(data)
    for item in overrides or []:
        key, value = parse_override(item)
        try:
            set_override(data, key, value)
        except (KeyError, IndexError, ValueError, TypeError):
            raise RecipeError(f"--set {item}: no such place in the recipe") from None
    if data.get("retier_from"):
        data = _inherit_decisions(data)
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, lines, str(path)) from None
    check_decisions(recipe, lines, str(path))
    return recipe


def _inherit_decisions(data: dict) -> dict:
    """A re-tier starts from the earlier run's decisions; keys the re-tier recipe gives replace them."""
    prev = Path(data["retier_from"]) / "recipe.resolved.yaml"
    if not prev.exists():
        raise RecipeError(f"retier_from is not a finished run (no {prev})")
    base = (yaml.safe_load(prev.read_text()) or {}).get("decisions") or {}
    data["decisions"] = {**base, **(data.get("decisions") or {})}
    return data


def recipe_from_dict(data: dict[str, Any]) -> Recipe:
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, {}, "<recipe>") from None
    check_decisions(recipe)
    return recipe
