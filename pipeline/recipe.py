"""Recipes: YAML validated into typed models.

Thresholds live only here. Unknown keys are rejected with the key's name and its line in the file.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"


class RecipeError(ValueError):
    """A recipe that cannot be used; the message is one line naming the problem."""


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


Op = Literal[">=", ">", "<=", "<", "==", "!=", "in", "not in", "is_true", "is_false"]


class ConditionSpec(_Model):
    """`signal op value` (a missing signal never holds)."""

    signal: str
    op: Op
    value: Any = None


class RuleSpec(_Model):
    """Keep a document only when `signal op value` holds; else exclude it with reason `<source>_<name>`.

    `unless`: the rule does not apply to a document for which this condition holds (e.g. a language
    floor that does not apply to code listings: `unless: {signal: web__code_char_frac, op: ">=", value: 0.5}`).
    """

    name: str
    signal: str
    op: Op
    value: Any = None
    source: str | list[str] | None = None
    when_missing: Literal["keep", "reject"] = "keep"
    unless: ConditionSpec | None = None

    @field_validator("name")
    @classmethod
    def _name_is_code(cls, v: str) -> str:
        if not v.replace("_", "").isalnum():
            raise ValueError("rule names are reason codes: letters, digits and '_' only")
        return v

    def sources(self) -> list[str] | None:
        if self.source is None:
            return None
        return [self.source] if isinstance(self.source, str) else list(self.source)


class TierSpec(_Model):
    """Ensemble buckets [min_bucket, max_bucket] (0-19) map to a named tier with a sampling weight."""

    name: str
    min_bucket: int = Field(ge=0, le=19)
    max_bucket: int = Field(ge=0, le=19)
    weight: float = Field(1.0, ge=0.0, description="repetition factor in the mixture plan")

    @model_validator(mode="after")
    def _ordered(self) -> "TierSpec":
        if self.min_bucket > self.max_bucket:
            raise ValueError(f"tier {self.name}: min_bucket > max_bucket")
        return self


def _default_tiers() -> list[TierSpec]:
    return [
        TierSpec(name="high", min_bucket=15, max_bucket=19, weight=2.0),
        TierSpec(name="medium_high", min_bucket=10, max_bucket=14, weight=1.5),
        TierSpec(name="medium", min_bucket=5, max_bucket=9, weight=1.0),
        TierSpec(name="low", min_bucket=0, max_bucket=4, weight=0.5),
    ]


class DecisionSpec(_Model):
    rules: list[RuleSpec] = Field(default_factory=list)
    tiers: list[TierSpec] = Field(default_factory=_default_tiers)
    # source -> {signal column holding a calibrated percentile in [0,1] -> weight}
    ensemble: dict[str, dict[str, float]] = Field(default_factory=dict)
    ensemble_mode: Literal["max", "mean"] = Field(
        "max", description="max: a document good by any classifier (e.g. STEM) ranks high (Nemotron-CC style)"
    )
    unscored_bucket: int = Field(10, ge=0, le=19, description="bucket for documents without classifier scores")
    drop_tiers: list[str] = Field(default_factory=list, description="tiers excluded with reason tier_<name>")
    rebalance: dict[str, Any] = Field(
        default_factory=dict,
        description="{source, key, unit: bytes|tokens, caps, weights, seed}; see stages/decisions/rebalance.py",
    )
    code_rules: str | None = Field(
        "default",
        description="per-language code rule files: 'default' (stages/code/rules), a directory of your own, or null",
    )

    @model_validator(mode="after")
    def _tiers_cover(self) -> "DecisionSpec":
        covered = sorted(b for t in self.tiers for b in range(t.min_bucket, t.max_bucket + 1))
        if covered != list(range(20)):
            raise ValueError("tiers must cover buckets 0-19 exactly once")
        names = [t.name for t in self.tiers]
        unknown = set(self.drop_tiers) - set(names)
        if unknown:
            raise ValueError(f"drop_tiers names unknown tiers: {sorted(unknown)}")
        return self


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
    return RecipeError(f"{at}: {dotted}: {e['msg']}")


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
        return Recipe.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, lines, str(path)) from None


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
        return Recipe.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, {}, "<recipe>") from None
