"""The one decision compiler: decision order (filters before dedup), stages, code rules, tiers, plans."""

from __future__ import annotations

import inspect

import polars as pl
import pytest
from datatrove.data import Document

from assay.stages.decisions import rules as rules_mod
from assay.stages.decisions.dedup import keepers as dedup_keepers
from assay.stages.decisions.rebalance import DecidePlan, plan
from assay.stages.decisions.rules import code_rule_reasons, decide, decide_frame
from assay.stages.decisions.spec import DecisionSpec, RebalanceSpec
from assay.stages.decisions.step import Decide
from assay.stages.decisions.tiers import bucket_of, tier_of

MIN_WORDS = {"rules": [{"name": "min_words", "source": "web", "signal": "n_words", "op": ">=", "value": 50}],
             "code_rules": None}


def _near_dup_pair(preferred_words: int, other_words: int) -> pl.DataFrame:
    """Two near-duplicates; dedup's keep policy picked `a` (higher priority), `b` is marked its duplicate."""
    return pl.DataFrame([
        {"id": "a", "source": "web", "n_words": preferred_words, "quality__priority": 18, "dedup__cluster_id": 7,
         "dedup__cluster_size": 2, "dedup__is_duplicate": False, "dedup__exact_duplicate": False,
         "dedup__duplicate_of": None, "dedup__exact_hash": "h1"},
        {"id": "b", "source": "web", "n_words": other_words, "quality__priority": 12, "dedup__cluster_id": 7,
         "dedup__cluster_size": 2, "dedup__is_duplicate": True, "dedup__exact_duplicate": False,
         "dedup__duplicate_of": "a", "dedup__exact_hash": "h2"},
        {"id": "u", "source": "web", "n_words": 80, "dedup__cluster_id": 9, "dedup__cluster_size": 1,
         "dedup__is_duplicate": False, "dedup__exact_duplicate": False},
    ])


def test_filters_before_dedup_the_cluster_survives_when_the_preferred_copy_fails_a_rule():
    out = decide_frame(_near_dup_pair(preferred_words=10, other_words=90), MIN_WORDS)
    got = {r["id"]: (r["keep"], r["reason"], r["stage"]) for r in out.iter_rows(named=True)}
    assert got["a"] == (False, "web_min_words", "rules")  # the preferred copy fails the rule ...
    assert got["b"] == (True, None, None)  # ... so its near-duplicate is kept: the cluster is not lost
    assert got["u"] == (True, None, None)


def test_dedup_keeps_the_preferred_copy_when_it_passes():
    out = decide_frame(_near_dup_pair(preferred_words=90, other_words=95), MIN_WORDS)
    got = {r["id"]: (r["keep"], r["reason"], r["stage"], r["duplicate_of"]) for r in out.iter_rows(named=True)}
    assert got["a"] == (True, None, None, None)
    assert got["b"] == (False, "dedup_minhash", "dedup", "a")


def test_exact_copy_of_a_new_keeper_is_dedup_exact():
    df = _near_dup_pair(preferred_words=10, other_words=90)
    third = {"id": "c", "source": "web", "n_words": 90, "quality__priority": 5, "dedup__cluster_id": 7,
             "dedup__cluster_size": 3, "dedup__is_duplicate": True, "dedup__exact_duplicate": False,
             "dedup__duplicate_of": "a", "dedup__exact_hash": "h2"}
    df = pl.concat([df.with_columns(pl.lit(3).alias("dedup__cluster_size")), pl.DataFrame([third])],
                   how="diagonal_relaxed")
    got = {r["id"]: (r["reason"], r["duplicate_of"]) for r in decide_frame(df, MIN_WORDS).iter_rows(named=True)}
    assert got["b"] == (None, None) and got["c"] == ("dedup_exact", "b")  # same text as the new keeper


def test_a_cluster_of_a_published_document_keeps_none():
    df = _near_dup_pair(preferred_words=90, other_words=95).with_columns(
        pl.Series("dedup__duplicate_of_published", [False, True, False]),
        pl.Series("dedup__is_duplicate", [True, True, False]))
    got = {r["id"]: r["reason"] for r in decide_frame(df, MIN_WORDS).iter_rows(named=True)}
    assert got["a"] == "dedup_minhash" and got["b"] == "dedup_minhash" and got["u"] is None


def test_decide_step_uses_the_run_plan_across_batches(tmp_path):
    """A decide task sees one copy only: the keeper comes from the whole-run plan, not from its batch."""
    df = _near_dup_pair(preferred_words=10, other_words=90)
    survives = decide_frame(df.drop("dedup__is_duplicate"), MIN_WORDS)["reason"].is_null()  # the filters alone
    keepers = dedup_keepers(df.with_columns(survives.alias("__survives")))
    path = tmp_path / "plan.json"
    DecidePlan(keepers=keepers.to_dicts()).write(path)
    doc_b = Document(text="b", id="b", metadata={k: v for k, v in df.row(1, named=True).items() if k != "id"})
    step = Decide(MIN_WORDS, plan_file=str(path))
    assert step.filter_batch([doc_b]) == [True]
    without_plan = Decide(MIN_WORDS)  # no plan: dedup's own pick stands (the old behaviour, documented)
    doc_b2 = Document(text="b", id="b", metadata={k: v for k, v in df.row(1, named=True).items() if k != "id"})
    assert without_plan.filter_batch([doc_b2]) == [(False, "dedup_minhash")]
    assert doc_b2.metadata["decision__stage"] == "dedup"


def test_every_reason_carries_its_stage():
    rows = [
        {"id": "r", "source": "web", "reject_reason": "warc_truncated_record"},
        {"id": "m", "source": "web", "n_words": 5},
        {"id": "c", "source": "code", "code__language": "json", "code__lockfile": True},
        {"id": "t", "source": "web", "n_words": 500, "fasttext_web__pct": 0.01},
        {"id": "k", "source": "web", "n_words": 500, "fasttext_web__pct": 0.99},
    ]
    spec = {**MIN_WORDS, "code_rules": "default", "ensemble": {"web": {"fasttext_web__pct": 1.0}}, "drop_tiers": ["low"]}
    out = {r["id"]: (r["reason"], r["stage"]) for r in decide_frame(pl.DataFrame(rows), spec).iter_rows(named=True)}
    assert out == {"r": ("warc_truncated_record", "reject"), "m": ("web_min_words", "rules"),
                   "c": ("code_lockfile", "rules"), "t": ("tier_low", "tier"), "k": (None, None)}


def test_code_rules_run_on_the_one_vectorised_engine():
    src = inspect.getsource(rules_mod)
    assert "map_elements" not in src  # the row-by-row second engine is gone
    rows = [{"id": str(i), "source": "code", "code__language": lang, "code__max_line_length": mll,
             "code__import_line_fraction": imp} for i, (lang, mll, imp) in
            enumerate([("python", 5000, 0.1), ("python", 80, 0.9), ("go", 80, 0.9), ("json", 80, 0.1)])]
    out = decide_frame(pl.DataFrame(rows), {}).select("id", "reason").rows()
    assert out == [("0", "code_max_line_length"), ("1", "code_import_lines"), ("2", None), ("3", None)]
    # the single-file view (inspect_file) is the same compiler: every failing rule, in rule order
    assert code_rule_reasons({"max_line_length": 5000, "import_line_fraction": 0.9}, "python") == [
        "code_max_line_length", "code_import_lines"]


def test_tiers_from_any_declared_percentile_signal():
    """A learned web score stored as a signal (e.g. `quality__web_pct`) drives the tiers by itself."""
    df = pl.DataFrame({"id": ["a", "b", "c", "d"], "source": ["web", "web", "web", "code"],
                       "quality__web_pct": [0.97, 0.42, None, 0.99]})
    spec = DecisionSpec(ensemble={"web": {"quality__web_pct": 1.0}}, unscored_bucket=3)
    assert bucket_of(df, spec).to_list() == [19, 8, 3, 3]  # code has no ensemble entry: unscored
    assert tier_of(df, spec).to_list() == ["high", "medium", "low", "low"]
    mean = spec.model_copy(update={"ensemble_mode": "mean",
                                   "ensemble": {"web": {"quality__web_pct": 3.0, "fasttext_web__pct": 1.0}}})
    df2 = df.with_columns(pl.Series("fasttext_web__pct", [0.1, 0.9, 0.5, None]))
    assert bucket_of(df2, mean).to_list() == [int((0.97 * 3 + 0.1) / 4 * 20), int((0.42 * 3 + 0.9) / 4 * 20), 10, 3]


def test_rebalance_spec_is_typed_and_plan_is_kept():
    with pytest.raises(ValueError, match="bytes"):
        RebalanceSpec(unit="byts")
    with pytest.raises(ValueError):
        RebalanceSpec(caps={"python": -1})
    rows = [{"id": f"py{i}", "source": "code", "code__language": "python", "text": "x" * 100} for i in range(400)]
    rows += [{"id": f"lua{i}", "source": "code", "code__language": "lua", "text": "y" * 100} for i in range(40)]
    spec = DecisionSpec(code_rules=None, rebalance=RebalanceSpec(caps={"python": 10000}, seed=1))
    totals, probs = plan(pl.DataFrame(rows), spec)
    assert totals == {"python": 40000, "lua": 4000} and probs == {"python": 0.25, "lua": 1.0}
    assert spec.rebalance.get("unit") == "bytes"  # dict-style reads of the old block keep working


def test_thresholds_are_typed_by_operator():
    ok = DecisionSpec(rules=[{"name": "a", "signal": "x__n", "op": "in", "value": ["en", "de"]}])
    assert ok.rules[0].value == ["en", "de"]
    for bad in ({"op": ">=", "value": "fifty"}, {"op": ">=", "value": True}, {"op": "in", "value": 3},
                {"op": "is_true", "value": 1}, {"op": "==", "value": None}):
        with pytest.raises(ValueError):
            DecisionSpec(rules=[{"name": "a", "signal": "x__n", **bad}])


def test_single_document_matches_the_frame():
    rows = [{"id": str(i), "source": "web", "n_words": 10 * i, "fasttext_web__pct": i / 12} for i in range(12)]
    spec = {**MIN_WORDS, "ensemble": {"web": {"fasttext_web__pct": 1.0}}, "drop_tiers": ["low"]}
    frame = decide_frame(pl.DataFrame(rows), spec)
    for row, out in zip(rows, frame.iter_rows(named=True)):
        d = decide(row, spec)
        assert (d.keep, d.reason, d.stage, d.tier, d.bucket) == (out["keep"], out["reason"], out["stage"],
                                                                  out["tier"], out["bucket"])


def _cluster_of_five() -> pl.DataFrame:
    """One cluster as the store holds it (no `quality__priority`: computed after the store is written). Dedup
    picked `a`, which fails `min_words`; the survivors differ by ensemble bucket and length (`doc__bytes`)."""
    base = {"source": "web", "dedup__cluster_id": 7, "dedup__cluster_size": 5, "dedup__exact_duplicate": False}
    rows = [("a", 10, 0.33, 90_000, False),  # dedup's pick: the longest, fails the rule
            ("b", 90, 0.33, 1_000, True),
            ("c", 95, 0.31, 5_000, True),  # same bucket (6) as b, longer: the keeper
            ("d", 10, 0.34, 9_000, True),  # fails the rule: never the keeper, however long
            ("e", 99, 0.20, 20_000, True)]  # longest survivor, lower bucket (4)
    return pl.DataFrame([dict(base, id=i, n_words=w, fasttext_web__pct=p, doc__bytes=n, dedup__is_duplicate=dup,
                              dedup__duplicate_of="a" if dup else None, dedup__doc_key=k, dedup__exact_hash=f"h{k}")
                         for k, (i, w, p, n, dup) in enumerate(rows)])


def _store_and_lookup(tmp_path, df: pl.DataFrame):
    """A run's signal store and dedup lookup holding the rows of `df` (as the decide plan reads them)."""
    store, clusters = tmp_path / "signals", tmp_path / "clusters"
    store.mkdir()
    clusters.mkdir()
    df.drop([c for c in df.columns if c.startswith("dedup__") and c not in ("dedup__doc_key", "dedup__exact_hash")]
            ).write_parquet(store / "part-00000.parquet")
    df.select(pl.col("dedup__doc_key").alias("doc_key"), pl.col("id").alias("doc_id"),
              pl.col("dedup__cluster_id").alias("cluster_id"), pl.col("dedup__cluster_size").alias("cluster_size"),
              pl.col("dedup__duplicate_of").alias("duplicate_of"), pl.col("dedup__exact_duplicate").alias("exact_duplicate"),
              pl.col("dedup__is_duplicate").alias("is_duplicate")).write_parquet(clusters / "lookup.parquet")
    return store, clusters


def test_fallback_keeper_ranks_survivors_by_bucket_then_length_then_id(tmp_path):
    spec = {**MIN_WORDS, "ensemble": {"web": {"fasttext_web__pct": 1.0}}}
    df = _cluster_of_five()
    got = {r["id"]: (r["reason"], r["duplicate_of"]) for r in decide_frame(df, spec).iter_rows(named=True)}
    assert got == {"a": ("web_min_words", None), "b": ("dedup_minhash", "c"), "c": (None, None),
                   "d": ("web_min_words", None), "e": ("dedup_minhash", "c")}
    # equal lengths: the smallest id, as before
    same = df.with_columns(pl.lit(1_000).alias("doc__bytes"))
    assert decide_frame(same, spec).filter(pl.col("keep"))["id"].to_list() == ["b"]
    # the decide plan (from the store and the dedup lookup, as a run computes it) agrees
    from assay.stages.decisions.rebalance import decide_plan

    store, clusters = _store_and_lookup(tmp_path, df)
    assert decide_plan(store, clusters, spec).keepers == [
        {"dedup__cluster_id": 7, "keeper_id": "c", "keeper_exact_hash": "h2", "published": False}]


def test_decide_plan_reads_the_unless_signals_of_rules(tmp_path):
    """The plan's survivors come from a projection of the store: it must hold each rule's `unless` signal, or a
    document the `unless` exempts fails the rule there (bench_e2e 5x: rust-doc's RandomState.html cluster lost, its
    passing copies marked duplicates of a copy that fails `web_list_ratio`)."""
    from assay.stages.decisions.frame import needed_columns
    from assay.stages.decisions.rebalance import decide_plan

    spec = {"rules": [{"name": "list_ratio", "source": "web", "signal": "list_ratio", "op": "<=", "value": 0.3,
                       "unless": {"signal": "code_share", "op": ">=", "value": 0.25}}], "code_rules": None}
    assert {"list_ratio", "code_share"} <= set(needed_columns(spec))
    base = {"source": "web", "dedup__cluster_id": 3, "dedup__cluster_size": 2, "dedup__exact_duplicate": False}
    df = pl.DataFrame([
        dict(base, id="a", list_ratio=0.6, code_share=0.5, doc__bytes=900, dedup__is_duplicate=False,
             dedup__duplicate_of=None, dedup__doc_key=0, dedup__exact_hash="h0"),  # dedup's pick, exempt: passes
        dict(base, id="b", list_ratio=0.1, code_share=0.0, doc__bytes=800, dedup__is_duplicate=True,
             dedup__duplicate_of="a", dedup__doc_key=1, dedup__exact_hash="h1"),
    ])
    assert decide_frame(df, spec).filter(pl.col("keep"))["id"].to_list() == ["a"]
    store, clusters = _store_and_lookup(tmp_path, df)
    assert [k["keeper_id"] for k in decide_plan(store, clusters, spec).keepers] == ["a"]


def test_shipped_code_rule_files_read_the_same_with_libyaml():
    """The code rule files are read with libyaml's safe loader where PyYAML has it (6x faster); every shipped
    file gives the same validated rules as PyYAML's pure-Python safe loader."""
    import yaml

    from assay.stages.decisions.code_rules import _read
    from assay.stages.decisions.spec import DEFAULT_CODE_RULES_DIR, CodeRuleFile

    files = sorted(p for p in DEFAULT_CODE_RULES_DIR.iterdir() if p.suffix in (".yaml", ".yml"))
    assert files
    for p in files:
        pure = CodeRuleFile.model_validate(yaml.safe_load(p.read_text(encoding="utf-8")) or {})
        assert _read(p) == pure, p.name
