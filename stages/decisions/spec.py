"""Every decision model, typed to the leaves: rules, code rules, tiers, ensemble, rebalancing, dropped tiers.

`assay.pipeline.recipe` imports these for the `decisions:` block of a recipe; the decision functions
(`assay.stages.decisions.compile`) take them. Nothing here imports another part of the project.

Thresholds are typed by operator: `>=`, `>`, `<=`, `<` take a number; `in` / `not in` a list of
scalars; `is_true` / `is_false` no value; `==` / `!=` one scalar. `value: fifty` is an error here, not
an 80 KB polars expression in the decide phase. Which signal a rule may name, and whether the operator
fits its type, is checked against the signals the recipe's steps declare (`check_rule_signal`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "Op", "SignalType", "NUMERIC_OPS", "RuleSpec", "CodeRuleSpec", "CodeRuleFile", "TierSpec", "RebalanceSpec",
    "DecisionSpec", "default_tiers", "as_spec", "N_BUCKETS", "SignalDecl", "SIGNAL_TYPES", "check_rule_signal",
    "signal_type", "STAGES", "DEFAULT_CODE_RULES_DIR",
]

N_BUCKETS = 20
Op = Literal[">=", ">", "<=", "<", "==", "!=", "in", "not in", "is_true", "is_false"]
NUMERIC_OPS = (">=", ">", "<=", "<")
SignalType = Literal["bool", "int", "float", "str"]
SIGNAL_TYPES: tuple[str, ...] = ("bool", "int", "float", "str")
# the funnel stage of every reason the compiler gives, in decision order
STAGES = ("reject", "rules", "tier", "dedup", "rebalance")
DEFAULT_CODE_RULES_DIR = Path(__file__).resolve().parent.parent / "code" / "rules"

Scalar = Union[bool, int, float, str]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_value(name: str, op: str, value: Any) -> Any:
    if op in NUMERIC_OPS:
        if not _is_number(value):
            raise ValueError(f"rule {name}: op '{op}' needs a number, got {value!r}")
    elif op in ("in", "not in"):
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"rule {name}: op '{op}' needs a non-empty list, got {value!r}")
        if any(isinstance(v, (list, dict, tuple)) or v is None for v in value):
            raise ValueError(f"rule {name}: op '{op}' needs a list of scalars, got {value!r}")
        value = list(value)
    elif op in ("is_true", "is_false"):
        if value is not None:
            raise ValueError(f"rule {name}: op '{op}' takes no value, got {value!r}")
    elif value is None or isinstance(value, (list, dict, tuple)):
        raise ValueError(f"rule {name}: op '{op}' needs one scalar value, got {value!r}")
    return value


class ConditionSpec(_Model):
    """`signal op value` (a missing signal never holds); the `unless` of a rule."""

    signal: str
    op: Op
    value: Union[Scalar, list[Scalar], None] = None

    @model_validator(mode="after")
    def _typed_value(self) -> "ConditionSpec":
        checked = _check_value(f"unless {self.signal}", self.op, self.value)
        if checked is not self.value:
            object.__setattr__(self, "value", checked)
        return self


class RuleSpec(_Model):
    """Keep a document only when `signal op value` holds; else exclude it with reason `<source>_<name>`.

    `unless`: the rule does not apply to a document for which this condition holds (e.g. a language
    floor that does not apply to code listings: `unless: {signal: web__code_char_frac, op: ">=", value: 0.25}`);
    a list of conditions: not where any of them holds.
    """

    name: str
    signal: str
    op: Op
    value: Union[Scalar, list[Scalar], None] = None
    source: Union[str, list[str], None] = None
    when_missing: Literal["keep", "reject"] = "keep"
    unless: Union[ConditionSpec, list[ConditionSpec], None] = None

    def unless_conditions(self) -> list[ConditionSpec]:
        """The `unless` conditions as a list (empty when there is none)."""
        if self.unless is None:
            return []
        return list(self.unless) if isinstance(self.unless, list) else [self.unless]

    @field_validator("name")
    @classmethod
    def _name_is_code(cls, v: str) -> str:
        if not v.replace("_", "").isalnum():
            raise ValueError("rule names are reason codes: letters, digits and '_' only")
        return v

    @model_validator(mode="after")
    def _typed_value(self) -> "RuleSpec":
        checked = _check_value(self.name, self.op, self.value)
        if checked is not self.value:
            object.__setattr__(self, "value", checked)
        return self

    def sources(self) -> list[str] | None:
        if self.source is None:
            return None
        return [self.source] if isinstance(self.source, str) else list(self.source)


class CodeRuleSpec(_Model):
    """One row of a per-language code rule file (`stages/code/rules/<family>.yaml`): reason `code_<name>`."""

    name: str
    signal: str | None = None
    op: Op | None = None
    value: Union[Scalar, list[Scalar], None] = None
    when_missing: Literal["keep", "reject"] = "keep"
    disabled: bool = False

    @model_validator(mode="after")
    def _typed_value(self) -> "CodeRuleSpec":
        if self.disabled:
            return self
        if self.signal is None or self.op is None:
            raise ValueError(f"code rule {self.name}: needs `signal` and `op` (or `disabled: true`)")
        checked = _check_value(self.name, self.op, self.value)
        if checked is not self.value:
            object.__setattr__(self, "value", checked)
        return self

    def as_rule(self) -> RuleSpec:
        return RuleSpec(name=self.name, signal=self.signal, op=self.op, value=self.value, source="code",
                        when_missing=self.when_missing)


class CodeRuleFile(_Model):
    """A family file: the languages it covers and the rules merged over `default.yaml` by name."""

    family: str | None = None
    languages: list[str] = Field(default_factory=list)
    rules: list[CodeRuleSpec] = Field(default_factory=list)


class TierSpec(_Model):
    """Ensemble buckets [min_bucket, max_bucket] (0-19) map to a named tier with a sampling weight."""

    name: str
    min_bucket: int = Field(ge=0, le=N_BUCKETS - 1)
    max_bucket: int = Field(ge=0, le=N_BUCKETS - 1)
    weight: float = Field(1.0, ge=0.0, description="repetition factor in the mixture plan")

    @model_validator(mode="after")
    def _ordered(self) -> "TierSpec":
        if self.min_bucket > self.max_bucket:
            raise ValueError(f"tier {self.name}: min_bucket > max_bucket")
        return self


def default_tiers() -> list[TierSpec]:
    return [
        TierSpec(name="high", min_bucket=15, max_bucket=19, weight=2.0),
        TierSpec(name="medium_high", min_bucket=10, max_bucket=14, weight=1.5),
        TierSpec(name="medium", min_bucket=5, max_bucket=9, weight=1.0),
        TierSpec(name="low", min_bucket=0, max_bucket=4, weight=0.5),
    ]


class RebalanceSpec(_Model):
    """Down-sample one source by a key (language, file type) to caps and weights; see decisions/rebalance.py."""

    source: str = "code"
    key: str = "code__language"
    unit: Literal["bytes", "tokens"] = "bytes"
    caps: dict[str, int] = Field(default_factory=dict, description="key (or '*') -> most bytes/tokens kept")
    weights: dict[str, float] = Field(default_factory=dict, description="key (or '*') -> keep factor (<1 samples)")
    seed: int = 0

    @field_validator("caps")
    @classmethod
    def _caps(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: c for k, c in v.items() if c < 0}
        if bad:
            raise ValueError(f"negative caps: {bad}")
        return v

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: w for k, w in v.items() if w < 0}
        if bad:
            raise ValueError(f"negative weights: {bad}")
        return v

    def get(self, key: str, default: Any = None) -> Any:
        """Dict-style read (`rb.get("unit", "bytes")`) for callers written against the old dict block."""
        return getattr(self, key, default)


class DecisionSpec(_Model):
    rules: list[RuleSpec] = Field(default_factory=list)
    tiers: list[TierSpec] = Field(default_factory=default_tiers)
    # source -> {signal column holding a calibrated percentile in [0,1] -> weight}
    ensemble: dict[str, dict[str, float]] = Field(default_factory=dict)
    ensemble_mode: Literal["max", "mean"] = Field(
        "max", description="max: a document good by any classifier (e.g. STEM) ranks high (Nemotron-CC style)"
    )
    unscored_bucket: int = Field(10, ge=0, le=N_BUCKETS - 1, description="bucket for documents without scores")
    drop_tiers: list[str] = Field(default_factory=list, description="tiers excluded with reason tier_<name>")
    rebalance: RebalanceSpec | None = Field(None, description="see RebalanceSpec; null: no rebalancing")
    code_rules: str | None = Field(
        "default",
        description="per-language code rule files: 'default' (stages/code/rules), a directory of your own, or null",
    )

    @field_validator("rebalance", mode="before")
    @classmethod
    def _empty_rebalance(cls, v: Any) -> Any:
        return None if v == {} else v

    @field_validator("ensemble")
    @classmethod
    def _ensemble_weights(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for src, weights in v.items():
            bad = {k: w for k, w in weights.items() if w < 0}
            if bad:
                raise ValueError(f"ensemble.{src}: negative weights {bad}")
        return v

    @model_validator(mode="after")
    def _tiers_cover(self) -> "DecisionSpec":
        covered = sorted(b for t in self.tiers for b in range(t.min_bucket, t.max_bucket + 1))
        if covered != list(range(N_BUCKETS)):
            raise ValueError(f"tiers must cover buckets 0-{N_BUCKETS - 1} exactly once")
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be unique, got {names}")
        unknown = set(self.drop_tiers) - set(names)
        if unknown:
            raise ValueError(f"drop_tiers names unknown tiers: {sorted(unknown)}")
        rule_names = [r.name for r in self.rules]
        dup = sorted({n for n in rule_names if rule_names.count(n) > 1})
        if dup:
            raise ValueError(f"rule names must be unique (they are reason codes): {dup}")
        return self


def as_spec(spec: Any) -> DecisionSpec:
    """A DecisionSpec from a DecisionSpec, a dict of the same shape (a recipe fragment) or None."""
    if isinstance(spec, DecisionSpec):
        return spec
    if isinstance(spec, BaseModel):  # a DecisionSpec-like model of another module
        spec = spec.model_dump(mode="json")
    return DecisionSpec.model_validate(spec or {})


# ------------------------------------------------------------------------------- declared signals


class SignalDecl(_Model):
    """A signal a step produces: an exact name, or a family pattern with `<name>` placeholders
    (`fasttext_<m>__pct`), and its type."""

    name: str
    type: SignalType

    def regex(self) -> re.Pattern:
        parts = re.split(r"<[a-z_]+>", self.name)
        return re.compile("^" + "[A-Za-z0-9_]+?".join(re.escape(p) for p in parts) + "$")

    @property
    def is_pattern(self) -> bool:
        return "<" in self.name


def signal_type(name: str, declared: Mapping[str, str] | list[SignalDecl]) -> str | None:
    """The declared type of `name` (exact names first, then patterns), or None when undeclared."""
    if isinstance(declared, Mapping):
        decls = [SignalDecl(name=k, type=v) for k, v in declared.items()]
    else:
        decls = list(declared)
    for d in decls:
        if not d.is_pattern and d.name == name:
            return d.type
    for d in decls:
        if d.is_pattern and d.regex().match(name):
            return d.type
    return None


def check_rule_signal(name: str, signal: str, op: str | None, value: Any, typ: str | None) -> str | None:
    """Why `signal op value` does not fit a signal of declared type `typ` (None: it fits)."""
    if typ is None:
        return f"rule {name}: unknown signal '{signal}' (no step of the recipe declares it)"
    if op in NUMERIC_OPS and typ not in ("int", "float"):
        return f"rule {name}: op '{op}' needs a numeric signal, '{signal}' is {typ}"
    if op in ("is_true", "is_false") and typ != "bool":
        return f"rule {name}: op '{op}' needs a bool signal, '{signal}' is {typ}"
    values = value if isinstance(value, list) else [value]
    if op in ("==", "!=", "in", "not in"):
        for v in values:
            fits = (
                (typ == "str" and isinstance(v, str))
                or (typ == "bool" and isinstance(v, bool))
                or (typ in ("int", "float") and _is_number(v))
            )
            if not fits:
                return f"rule {name}: value {v!r} does not fit '{signal}' ({typ})"
    return None
