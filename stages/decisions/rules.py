"""Decision functions: plain, deterministic functions of stored signals and recipe rules.

The batch run (`assay.stages.decisions.step.Decide`), the re-tier recipe and the notebooks all call these,
so a threshold tuned in a notebook means exactly the same thing in a run. Nothing here computes a
signal; changing a rule never re-runs extraction or scoring.

    decide_frame(df, spec) -> df + [keep, tier, reason, bucket]
    decide(signals, spec)  -> Decision(keep, tier, reason, bucket)   # one document

`spec` is a `assay.pipeline.recipe.DecisionSpec` (or a dict of the same shape, e.g. a recipe fragment).
Order of reasons: an earlier stage's `reject_reason`, then dedup (`dedup_exact`, `dedup_minhash`),
then the per-language code rule files (`code_<rule>`, `decisions.code_rules`: specific structural
detections first), then the recipe rules in order (`<source>_<rule>`), then rebalancing (`<source>_rebalance`), then dropped tiers
(`tier_<name>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import xxhash

DEDUP_EXACT = "dedup_exact"
DEDUP_MINHASH = "dedup_minhash"


@dataclass(frozen=True)
class Decision:
    keep: bool
    tier: str | None
    reason: str | None
    bucket: int | None


def _spec(spec: Any):
    from assay.pipeline.recipe import DecisionSpec

    if isinstance(spec, DecisionSpec):
        return spec
    return DecisionSpec.model_validate(spec or {})


def hash_fraction(doc_id: str, seed: int) -> float:
    """Deterministic uniform number in [0, 1) from a document id and a seed (no global random state)."""
    return xxhash.xxh64_intdigest(doc_id.encode("utf-8"), seed=seed) / 2**64


def _cond(col, op: str, value: Any):
    import polars as pl

    if op == ">=":
        return col >= value
    if op == ">":
        return col > value
    if op == "<=":
        return col <= value
    if op == "<":
        return col < value
    if op == "==":
        return col == value
    if op == "!=":
        return col != value
    if op == "in":
        return col.is_in(list(value))
    if op == "not in":
        return ~col.is_in(list(value))
    if op == "is_true":
        return col.cast(pl.Boolean)
    if op == "is_false":
        return ~col.cast(pl.Boolean)
    raise ValueError(f"unknown op {op}")


def _holds(df, signal: str, op: str, value: Any):
    """`signal op value` as a boolean expression; False where the signal is missing."""
    import polars as pl

    if signal not in df.columns:
        return pl.lit(False)
    col = pl.col(signal)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and op in (">=", ">", "<=", "<", "==", "!="):
        col = col.cast(pl.Float64, strict=False)
    return _cond(col, op, value).fill_null(False)


def rule_failure_exprs(df, spec) -> list[tuple[Any, str]]:
    """For each recipe rule, a boolean expression `rule fails` and the reason it gives."""
    import polars as pl

    spec = _spec(spec)
    out = []
    source = pl.col("source") if "source" in df.columns else pl.lit(None, dtype=pl.String)
    for rule in spec.rules:
        sources = rule.sources()
        applies = source.is_in(sources) if sources else pl.lit(True)
        if rule.signal in df.columns:
            col = pl.col(rule.signal)
            numeric = isinstance(rule.value, (int, float)) and not isinstance(rule.value, bool)
            if numeric and rule.op in (">=", ">", "<=", "<", "==", "!="):
                col = col.cast(pl.Float64, strict=False)
            holds = _cond(col, rule.op, rule.value)
            missing = col.is_null()
        else:
            holds = pl.lit(False)
            missing = pl.lit(True)
        missing_fails = pl.lit(rule.when_missing == "reject")
        fails = applies & pl.when(missing).then(missing_fails).otherwise(~holds.fill_null(False))
        if rule.unless is not None:
            fails = fails & ~_holds(df, rule.unless.signal, rule.unless.op, rule.unless.value)
        reason = (source.fill_null("doc") + pl.lit(f"_{rule.name}")) if sources is None else (
            source + pl.lit(f"_{rule.name}")
        )
        out.append((fails, reason))
    return out


def bucket_expr(df, spec):
    """Ensemble bucket 0-19 from calibrated percentile signals (`*__pct` in [0,1]) per source."""
    import polars as pl

    spec = _spec(spec)
    source = pl.col("source") if "source" in df.columns else pl.lit(None, dtype=pl.String)
    expr = pl.lit(None, dtype=pl.Float64)
    for src, weights in spec.ensemble.items():
        parts = [
            (pl.col(sig).cast(pl.Float64) * float(w)) for sig, w in weights.items() if sig in df.columns and w > 0
        ]
        if not parts:
            continue
        if spec.ensemble_mode == "max":
            combined = pl.max_horizontal(parts)
        else:
            present_w = [
                pl.when(pl.col(sig).is_null()).then(0.0).otherwise(float(w))
                for sig, w in weights.items()
                if sig in df.columns and w > 0
            ]
            combined = pl.sum_horizontal(parts) / pl.sum_horizontal(present_w)
        expr = pl.when(source == src).then(combined).otherwise(expr)
    bucket = (expr.clip(0.0, 1.0) * 20).floor().clip(0, 19).cast(pl.Int64)
    return bucket.fill_null(spec.unscored_bucket)


def tier_expr(bucket, spec):
    import polars as pl

    spec = _spec(spec)
    expr = pl.lit(None, dtype=pl.String)
    for t in spec.tiers:
        expr = pl.when((bucket >= t.min_bucket) & (bucket <= t.max_bucket)).then(pl.lit(t.name)).otherwise(expr)
    return expr


def code_rules_expr(df, spec):
    """First failing per-language code rule (`stages/code/rules/<family>.yaml`) of each code document."""
    import polars as pl

    spec = _spec(spec)
    if not spec.code_rules or "source" not in df.columns or not (df["source"] == "code").any():
        return None
    from assay.stages.code.rules import code_rule_decisions

    rules_dir = None if spec.code_rules == "default" else spec.code_rules
    cols = [c for c in df.columns if c.startswith("code__")]
    if not cols:
        return None

    def first_reason(row: dict) -> str | None:
        reasons = code_rule_decisions(row, row.get("code__language"), rules_dir=rules_dir)
        return reasons[0] if reasons else None

    per_row = pl.struct(cols).map_elements(first_reason, return_dtype=pl.String, skip_nulls=False)
    return pl.when(pl.col("source") == "code").then(per_row).otherwise(pl.lit(None, dtype=pl.String))


def decide_frame(df, spec, *, rebalance_probs: Mapping[str, float] | None = None, _plan: bool = True):
    """Add `bucket`, `tier`, `reason` and `keep` columns to a polars DataFrame of stored signals.

    With `decisions.rebalance` set and no `rebalance_probs`, the keep probabilities are planned from
    this frame itself (it must then hold the whole run, with `text`, as in a notebook).
    """
    import polars as pl

    spec = _spec(spec)
    if spec.rebalance and rebalance_probs is None and _plan and "text" in df.columns:
        from assay.stages.decisions.rebalance import plan_probabilities

        rebalance_probs = plan_probabilities(df, spec)
    if df.height == 0:
        return df.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("bucket"),
            pl.lit(None, dtype=pl.String).alias("tier"),
            pl.lit(None, dtype=pl.String).alias("reason"),
            pl.lit(None, dtype=pl.Boolean).alias("keep"),
        )
    bucket = bucket_expr(df, spec)
    df = df.with_columns(bucket.alias("bucket"))
    df = df.with_columns(tier_expr(pl.col("bucket"), spec).alias("tier"))

    chain: list[tuple[Any, Any]] = []
    if "reject_reason" in df.columns:
        rr = pl.col("reject_reason").cast(pl.String)
        chain.append((rr.is_not_null() & (rr != ""), rr))
    if "dedup__exact_duplicate" in df.columns:
        chain.append((pl.col("dedup__exact_duplicate").cast(pl.Boolean).fill_null(False), pl.lit(DEDUP_EXACT)))
    if "dedup__is_duplicate" in df.columns:
        chain.append((pl.col("dedup__is_duplicate").cast(pl.Boolean).fill_null(False), pl.lit(DEDUP_MINHASH)))
    code = code_rules_expr(df, spec)
    if code is not None:
        df = df.with_columns(code.alias("__code_rule"))
        chain.append((pl.col("__code_rule").is_not_null(), pl.col("__code_rule")))
    chain.extend(rule_failure_exprs(df, spec))
    if rebalance_probs is not None and spec.rebalance:
        chain.append(rebalance_failure_expr(df, spec, rebalance_probs))
    for name in spec.drop_tiers:
        chain.append((pl.col("tier") == name, pl.lit(f"tier_{name}")))

    reason = pl.lit(None, dtype=pl.String)
    for cond, why in reversed(chain):
        reason = pl.when(cond).then(why).otherwise(reason)
    df = df.with_columns(reason.cast(pl.String).alias("reason"))
    if "__code_rule" in df.columns:
        df = df.drop("__code_rule")
    return df.with_columns(pl.col("reason").is_null().alias("keep"))


def rebalance_failure_expr(df, spec, probs: Mapping[str, float]):
    """Deterministic down-sampling: keep a document of group g when hash(id, seed) < probs[g]."""
    import polars as pl

    from assay.stages.code.rebalance import rebalance_keep

    spec = _spec(spec)
    key = spec.rebalance.get("key", "code__language")
    seed = int(spec.rebalance.get("seed", 0))
    source = spec.rebalance.get("source", "code")
    if key not in df.columns:
        return pl.lit(False), pl.lit(None, dtype=pl.String)
    prob = pl.col(key).cast(pl.String).fill_null("unknown").replace_strict(
        {k: float(v) for k, v in probs.items()}, default=1.0, return_dtype=pl.Float64
    )
    dropped = pl.struct(pl.col("id").cast(pl.String), prob.alias("p")).map_elements(
        lambda r: not rebalance_keep(r["id"], r["p"], seed), return_dtype=pl.Boolean
    )
    cond = (pl.col("source") == source) & dropped
    return cond, pl.lit(f"{source}_rebalance")


def decide(signals: Mapping[str, Any], spec) -> Decision:
    """Decide one document from its stored signals (same logic as `decide_frame`)."""
    import polars as pl

    row = {k: v for k, v in signals.items() if not isinstance(v, (list, dict))}
    df = pl.DataFrame([row], strict=False) if row else pl.DataFrame({"id": [""]})
    out = decide_frame(df, spec).row(0, named=True)
    return Decision(keep=bool(out["keep"]), tier=out["tier"], reason=out["reason"], bucket=out["bucket"])


def tier_weights(spec) -> dict[str, float]:
    spec = _spec(spec)
    return {t.name: t.weight for t in spec.tiers}


def rules_fragment(spec) -> dict[str, Any]:
    """The `decisions:` part of a recipe for a spec, ready to dump as YAML (used by the notebook)."""
    spec = _spec(spec)
    return {"decisions": spec.model_dump(mode="json", exclude_defaults=False)}
