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


class PlanSpec(_Model):
    """Repetition plan defaults (`assay plan`; pipeline/plan.py)."""

    max_repeats: float = Field(4.0, gt=0, description="cap on epochs of any source x tier x language slice")
    tokens: str | int | None = Field(None, description="token budget, e.g. 1T; None: epochs = tier weight (capped)")
    source_weights: dict[str, float] = Field(default_factory=dict, description="source -> weight multiplier")
    seed: int = 0


class PackSpec(_Model):
    """Tokenize-and-pack phase (`assay pack`; pipeline/pack.py, docs/packing.md); off unless enabled."""

    enabled: bool = False
    tokenizer: str | None = Field(None, description="a `tokenizers` JSON file (required when enabled)")
    seq_len: int = Field(8192, ge=1)
    algorithm: Literal["best_fit", "concat"] = "best_fit"
    eos: bool = True
    eos_token: str | None = None
    pad_token: str | None = None
    output: str | None = Field(None, description="output folder; default <run>/packed")
    use_plan: bool = True
    seed: int = 0

    @model_validator(mode="after")
    def _tokenizer_when_enabled(self) -> "PackSpec":
        if self.enabled and not self.tokenizer:
            raise ValueError("pack.enabled needs pack.tokenizer (a tokenizers JSON file)")
        return self


class RepoDocsSpec(_Model):
    """Repository-level code documents (stages/code/repo_docs.py); off unless enabled."""

    enabled: bool = False
    max_chars: int = Field(400_000, ge=1000, description="split a repository document at file boundaries past this")
    dedup_threshold: float = Field(0.9, gt=0, le=1.0, description="file-set Jaccard at or above which a repository is a duplicate")


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
    plan: PlanSpec = Field(default_factory=PlanSpec)
    pack: PackSpec = Field(default_factory=PackSpec)
    repo_documents: RepoDocsSpec = Field(default_factory=RepoDocsSpec)
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

MAX_YAML_NODES = 100_000  # a recipe has a few hundred; aliases may not expand it past this


class _RecipeLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys and caps the size of the document once aliases are
    expanded (a few hundred bytes of nested aliases can otherwise expand to gigabytes).

    Sizes are counted while composing, bottom-up: each node's expanded size is one plus the sizes of
    its children, and an aliased node is counted again wherever it is referenced, so the check costs
    one pass over the text and fails as soon as the expansion crosses `MAX_YAML_NODES`."""

    def compose_node(self, parent, index):  # type: ignore[override]
        node = super().compose_node(parent, index)
        if not hasattr(node, "_assay_size"):
            if isinstance(node, yaml.MappingNode):
                size = 1 + sum(getattr(k, "_assay_size", 1) + getattr(v, "_assay_size", 1) for k, v in node.value)
                self._check_duplicates(node)
            elif isinstance(node, yaml.SequenceNode):
                size = 1 + sum(getattr(v, "_assay_size", 1) for v in node.value)
            else:
                size = 1
            if size > MAX_YAML_NODES:
                raise _YamlLimit(
                    f"line {node.start_mark.line + 1}: aliases expand this document past {MAX_YAML_NODES} nodes "
                    "(alias bomb?); write the values out instead"
                )
            node._assay_size = size
        return node

    @staticmethod
    def _check_duplicates(node: yaml.MappingNode) -> None:
        seen: dict[str, int] = {}
        for k, _ in node.value:
            if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
                continue
            line = k.start_mark.line + 1
            if k.value in seen:
                raise _YamlLimit(f"line {line}: duplicate key '{k.value}' (first at line {seen[k.value]})")
            seen[k.value] = line


class _YamlLimit(yaml.YAMLError):
    """A recipe refused by `_RecipeLoader` (duplicate key, alias expansion over the cap)."""


def load_yaml_document(text: str, where: str) -> tuple[Any, yaml.Node | None]:
    """(data, composed node) of one YAML document, through `_RecipeLoader`; RecipeError (one line) on
    invalid YAML, a duplicate key or an alias bomb."""
    loader = _RecipeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _YamlLimit as e:
        raise RecipeError(f"{where}: {e}") from None
    except yaml.YAMLError as e:
        raise RecipeError(f"{where}: invalid YAML: {str(e).splitlines()[0]}") from None
    finally:
        loader.dispose()
    return data, node



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


def _list_index(items: list, key: str, where: str) -> int:
    """A list item by position (`0`) or by its `name` (`min_words`)."""
    if key.lstrip("-").isdigit():
        i = int(key)
        if not -len(items) <= i < len(items):
            raise RecipeError(f"{where}: index {i} out of range (the list has {len(items)} items)")
        return i % len(items)
    for field in ("name", "kind"):  # rules/tiers/sources have a name; steps a kind
        hits = [i for i, it in enumerate(items) if isinstance(it, dict) and it.get(field) == key]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise RecipeError(f"{where}: {len(hits)} items have {field} '{key}'; use an index")
    names = [str(it.get("name", it.get("kind"))) for it in items if isinstance(it, dict)]
    shown = ", ".join(n for n in names if n != "None") or "none has a name"
    raise RecipeError(f"{where}: no item named '{key}' (names: {shown})")


def set_override(data: dict, dotted: str, value: Any) -> tuple:
    """Apply `a.b.c=value` to nested dicts/lists (creating dicts as needed). List items are addressed
    by index (`decisions.rules.0.value`), by their `name` (`decisions.rules.min_words.value`,
    `decisions.tiers.high.min_bucket`, `sources.pdf...`) or, for steps, their `kind`
    (`sources.pdf.steps.pdf_ocr_v1.params.server`). Returns the resolved path (indexes only)."""
    keys = dotted.split(".")
    if not dotted or any(not k for k in keys):
        raise RecipeError(f"--set {dotted}: empty key")
    cur: Any = data
    path: list = []
    for i, k in enumerate(keys):
        where = f"--set {dotted}: {'.'.join(keys[:i]) or '<recipe>'}"
        last = i == len(keys) - 1
        if isinstance(cur, list):
            k = _list_index(cur, k, where)
        elif isinstance(cur, dict):
            if not last and (k not in cur or cur[k] is None):
                cur[k] = {}
        else:
            raise RecipeError(f"{where} is a {type(cur).__name__}, it has no key '{k}'")
        path.append(k)
        if last:
            cur[k] = value
        else:
            cur = cur[k]
    return tuple(path)


def parse_override(item: str) -> tuple[str, Any]:
    """`key.path=value` (value parsed as YAML); `key.path=@file.yaml` reads the value from a YAML file.
    A file whose only top-level key is the key's last part (e.g. a `decisions:` fragment given to
    `--set decisions=@tuned.yaml`) gives that key's value."""
    if "=" not in item:
        raise RecipeError(f"--set expects key=value, got '{item}'")
    key, raw = item.split("=", 1)
    key = key.strip()
    if raw.startswith("@"):
        path = Path(raw[1:]).expanduser()
        try:
            value = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise RecipeError(f"--set {item}: cannot read {path} ({e.strerror or e})") from None
        except yaml.YAMLError as e:
            raise RecipeError(f"--set {item}: invalid YAML in {path}: {str(e).splitlines()[0]}") from None
        last = key.split(".")[-1]
        if isinstance(value, dict) and list(value) == [last]:
            value = value[last]
        return key, value
    try:
        return key, yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise RecipeError(f"--set {item}: the value is not valid YAML ({str(e).splitlines()[0]})") from None


_EXPECTED = {
    "int_parsing": "an integer", "int_type": "an integer", "int_from_float": "an integer",
    "float_parsing": "a number", "float_type": "a number",
    "bool_parsing": "true or false", "bool_type": "true or false",
    "string_type": "a string", "list_type": "a list, e.g. [a, b]", "dict_type": "a mapping, e.g. {k: v}",
    "model_type": "a mapping, e.g. {k: v}",
}


def override_error(err: ValidationError, applied: list[tuple[str, tuple]]) -> RecipeError | None:
    """A validation error caused by a `--set`, as one line naming the flag and what it expects."""
    e = err.errors()[0]
    loc = tuple(e["loc"])
    for item, path in reversed(applied):
        if loc[: len(path)] == path or path[: len(loc)] == loc:
            expected = _EXPECTED.get(e["type"])
            got = e.get("input")
            if e["type"] == "extra_forbidden":
                return RecipeError(f"--set {item}: unknown key '{loc[-1]}'")
            if expected:
                return RecipeError(f"--set {item}: expected {expected}, got {got!r}")
            msg = str(e["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's message
            return RecipeError(f"--set {item}: {msg}")
    return None


def shipped_recipes() -> list[str]:
    """Names of the recipes shipped in pipeline/recipes."""
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def resolve_recipe_path(recipe: str | Path | None) -> Path:
    """A path, or the name of a recipe shipped in pipeline/recipes (`default`, `retier`, ...)."""
    if recipe is None:
        return RECIPES_DIR / "default.yaml"
    p = Path(recipe)
    if p.is_file():
        return p
    shipped = RECIPES_DIR / f"{recipe}.yaml"
    if "/" not in str(recipe) and shipped.exists():
        return shipped
    if p.is_dir():
        raise RecipeError(f"recipe is a directory, not a YAML file: {recipe}")
    raise RecipeError(
        f"recipe not found: {recipe} (a YAML file, or a shipped recipe: {', '.join(shipped_recipes())})"
    )


def load_recipe(recipe: str | Path | None = None, overrides: list[str] | None = None) -> Recipe:
    path = resolve_recipe_path(recipe)
    text = path.read_text(encoding="utf-8")
    data, node = load_yaml_document(text, str(path))
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a YAML mapping")
    lines = _line_index(node) if node is not None else {}
    parsed = [(item, *parse_override(item)) for item in overrides or []]
    base = data
    data = copy.deepcopy(base)
    for item, key, value in parsed:  # retier_from may come from --set: its decisions come first
        if key == "retier_from":
            data["retier_from"] = value
    if data.get("retier_from"):
        data = _inherit_decisions(data)
    applied = []
    for item, key, value in parsed:
        applied.append((item, set_override(data, key, value)))
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as err:
        raise override_error(err, applied) or _first_error(err, lines, str(path)) from None
    _check_rule_values(recipe, applied)
    check_decisions(recipe, lines, str(path))
    return recipe


def _check_rule_values(recipe: "Recipe", applied: list[tuple[str, tuple]]) -> None:
    """A rule value set with --set must suit its operator (`>=` needs a number, `in` a list)."""
    for item, path in applied:
        if path[:2] != ("decisions", "rules") or len(path) < 3:
            continue
        rule = recipe.decisions.rules[path[2]]
        v = rule.value
        if rule.op in (">=", ">", "<=", "<") and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise RecipeError(f"--set {item}: rule '{rule.name}' ({rule.op}) expects a number, got {v!r}")
        if rule.op in ("in", "not in") and not isinstance(v, list):
            raise RecipeError(f"--set {item}: rule '{rule.name}' ({rule.op}) expects a list, got {v!r}")


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
