from __future__ import annotations

import polars as pl
import pytest

from assay.pipeline.recipe import DecisionSpec
from assay.stages.decisions.rules import decide, decide_frame, hash_fraction

SPEC = {
    "rules": [
        {"name": "min_words", "source": "web", "signal": "n_words", "op": ">=", "value": 50},
        {"name": "not_generated", "source": "code", "signal": "code__generated", "op": "is_false"},
        {"name": "lang", "source": ["web", "pdf"], "signal": "lang__score", "op": ">=", "value": 0.5,
         "when_missing": "reject"},
    ],
    "ensemble": {"web": {"fasttext_web__pct": 1.0, "fasttext_stem__pct": 1.0}, "code": {"fasttext_code__pct": 1.0}},
    "drop_tiers": ["low"],
}


@pytest.mark.parametrize(
    "signals, keep, reason, tier",
    [
        ({"id": "a", "source": "web", "n_words": 10, "lang__score": 0.9}, False, "web_min_words", None),
        ({"id": "b", "source": "web", "n_words": 100, "lang__score": 0.9, "fasttext_web__pct": 0.2,
          "fasttext_stem__pct": 0.95}, True, None, "high"),
        ({"id": "c", "source": "web", "n_words": 100}, False, "web_lang", None),
        ({"id": "d", "source": "code", "code__generated": True}, False, "code_generated", None),
        ({"id": "e", "source": "code", "code__generated": False, "fasttext_code__pct": 0.1}, False, "tier_low", "low"),
        ({"id": "f", "source": "web", "reject_reason": "warc_truncated_record"}, False, "warc_truncated_record", None),
        ({"id": "g", "source": "web", "n_words": 100, "lang__score": 0.9, "dedup__is_duplicate": True},
         False, "dedup_minhash", None),
        ({"id": "h", "source": "web", "n_words": 100, "lang__score": 0.9, "dedup__exact_duplicate": True,
          "dedup__is_duplicate": True}, False, "dedup_exact", None),
    ],
)
def test_decide_single(signals, keep, reason, tier):
    d = decide(signals, SPEC)
    assert d.keep is keep
    assert d.reason == reason
    if tier:
        assert d.tier == tier


def test_frame_and_single_agree_and_max_ensemble():
    rows = [
        {"id": str(i), "source": "web", "n_words": 20 * i, "lang__score": 0.1 * i,
         "fasttext_web__pct": (i % 7) / 7, "fasttext_stem__pct": (i % 3) / 3}
        for i in range(12)
    ]
    df = decide_frame(pl.DataFrame(rows), DecisionSpec.model_validate(SPEC))
    for row, out in zip(rows, df.iter_rows(named=True)):
        d = decide(row, SPEC)
        assert (d.keep, d.reason, d.tier, d.bucket) == (out["keep"], out["reason"], out["tier"], out["bucket"])
        assert out["bucket"] == min(19, int(max(row["fasttext_web__pct"], row["fasttext_stem__pct"]) * 20))


def test_unscored_documents_get_the_default_bucket():
    d = decide({"id": "x", "source": "pdf", "lang__score": 0.9}, {"unscored_bucket": 7})
    assert d.bucket == 7 and d.tier == "medium" and d.keep


def test_changing_a_threshold_changes_only_decisions():
    row = {"id": "a", "source": "web", "n_words": 60, "lang__score": 0.9}
    assert decide(row, SPEC).keep
    stricter = {**SPEC, "rules": [{**SPEC["rules"][0], "value": 80}]}
    assert decide(row, stricter).reason == "web_min_words"


def test_hash_fraction_is_deterministic_and_uniformish():
    xs = [hash_fraction(f"doc-{i}", 3) for i in range(2000)]
    assert xs == [hash_fraction(f"doc-{i}", 3) for i in range(2000)]
    assert 0.45 < sum(xs) / len(xs) < 0.55
    assert hash_fraction("doc-1", 3) != hash_fraction("doc-1", 4)


def test_priority_step_keeps_every_document_without_an_ensemble():
    from datatrove.data import Document

    from assay.stages.decisions.priority import DedupPriority

    docs = [Document(text="x", id=str(i), metadata={"source": "web"}) for i in range(5)]
    out = list(DedupPriority({}).run(iter(docs)))
    assert [d.id for d in out] == [d.id for d in docs]
    assert {d.metadata["quality__priority"] for d in out} == {10}


def test_code_rule_files_give_specific_reasons_before_recipe_floors():
    spec = {"rules": [{"name": "fasttext_code_floor", "source": "code", "signal": "fasttext_code__score",
                       "op": ">=", "value": 0.1}]}
    lock = {"id": "l", "source": "code", "code__language": "json", "code__lockfile": True,
            "fasttext_code__score": 0.01}
    assert decide(lock, spec).reason == "code_lockfile"
    assert decide(lock, {**spec, "code_rules": None}).reason == "code_fasttext_code_floor"
    ok = {"id": "k", "source": "code", "code__language": "python", "fasttext_code__score": 0.9,
          "code__max_line_length": 80, "code__avg_line_length": 30, "code__alnum_fraction": 0.7}
    assert decide(ok, spec).keep


def test_rebalance_is_deterministic_and_respects_caps():
    import polars as pl

    from assay.stages.decisions.rebalance import plan

    rows = [{"id": f"py{i}", "source": "code", "code__language": "python", "text": "x" * 100} for i in range(400)]
    rows += [{"id": f"lua{i}", "source": "code", "code__language": "lua", "text": "y" * 100} for i in range(40)]
    spec = DecisionSpec.model_validate(
        {"code_rules": None, "rebalance": {"key": "code__language", "caps": {"python": 10000}, "seed": 1}}
    )
    df = pl.DataFrame(rows)
    totals, probs = plan(df, spec)
    assert totals == {"python": 40000, "lua": 4000} and probs["python"] == 0.25 and probs["lua"] == 1.0
    a = decide_frame(df, spec)
    b = decide_frame(df.sample(fraction=1.0, shuffle=True, seed=3), spec)
    assert a.filter(pl.col("keep"))["id"].sort().to_list() == b.filter(pl.col("keep"))["id"].sort().to_list()
    kept_py = a.filter(pl.col("keep") & (pl.col("code__language") == "python")).height
    assert 70 <= kept_py <= 130
    assert set(a.filter(~pl.col("keep"))["reason"].unique()) == {"code_rebalance"}
