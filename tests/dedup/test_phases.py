"""The four on-disk dedup phases: clusters, keep policies, incremental runs, conservation."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import json
import pytest

from assay.stages.dedup.config import DedupConfig
from assay.stages.dedup.minhash import (
    DedupAnnotate,
    MinhashBuckets,
    MinhashClusters,
    MinhashSignatures,
    cluster_id_for,
    dedup_reason,
)

CFG = DedupConfig()


def run_dedup(tmp: Path, docs_by_rank, *, cfg=CFG, policy="highest_priority", index_folders=(), bucket_tasks=2,
              priority_signal="score"):
    """Run the 4 phases in-process; returns the annotated documents (in input order per rank)."""
    sig = MinhashSignatures(str(tmp / "sigs"), cfg, priority_signal=priority_signal, date_signal="date")
    passed = []
    for r, docs in enumerate(docs_by_rank):
        passed += list(sig.run(iter(docs), r, len(docs_by_rank)))
    for r in range(bucket_tasks):
        list(MinhashBuckets(str(tmp / "sigs"), str(tmp / "buckets"), cfg, list(index_folders)).run(None, r, bucket_tasks))
    list(MinhashClusters(str(tmp / "buckets"), str(tmp / "clusters"), cfg, policy).run(None, 0, 1))
    return list(DedupAnnotate(str(tmp / "clusters"), cfg).run(iter(passed), 0, 1))


def by_id(docs):
    return {d.id: d.metadata for d in docs}


@pytest.fixture(scope="module")
def base_texts(corpus):
    rng = random.Random(21)
    return [corpus.random_text(rng, 250, corpus.vocab) for _ in range(30)]


def test_clusters_exact_and_near(tmp_path, corpus, base_texts):
    rng = random.Random(1)
    docs = [corpus.doc(t, f"d{i:02d}", score=0.5) for i, t in enumerate(base_texts)]
    docs += [
        corpus.doc(base_texts[0], "x_exact", score=0.9),  # exact copy, higher priority: kept
        corpus.doc(base_texts[0].upper(), "x_exact_upper", score=0.1),  # exact after normalisation
        corpus.doc(corpus.edit_words(rng, base_texts[1], 0.01, corpus.vocab), "x_near", score=0.1),
        corpus.doc(corpus.edit_words(rng, base_texts[2], 0.7, corpus.vocab), "x_far", score=0.1),
        corpus.doc("", "x_empty"),
        corpus.doc("", "x_empty2"),
        corpus.doc(base_texts[3], "x_rejected", score=9.0, reject_reason="web_too_short"),
    ]
    out = run_dedup(tmp_path, [docs[0::2], docs[1::2]])
    m = by_id(out)
    assert len(out) == len(docs)
    assert m["x_exact"]["dedup__is_duplicate"] is False and m["x_exact"]["dedup__cluster_size"] == 3
    for dup in ("d00", "x_exact_upper"):
        assert m[dup]["dedup__is_duplicate"] is True
        assert m[dup]["dedup__exact_duplicate"] is True
        assert m[dup]["dedup__duplicate_of"] == "x_exact"
        assert m[dup]["dedup__cluster_id"] == m["x_exact"]["dedup__cluster_id"] == cluster_id_for("x_exact")
        assert dedup_reason(m[dup]) == "dedup_exact"
    assert m["x_near"]["dedup__duplicate_of"] == "d01" and m["x_near"]["dedup__exact_duplicate"] is False
    assert dedup_reason(m["x_near"]) == "dedup_minhash"
    assert m["d01"]["dedup__is_duplicate"] is False and m["d01"]["dedup__cluster_size"] == 2
    assert dedup_reason(m["d01"]) is None
    for solo in ("x_far", "x_empty", "x_empty2", "d02", "d05"):
        assert m[solo]["dedup__cluster_size"] == 1 and m[solo]["dedup__is_duplicate"] is False
        assert m[solo]["dedup__cluster_id"] == cluster_id_for(solo)
    # rejected documents get no signature: never kept in place of a good copy, never removed
    assert m["x_rejected"]["dedup__is_duplicate"] is False and m["d03"]["dedup__is_duplicate"] is False
    assert m["x_empty"]["dedup__exact_hash"] is None
    assert len(m["d02"]["dedup__exact_hash"]) == 32
    n_dups = sum(d.metadata["dedup__is_duplicate"] for d in out)
    assert n_dups == 3


@pytest.mark.parametrize(
    "policy,expected_kept",
    [("highest_priority", "c"), ("oldest", "b"), ("first_id", "a")],
)
def test_keep_policies(tmp_path, corpus, base_texts, policy, expected_kept):
    rng = random.Random(2)
    t = base_texts[4]
    docs = [
        corpus.doc(corpus.edit_words(rng, t, 0.01, corpus.vocab), "a", score=0.2, date="2024-05-01T00:00:00Z"),
        corpus.doc(corpus.edit_words(rng, t, 0.01, corpus.vocab), "b", score=0.3, date="2019-01-01"),
        corpus.doc(corpus.edit_words(rng, t, 0.01, corpus.vocab), "c", score=0.9, date=None),
        corpus.doc(t, "d", score=None, date="not a date"),
    ] + [corpus.doc(x, f"u{i}", score=1.0) for i, x in enumerate(base_texts[5:9])]
    m = by_id(run_dedup(tmp_path, [docs[:3], docs[3:]], policy=policy))
    cluster = ["a", "b", "c", "d"]
    assert {x: m[x]["dedup__cluster_size"] for x in cluster} == dict.fromkeys(cluster, 4)
    assert [x for x in cluster if not m[x]["dedup__is_duplicate"]] == [expected_kept]
    assert {m[x]["dedup__duplicate_of"] for x in cluster if x != expected_kept} == {expected_kept}
    assert len({m[x]["dedup__cluster_id"] for x in cluster}) == 1


def test_priority_ties_break_by_id(tmp_path, corpus, base_texts):
    docs = [corpus.doc(base_texts[9], i, score=0.5) for i in ("zz", "mm", "aa")]
    m = by_id(run_dedup(tmp_path, [docs]))
    assert [x for x in ("zz", "mm", "aa") if not m[x]["dedup__is_duplicate"]] == ["aa"]


def _hash_tree(p: Path) -> dict[str, str]:
    return {str(f.relative_to(p)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(p.rglob("*")) if f.is_file()}


def test_incremental_runs_against_previous_index(tmp_path, corpus, base_texts):
    rng = random.Random(3)
    ed = lambda t, f=0.01: corpus.edit_words(rng, t, f, corpus.vocab)  # noqa: E731
    run1 = [corpus.doc(t, f"r1_{i}", score=0.5) for i, t in enumerate(base_texts[:10])]
    run1.append(corpus.doc(ed(base_texts[0]), "r1_dup_of_0", score=0.1))
    out1 = by_id(run_dedup(tmp_path / "run1", [run1]))
    assert out1["r1_dup_of_0"]["dedup__duplicate_of"] == "r1_0"
    index1 = tmp_path / "run1" / "clusters" / "index"
    assert (index1 / "meta.json").exists()
    assert len((index1 / "ids.jsonl").read_text().splitlines()) == 10  # the removed duplicate is not published
    before = _hash_tree(tmp_path / "run1")

    run2 = [
        corpus.doc(ed(base_texts[0]), "r2_dup_of_r1_0", score=99.0),  # higher priority, but r1_0 is published
        corpus.doc(base_texts[3], "r2_exact_of_r1_3", score=0.5),
        corpus.doc(base_texts[15], "r2_new", score=0.5),
        corpus.doc(ed(base_texts[15]), "r2_dup_of_r2_new", score=0.1),
        corpus.doc(base_texts[16], "r2_unique", score=0.5),
    ]
    out2 = by_id(run_dedup(tmp_path / "run2", [run2[:2], run2[2:]], index_folders=[str(index1)]))
    assert out2["r2_dup_of_r1_0"]["dedup__duplicate_of"] == "r1_0"
    assert out2["r2_dup_of_r1_0"]["dedup__cluster_size"] == 2  # published r1_0 + this doc (r1_dup_of_0 unpublished)
    assert out2["r2_exact_of_r1_3"]["dedup__duplicate_of"] == "r1_3"
    assert out2["r2_exact_of_r1_3"]["dedup__exact_duplicate"] is True
    assert out2["r2_dup_of_r2_new"]["dedup__duplicate_of"] == "r2_new"
    assert not out2["r2_new"]["dedup__is_duplicate"] and not out2["r2_unique"]["dedup__is_duplicate"]
    lookup = [json.loads(x) for x in (tmp_path / "run2" / "clusters" / "lookup.jsonl").read_text().splitlines()]
    published = {r["doc_id"]: r["duplicate_of_published"] for r in lookup}
    assert published["r2_dup_of_r1_0"] and not published["r2_dup_of_r2_new"]
    # earlier outputs are never rewritten
    assert _hash_tree(tmp_path / "run1") == before
    index2 = tmp_path / "run2" / "clusters" / "index"
    assert sorted(json.loads(x) for x in (index2 / "ids.jsonl").read_text().splitlines()) == ["r2_new", "r2_unique"]

    # run 3 sees both earlier runs through a root folder of indexes
    root = tmp_path / "indexes"
    root.mkdir()
    (root / "run1").symlink_to(index1, target_is_directory=True)
    (root / "run2").symlink_to(index2, target_is_directory=True)
    run3 = [corpus.doc(ed(base_texts[16]), "r3_dup_of_r2", score=0.5),
            corpus.doc(ed(base_texts[5]), "r3_dup_of_r1", score=0.5),
            corpus.doc(base_texts[20], "r3_new", score=0.5)]
    out3 = by_id(run_dedup(tmp_path / "run3", [run3], index_folders=[str(root)]))
    assert out3["r3_dup_of_r2"]["dedup__duplicate_of"] == "r2_unique"
    assert out3["r3_dup_of_r1"]["dedup__duplicate_of"] == "r1_5"
    assert not out3["r3_new"]["dedup__is_duplicate"]


def test_index_with_other_config_is_refused(tmp_path, corpus, base_texts):
    run_dedup(tmp_path / "a", [[corpus.doc(t, str(i)) for i, t in enumerate(base_texts[:3])]])
    other = DedupConfig(seed=7)
    sig = MinhashSignatures(str(tmp_path / "b" / "sigs"), other)
    list(sig.run(iter([corpus.doc(base_texts[0], "x")]), 0, 1))
    step = MinhashBuckets(str(tmp_path / "b" / "sigs"), str(tmp_path / "b" / "buckets"), other,
                          [str(tmp_path / "a" / "clusters" / "index")])
    with pytest.raises(ValueError, match="config mismatch"):
        list(step.run(None, 0, 1))


def test_conservation_and_bad_input(tmp_path, corpus, base_texts):
    weird = [
        "\x00\x01\x02 binary \xff\xfe",
        "a" * 300_000,  # one giant token
        ("word " * 50_000),  # long repetitive document (running-min path)
        "\ud800 lone surrogate text here with words",
        "   \n\t  ",
        "ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ　ｗｉｔｈ　ｉｄｅｏｇｒａｐｈｉｃ　ｓｐａｃｅｓ",
        "مرحبا بالعالم هذا نص عربي قصير",
    ]
    docs = [corpus.doc(t, f"w{i}") for i, t in enumerate(weird)]
    docs += [corpus.doc(t, f"d{i}") for i, t in enumerate(base_texts[:12])]
    docs += [corpus.doc(base_texts[0], "dup0")]
    out = run_dedup(tmp_path, [docs[:7], docs[7:]])
    assert [d.id for d in out] == [d.id for d in docs[:7]] + [d.id for d in docs[7:]]
    for d in out:
        for k in ("dedup__cluster_id", "dedup__cluster_size", "dedup__duplicate_of", "dedup__exact_duplicate",
                  "dedup__is_duplicate", "dedup__exact_hash"):
            assert k in d.metadata
            assert d.metadata[k] is None or isinstance(d.metadata[k], (int, float, bool, str))
    assert sum(d.metadata["dedup__is_duplicate"] for d in out) == 1


def test_bounded_windows_and_split_units_give_same_result(tmp_path, corpus):
    rng = random.Random(8)
    texts = [corpus.random_text(rng, 60, corpus.vocab) for _ in range(700)]
    texts += [corpus.edit_words(rng, texts[i], 0.02, corpus.vocab) for i in range(0, 700, 7)]
    docs = [corpus.doc(t, f"d{i:04d}", score=float(i % 5)) for i, t in enumerate(texts)]
    small = DedupConfig(max_records_in_memory=1000, batch_docs=64)
    a = by_id(run_dedup(tmp_path / "a", [docs[:400], docs[400:]]))
    b = by_id(run_dedup(tmp_path / "b", [docs[:400], docs[400:]], cfg=small, bucket_tasks=45))
    assert a == b
    assert sum(m["dedup__is_duplicate"] for m in a.values()) >= 95


def test_annotate_without_clusters_fails_loudly(tmp_path, corpus):
    with pytest.raises(FileNotFoundError):
        list(DedupAnnotate(str(tmp_path / "nothing")).run(iter([corpus.doc("x", "x")])))


def test_connected_components_match_reference():
    import numpy as np

    from assay.stages.dedup.minhash import _connected_components

    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 300))
        m = int(rng.integers(1, 400))
        a = rng.integers(0, n, m).astype(np.uint64) * np.uint64(7919)
        b = rng.integers(0, n, m).astype(np.uint64) * np.uint64(7919)
        nodes, labels = _connected_components(a, b)
        # reference: plain union-find
        parent = {int(x): int(x) for x in nodes}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for x, y in zip(a.tolist(), b.tolist()):
            parent[find(x)] = find(y)
        ref = [find(int(x)) for x in nodes]
        ours = labels.tolist()
        pairs = [(i, j) for i in range(len(nodes)) for j in range(i + 1, min(len(nodes), i + 20))]
        assert all((ref[i] == ref[j]) == (ours[i] == ours[j]) for i, j in pairs)
        assert all(labels[labels] == labels)


@pytest.mark.parametrize("exact,near", [(True, False), (False, True)])
def test_exact_only_and_near_only(tmp_path, corpus, base_texts, exact, near):
    rng = random.Random(9)
    cfg = DedupConfig(exact=exact, near=near)
    docs = [corpus.doc(t, f"d{i}") for i, t in enumerate(base_texts[:6])]
    docs += [corpus.doc(base_texts[0].upper(), "exact_copy"),
             corpus.doc(corpus.edit_words(rng, base_texts[1], 0.01, corpus.vocab), "near_copy")]
    m = by_id(run_dedup(tmp_path, [docs], cfg=cfg))
    assert m["exact_copy"]["dedup__is_duplicate"] is True  # near-dup detection also catches exact copies
    assert m["exact_copy"]["dedup__exact_duplicate"] is True
    # the edited copy is a little longer (1% of its words gain an "x"): the same length class, so the id decides
    assert (m["near_copy"]["dedup__cluster_size"] == 2) is near
    assert m["near_copy"]["dedup__is_duplicate"] is near and m["d1"]["dedup__is_duplicate"] is False
    assert len(list((tmp_path / "sigs" / "sigs").iterdir())) == len(cfg.units)


def test_lookup_parquet_matches_jsonl(tmp_path, corpus, base_texts):
    import pyarrow.parquet as pq

    docs = [corpus.doc(t, f"d{i}") for i, t in enumerate(base_texts[:5])] + [corpus.doc(base_texts[0], "copy")]
    run_dedup(tmp_path, [docs])
    rows = [json.loads(x) for x in (tmp_path / "clusters" / "lookup.jsonl").read_text().splitlines()]
    table = pq.read_table(tmp_path / "clusters" / "lookup.parquet").to_pylist()
    assert table == rows and len(rows) == 2
    # a run without any duplicate still writes both (empty)
    run_dedup(tmp_path / "empty", [[corpus.doc(t, f"d{i}") for i, t in enumerate(base_texts[:3])]])
    assert pq.read_table(tmp_path / "empty" / "clusters" / "lookup.parquet").num_rows == 0


def test_signature_errors_are_isolated(tmp_path, corpus, base_texts, monkeypatch):
    import assay.stages.dedup.shingles as sh

    real = sh.compute_signatures

    def flaky(texts, config=None):
        if any("POISON" in t for t in texts):
            raise RuntimeError("boom")
        return real(texts, config)

    monkeypatch.setattr(sh, "compute_signatures", flaky)
    docs = [corpus.doc(t, f"d{i}") for i, t in enumerate(base_texts[:4])]
    docs.insert(2, corpus.doc("POISON " + base_texts[0], "bad"))
    step = MinhashSignatures(str(tmp_path / "sigs"))
    out = list(step.run(iter(docs), 0, 1))
    assert [d.id for d in out] == [d.id for d in docs]
    assert out[2].metadata["dedup__exact_hash"] is None
    assert out[0].metadata["dedup__exact_hash"] is not None
    assert step.stats["dedup/signature_error"].total == 1


def test_annotate_reads_phase_one_exact_hashes(tmp_path, corpus, base_texts, monkeypatch):
    """The decide phase reads documents back from the store, without phase 1's signals: with the signatures
    folder, ``DedupAnnotate`` takes each exact hash phase 1 computed (by document id) instead of hashing the text
    again, and hashes only the documents phase 1 did not (rejected, empty); the values are the same."""
    import assay.stages.dedup.shingles as sh

    docs = [corpus.doc(t, f"d{i:02d}", score=0.5) for i, t in enumerate(base_texts)]
    docs += [corpus.doc(base_texts[0].upper(), "x_exact_upper", score=0.1), corpus.doc("", "x_empty"),
             corpus.doc(base_texts[3], "x_rejected", score=9.0, reject_reason="web_too_short")]
    run_dedup(tmp_path, [docs[0::2], docs[1::2]])

    def fresh():  # as SignalStoreReader gives them to the decide phase
        return [corpus.doc(d.text, d.id, **{k: v for k, v in d.metadata.items() if not k.startswith("dedup__")})
                for d in docs]

    calls = []
    real = sh.exact_hash
    monkeypatch.setattr(sh, "exact_hash", lambda text, config=None: calls.append(text) or real(text, config))
    plain = by_id(DedupAnnotate(str(tmp_path / "clusters"), CFG).run(iter(fresh()), 0, 1))
    assert len(calls) == len(docs)
    calls.clear()
    read = by_id(DedupAnnotate(str(tmp_path / "clusters"), CFG, signatures_folder=str(tmp_path / "sigs"))
                 .run(iter(fresh()), 0, 1))
    assert sorted(calls) == sorted(["", base_texts[3]])  # the empty and the rejected document
    assert read == plain
    assert read["x_exact_upper"]["dedup__exact_hash"] == read["d00"]["dedup__exact_hash"] is not None
    # more documents than a task may hold the hashes of: every text is hashed here
    calls.clear()
    list(DedupAnnotate(str(tmp_path / "clusters"), CFG, signatures_folder=str(tmp_path / "sigs"),
                       max_stored_exact=len(docs) - 1).run(iter(fresh()), 0, 1))
    assert len(calls) == len(docs)
    # phase 1 with another text normalisation: its hashes are not this config's, every text is hashed here
    calls.clear()
    other = DedupConfig(lowercase=False)
    list(DedupAnnotate(str(tmp_path / "clusters"), other, signatures_folder=str(tmp_path / "sigs")).run(iter(fresh()), 0, 1))
    assert len(calls) == len(docs)
