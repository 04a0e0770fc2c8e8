"""The decision compiler: plain, deterministic functions of stored signals and a `DecisionSpec`.

One compiler turns recipe rules, the per-language code rule files, dropped tiers, dedup and
rebalancing into polars expressions that give every document a `(reason, stage)`; the batch run
(`assay.stages.decisions.step.Decide`), a re-tier run, the benchmarks and the notebooks all call it,
so a threshold tuned in a notebook means exactly the same thing in a run. Nothing here computes a
signal; changing a rule never re-runs extraction or scoring.

    decide_frame(df, spec) -> df + [bucket, tier, reason, stage, keep, duplicate_of]
    decide(signals, spec)  -> Decision(keep, tier, reason, bucket, stage)   # one document

Decision order (the first that applies gives the reason; `stage` in brackets):
1. an earlier stage's `reject_reason` [reject];
2. the per-language code rule files, `code_<rule>` [rules]: specific structural detections first;
3. the recipe rules in order, `<source>_<rule>` [rules];
4. dropped tiers, `tier_<name>` [tier];
5. dedup among the survivors of 1-4, `dedup_exact` / `dedup_minhash` [dedup] (see `dedup.keepers`);
6. rebalancing, `<source>_rebalance` [rebalance].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import xxhash

from assay.stages.decisions.code_rules import load_code_rules, rules_dir_of
from assay.stages.decisions.dedup import KEEPER_COLUMNS, has_clusters, keepers
from assay.stages.decisions.mixture import amounts_of, plan_rebalance
from assay.stages.decisions.spec import NUMERIC_OPS, DecisionSpec, RuleSpec, as_spec
from assay.stages.decisions.tiers import bucket_expr, tier_expr, tier_weights

__all__ = ["Decision", "decide", "decide_frame", "hash_fraction", "rule_failure_exprs", "code_rule_exprs",
           "code_rule_reasons", "tier_weights", "rules_fragment", "DEDUP_EXACT", "DEDUP_MINHASH", "OUTPUT_COLUMNS"]

DEDUP_EXACT = "dedup_exact"
DEDUP_MINHASH = "dedup_minhash"
OUTPUT_COLUMNS = ("bucket", "tier", "reason", "stage", "keep", "duplicate_of")


@dataclass(frozen=True)
class Decision:
    keep: bool
    tier: str | None
    reason: str | None
    bucket: int | None
    stage: str | None = None


def hash_fraction(doc_id: str, seed: int) -> float:
    """Deterministic uniform number in [0, 1) from a document id and a seed (no global random state)."""
    return xxhash.xxh64_intdigest(doc_id.encode("utf-8"), seed=seed) / 2**64


# ------------------------------------------------------------------------------------- conditions


def _typed_col(name: str, op: str, value: Any):
    import polars as pl

    col = pl.col(name)
    values = value if isinstance(value, list) else [value]
    if op in ("is_true", "is_false"):
        return col.cast(pl.Boolean, strict=False)
    if op in NUMERIC_OPS or all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return col.cast(pl.Float64, strict=False)
    if all(isinstance(v, bool) for v in values):
        return col.cast(pl.Boolean, strict=False)
    return col.cast(pl.String)


def _holds(col, op: str, value: Any):
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
        return col
    if op == "is_false":
        return ~col
    raise ValueError(f"unknown op {op}")


def _fails(signal: str, op: str, value: Any, when_missing: str, columns: set[str]):
    """Boolean expression: the condition `signal op value` fails (a missing value fails only on `reject`)."""
    import polars as pl

    missing_fails = pl.lit(when_missing == "reject")
    if signal not in columns:
        return missing_fails
    col = _typed_col(signal, op, value)
    missing = col.is_null() | (col.is_nan() if op in NUMERIC_OPS else pl.lit(False))
    return pl.when(missing).then(missing_fails).otherwise(~_holds(col, op, value).fill_null(False))


def _source(columns: set[str]):
    import polars as pl

    return pl.col("source").cast(pl.String) if "source" in columns else pl.lit(None, dtype=pl.String)


def _condition_holds(cond, columns: set[str]):
    """`signal op value` of an `unless` condition: True where it holds; a missing signal never holds."""
    import polars as pl

    if cond.signal not in columns:
        return pl.lit(False)
    return _holds(_typed_col(cond.signal, cond.op, cond.value), cond.op, cond.value).fill_null(False)


def rule_failure_exprs(df, spec) -> list[tuple[Any, Any]]:
    """For each recipe rule, a boolean expression `rule fails` and the reason it gives."""
    import polars as pl

    spec = as_spec(spec)
    columns = set(df.columns)
    source = _source(columns)
    out = []
    for rule in spec.rules:
        sources = rule.sources()
        applies = source.is_in(sources).fill_null(False) if sources else pl.lit(True)
        fails = applies & _fails(rule.signal, rule.op, rule.value, rule.when_missing, columns)
        for cond in rule.unless_conditions():  # the rule does not apply where an `unless` condition holds
            fails = fails & ~_condition_holds(cond, columns)
        reason = (source.fill_null("doc") if sources is None else source) + pl.lit(f"_{rule.name}")
        out.append((fails, reason))
    return out


def family_expr(columns, code_rules: str | None):
    """The code rule family of each document (from `code__language`; `default` when unknown)."""
    import polars as pl

    folder = rules_dir_of(code_rules)
    if folder is None or "code__language" not in set(columns):
        return pl.lit("default")
    return pl.col("code__language").cast(pl.String).replace_strict(
        load_code_rules(folder).lang_map, default="default", return_dtype=pl.String
    )


def code_rule_exprs(columns, code_rules: str | None, family=None) -> list[tuple[Any, str]]:
    """(fails, reason) of every per-language code rule, in rule order, each limited to its family's languages.

    `family`: an expression (e.g. a column already computed with `family_expr`) instead of recomputing it."""
    import polars as pl

    folder = rules_dir_of(code_rules)
    columns = set(columns)
    if folder is None:
        return []
    rules = load_code_rules(folder)
    is_code = _source(columns) == "code" if "source" in columns else pl.lit(True)
    family = family_expr(columns, code_rules) if family is None else family
    out = []
    for fam, fam_rules in rules.families.items():
        in_family = is_code & (family == fam)
        for r in fam_rules:
            out.append((in_family & _fails(r.signal, r.op, r.value, r.when_missing, columns), f"code_{r.name}"))
    return out


def code_rule_reasons(signals: Mapping[str, Any], language: str | None, *, rules_dir: str | None = None) -> list[str]:
    """Reason codes (`code_<rule>`) of every rule of `language`'s family that a file fails.

    `signals` may use stored keys (`code__max_line_length`) or bare ones (`max_line_length`)."""
    import polars as pl

    row: dict[str, Any] = {}
    for k, v in signals.items():
        if isinstance(v, (list, dict, tuple)):
            continue
        row[k if k.startswith("code__") else f"code__{k}"] = v
    row["code__language"] = language
    row["source"] = "code"
    df = pl.DataFrame([row], strict=False, infer_schema_length=None)
    exprs = code_rule_exprs(df.columns, rules_dir or "default")
    if not exprs:
        return []
    flags = df.select([cond.alias(f"r{i}") for i, (cond, _) in enumerate(exprs)]).row(0)
    return [reason for (_, reason), failed in zip(exprs, flags) if failed]


# ------------------------------------------------------------------------------------- the frame


def _first(conds: list[str], values: list[Any], dtype):
    """The value of the first true boolean column (a flat coalesce, not a nested when/then chain)."""
    import polars as pl

    if not conds:
        return pl.lit(None, dtype=dtype)
    return pl.coalesce([pl.when(pl.col(c)).then(v) for c, v in zip(conds, values)]).cast(dtype)


def _lit(v):
    import polars as pl

    return v if isinstance(v, pl.Expr) else pl.lit(v)


def decide_frame(df, spec, *, rebalance_probs: Mapping[str, float] | None = None, keepers_frame=None,
                 _plan: bool = True):
    """Add `bucket`, `tier`, `reason`, `stage`, `keep` and `duplicate_of` to a polars DataFrame of signals.

    Dedup among survivors: with `keepers_frame` (from `dedup.keepers` on the whole run, e.g. the
    decide plan) the kept member of each cluster comes from it; without it, from this frame itself
    (it must then hold every member of its clusters, as a notebook's whole-run frame does); with
    `keepers_frame="lookup"`, dedup's own pick stands (a batch that cannot see the whole run).
    With `decisions.rebalance` set and no `rebalance_probs`, the keep probabilities are planned from
    this frame itself (it must then hold the whole run).
    """
    import polars as pl

    spec = as_spec(spec)
    if df.height == 0:
        return df.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("bucket"), pl.lit(None, dtype=pl.String).alias("tier"),
            pl.lit(None, dtype=pl.String).alias("reason"), pl.lit(None, dtype=pl.String).alias("stage"),
            pl.lit(None, dtype=pl.Boolean).alias("keep"), pl.lit(None, dtype=pl.String).alias("duplicate_of"),
        )
    if df.n_chunks() > 16:  # a frame concatenated from many parts: every expression would walk each chunk
        df = df.rechunk()
    columns = set(df.columns)
    df = df.with_columns(bucket_expr(columns, spec).alias("bucket"))
    df = df.with_columns(tier_expr(pl.col("bucket"), spec).alias("tier"))

    chain: list[tuple[Any, Any, str]] = []
    if "reject_reason" in columns:
        rr = pl.col("reject_reason").cast(pl.String)
        chain.append((rr.is_not_null() & (rr != ""), rr, "reject"))
    if rules_dir_of(spec.code_rules) is not None:
        df = df.with_columns(family_expr(columns, spec.code_rules).alias("__family"))
        chain += [(c, why, "rules") for c, why in code_rule_exprs(columns, spec.code_rules, pl.col("__family"))]
    chain += [(c, why, "rules") for c, why in rule_failure_exprs(df, spec)]
    for name in spec.drop_tiers:
        chain.append((pl.col("tier") == name, f"tier_{name}", "tier"))
    # every condition is computed once, as its own column; the first true one gives reason and stage
    names = [f"__c{i}" for i in range(len(chain))]
    df = df.with_columns([c.fill_null(False).alias(n) for (c, _, _), n in zip(chain, names)])
    df = df.with_columns(
        _first(names, [_lit(w) for _, w, _ in chain], pl.String).alias("reason"),
        _first(names, [pl.lit(st) for _, _, st in chain], pl.String).alias("stage"),
        pl.lit(None, dtype=pl.String).alias("duplicate_of"),
    ).drop(names + (["__family"] if "__family" in df.columns else []))
    if has_clusters(columns):
        df = _apply_dedup(df, keepers_frame)
    if spec.rebalance is not None:
        if rebalance_probs is None and _plan:
            rebalance_probs = plan_rebalance(
                amounts_of(df.with_columns(pl.col("reason").is_null().alias("keep")), spec.rebalance),
                spec.rebalance.caps, spec.rebalance.weights,
            )
        if rebalance_probs is not None:
            drop = _rebalance_drop(df, spec, rebalance_probs)
            rb_reason = f"{spec.rebalance.source}_rebalance"
            df = df.with_columns(
                pl.when(pl.col("reason").is_null() & drop).then(pl.lit(rb_reason)).otherwise("reason").alias("reason"),
                pl.when(pl.col("reason").is_null() & drop).then(pl.lit("rebalance")).otherwise("stage").alias("stage"),
            )
    return df.with_columns(pl.col("reason").is_null().alias("keep"))


def _apply_dedup(df, keepers_frame):
    import polars as pl

    survives = pl.col("reason").is_null()
    size = pl.col("dedup__cluster_size").fill_null(1)
    exact_flag = pl.col("dedup__exact_duplicate").cast(pl.Boolean, strict=False).fill_null(False)
    if "dedup__exact_duplicate" not in df.columns:
        df = df.with_columns(pl.lit(False).alias("dedup__exact_duplicate"))
    if "dedup__duplicate_of" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias("dedup__duplicate_of"))
    if "dedup__cluster_size" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.Int64).alias("dedup__cluster_size"))
    is_dup_flag = pl.col("dedup__is_duplicate").cast(pl.Boolean, strict=False).fill_null(False)
    if (isinstance(keepers_frame, str) and keepers_frame == "lookup") or "dedup__cluster_id" not in df.columns:
        dup = survives & is_dup_flag
        dup_reason = pl.when(exact_flag).then(pl.lit(DEDUP_EXACT)).otherwise(pl.lit(DEDUP_MINHASH))
        dup_of = pl.col("dedup__duplicate_of").cast(pl.String)
    else:
        if keepers_frame is None:
            keepers_frame = keepers(df.with_columns(survives.alias("__survives")))
        k = keepers_frame.select(list(KEEPER_COLUMNS)).with_columns(pl.col("dedup__cluster_id").cast(pl.Int64))
        df = df.with_columns(pl.col("dedup__cluster_id").cast(pl.Int64)).join(
            k, on="dedup__cluster_id", how="left", maintain_order="left"
        )
        published = pl.col("published").fill_null(False)
        keeper = pl.col("keeper_id")
        # a survivor whose cluster has no known keeper (keepers from another frame) keeps dedup's own verdict
        dup = survives & (size > 1) & (
            published | (keeper.is_not_null() & (keeper != pl.col("id").cast(pl.String)))
            | (keeper.is_null() & is_dup_flag)
        )
        own = pl.col("dedup__exact_hash").cast(pl.String) if "dedup__exact_hash" in df.columns else pl.lit(None, pl.String)
        theirs = pl.col("keeper_exact_hash")
        dedup_pick = pl.col("dedup__duplicate_of").cast(pl.String)
        same_text = (
            pl.when(keeper.is_not_null() & own.is_not_null() & theirs.is_not_null()).then(own == theirs)
            .when(keeper.is_null() | (keeper == dedup_pick)).then(exact_flag)
            .otherwise(pl.lit(False))
        )
        dup_reason = pl.when(same_text).then(pl.lit(DEDUP_EXACT)).otherwise(pl.lit(DEDUP_MINHASH))
        dup_of = pl.when(keeper.is_not_null()).then(keeper).otherwise(pl.col("dedup__duplicate_of").cast(pl.String))
    df = df.with_columns(dup.fill_null(False).alias("__dup"))
    df = df.with_columns(
        pl.when("__dup").then(dup_reason).otherwise("reason").alias("reason"),
        pl.when("__dup").then(pl.lit("dedup")).otherwise("stage").alias("stage"),
        pl.when("__dup").then(dup_of).otherwise(None).alias("duplicate_of"),
    )
    return df.drop([c for c in ("__dup", "keeper_id", "keeper_exact_hash", "published") if c in df.columns])


def _rebalance_drop(df, spec: DecisionSpec, probs: Mapping[str, float]):
    """Deterministic down-sampling: drop a document of group g unless xxh64(id, seed) < probs[g]."""
    import polars as pl

    from assay.stages.decisions.mixture import rebalance_keep

    rb = spec.rebalance
    if rb.key not in df.columns:
        return pl.lit(False)
    prob = pl.col(rb.key).cast(pl.String).fill_null("unknown").replace_strict(
        {k: float(v) for k, v in probs.items()}, default=1.0, return_dtype=pl.Float64
    )
    seed = int(rb.seed)

    def draw(s: pl.Series) -> pl.Series:
        return pl.Series([not rebalance_keep(r["id"], r["p"], seed) for r in s.to_list()], dtype=pl.Boolean)

    dropped = pl.struct(pl.col("id").cast(pl.String), prob.alias("p")).map_batches(draw, return_dtype=pl.Boolean)
    return (_source(set(df.columns)) == rb.source).fill_null(False) & dropped


# ------------------------------------------------------------------------------------- one document


def decide(signals: Mapping[str, Any], spec) -> Decision:
    """Decide one document from its stored signals (same logic as `decide_frame`; dedup's pick stands)."""
    import polars as pl

    row = {k: v for k, v in signals.items() if not isinstance(v, (list, dict))}
    row.setdefault("id", "")
    df = pl.DataFrame([row], strict=False, infer_schema_length=None)
    out = decide_frame(df, spec, keepers_frame="lookup").row(0, named=True)
    return Decision(keep=bool(out["keep"]), tier=out["tier"], reason=out["reason"], bucket=out["bucket"],
                    stage=out["stage"])


def rules_fragment(spec) -> dict[str, Any]:
    """The `decisions:` part of a recipe for a spec, ready to dump as YAML (used by the notebook)."""
    return {"decisions": as_spec(spec).model_dump(mode="json", exclude_defaults=False)}


def rule_of(spec, name: str) -> RuleSpec | None:
    return next((r for r in as_spec(spec).rules if r.name == name), None)
