"""The `highest_priority` keep policy inside one priority: the longest text (the more complete version) wins,
then the smallest id; on the exact-dup path, across runs (a published copy still wins), with stores and indexes
written before the sidecar had a length, and on the real case of issue 17 (golang-1.19-doc's current and
older language specs, near-duplicates in one ensemble bucket)."""

from __future__ import annotations

import json
import random
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from assay.stages.dedup import storage as st
from assay.stages.dedup.config import DedupConfig
from assay.stages.dedup.minhash import DedupAnnotate, MinhashBuckets, MinhashClusters, MinhashSignatures, choose_kept

CFG = DedupConfig()


def run_dedup(tmp: Path, docs_by_rank, *, cfg=CFG, index_folders=(), bucket_tasks=2, after_signatures=None):
    """The 4 phases in-process (priority signal ``score``); the annotated documents by id."""
    sig = MinhashSignatures(str(tmp / "sigs"), cfg, priority_signal="score", date_signal="date")
    passed = []
    for r, docs in enumerate(docs_by_rank):
        passed += list(sig.run(iter(docs), r, len(docs_by_rank)))
    if after_signatures:
        after_signatures(tmp / "sigs")
    for r in range(bucket_tasks):
        list(MinhashBuckets(str(tmp / "sigs"), str(tmp / "buckets"), cfg, list(index_folders)).run(None, r, bucket_tasks))
    list(MinhashClusters(str(tmp / "buckets"), str(tmp / "clusters"), cfg, "highest_priority").run(None, 0, 1))
    return {d.id: d.metadata for d in DedupAnnotate(str(tmp / "clusters"), cfg).run(iter(passed), 0, 1)}


def kept_of(m: dict, members) -> list[str]:
    return [x for x in members if not m[x]["dedup__is_duplicate"]]


# ------------------------------------------------------------------------------ choose_kept
def _choose(ids, prio, length, in_index=None, policy="highest_priority"):
    n = len(ids)
    labels = np.zeros(n, dtype=np.int64)
    in_index = np.zeros(n, dtype=bool) if in_index is None else np.asarray(in_index)
    kept = choose_kept(labels, list(ids), np.asarray(prio, dtype=float), np.full(n, np.nan), in_index, policy,
                       None if length is None else np.asarray(length))
    return ids[int(kept[0])]


def test_choose_kept_longest_within_a_priority_then_smallest_id():
    ids = ["a", "b", "c", "d"]
    assert _choose(ids, [6, 6, 6, 6], [100, 300, 200, 300]) == "b"  # longest; b and d tie: smaller id
    assert _choose(ids, [6, 6, 7, 6], [100, 300, 200, 300]) == "c"  # a higher priority beats any length
    assert _choose(ids, [np.nan, 6, 6, 6], [900, 100, 200, 150]) == "c"  # no priority: last, however long
    assert _choose(ids, [6, 6, 6, 6], [100, 100, 100, 100]) == "a"  # equal lengths: the id order, as before
    assert _choose(ids, [6, 6, 6, 6], None) == "a"  # no lengths: the id order, as before
    assert _choose(ids, [6, 6, 6, 6], [0, 0, 0, 0]) == "a"  # unknown (a store without lengths): same
    # copies within a length class (a few words repeated or inserted) do not win for being longer: the id
    assert _choose(ids, [6, 6, 6, 6], [1000, 1004, 1008, 1002]) == "a"
    assert _choose(ids, [6, 6, 6, 6], [1000, 1004, 1200, 1002]) == "c"  # 20% longer: a longer version wins
    # an earlier run's (published) copy wins over a longer, higher-priority new one
    assert _choose(ids, [6, 6, 9, 6], [100, 300, 900, 300], in_index=[False, True, False, False]) == "b"
    # the other policies do not read the length
    assert _choose(ids, [6, 6, 6, 6], [100, 300, 200, 300], policy="first_id") == "a"


def test_choose_kept_does_not_depend_on_member_order():
    rng = np.random.default_rng(0)
    n = 200
    ids = [f"id{int(x):06d}" for x in rng.permutation(n)]
    labels = rng.integers(0, 20, n)
    prio = rng.integers(0, 3, n).astype(float)
    length = rng.integers(0, 5, n) * 100  # many ties on length too
    in_index = rng.random(n) < 0.05

    def kept_ids(order):
        k = choose_kept(labels[order], [ids[i] for i in order], prio[order], np.full(n, np.nan), in_index[order],
                        "highest_priority", length[order])
        return {ids[order[i]]: ids[order[int(j)]] for i, j in enumerate(k)}

    ref = kept_ids(np.arange(n))
    for _ in range(5):
        assert kept_ids(rng.permutation(n)) == ref


# ------------------------------------------------------------------------------ the on-disk phases
@pytest.fixture(scope="module")
def texts(corpus):
    rng = random.Random(5)
    return [corpus.random_text(rng, 250, corpus.vocab) for _ in range(12)]


def _versions(corpus, texts):
    """One base text and a longer version of it (a paragraph more), both at priority 6."""
    rng = random.Random(6)
    base = texts[0]
    longer = base + " " + " ".join(corpus.vocab[i] for i in rng.sample(range(len(corpus.vocab)), 25)) + "."
    assert corpus.doc(longer, "x").text != base and len(longer) > len(base)
    return base, longer


def test_longer_version_kept_whatever_the_order_ranks_and_tasks(tmp_path, corpus, texts):
    base, longer = _versions(corpus, texts)
    rng = random.Random(7)
    docs = [corpus.doc(base, "aaa-short", score=6.0), corpus.doc(longer, "zzz-long", score=6.0),
            corpus.doc(corpus.edit_words(rng, base, 0.01, corpus.vocab), "mmm-short-copy", score=6.0)]
    docs += [corpus.doc(t, f"u{i}", score=6.0) for i, t in enumerate(texts[1:8])]
    cluster = ["aaa-short", "zzz-long", "mmm-short-copy"]
    results = []
    for k, (n_ranks, tasks) in enumerate([(1, 1), (2, 2), (3, 15), (2, 7)]):
        order = docs[:]
        random.Random(k).shuffle(order)
        by_rank = [order[r::n_ranks] for r in range(n_ranks)]
        m = run_dedup(tmp_path / f"run{k}", by_rank, bucket_tasks=tasks)
        assert {m[x]["dedup__cluster_size"] for x in cluster} == {3}
        results.append({x: (m[x]["dedup__is_duplicate"], m[x]["dedup__duplicate_of"], m[x]["dedup__cluster_id"])
                        for x in m})
    assert kept_of(m, cluster) == ["zzz-long"]  # not "aaa-short", the smallest id
    assert all(r == results[0] for r in results[1:])


def test_exact_duplicates_keep_the_longest_raw_text(tmp_path, corpus, texts):
    """Equal after normalisation (case, punctuation, digits, whitespace): the longest raw text is kept."""
    t = texts[1]
    docs = [corpus.doc(t, "a-plain", score=6.0), corpus.doc(t.replace(". ", "... "), "z-more-punct", score=6.0),
            corpus.doc(t.upper(), "b-upper", score=6.0)]
    for cfg in (DedupConfig(exact=True, near=False), CFG):
        m = run_dedup(tmp_path / f"near{cfg.near}", [docs[:1], docs[1:]], cfg=cfg)
        assert kept_of(m, ["a-plain", "z-more-punct", "b-upper"]) == ["z-more-punct"]
        assert m["a-plain"]["dedup__exact_duplicate"] and m["a-plain"]["dedup__duplicate_of"] == "z-more-punct"


def test_a_published_copy_still_wins_over_a_longer_new_one(tmp_path, corpus, texts):
    base, longer = _versions(corpus, texts)
    run_dedup(tmp_path / "run1", [[corpus.doc(base, "r1-short", score=6.0)]])
    index1 = tmp_path / "run1" / "clusters" / "index"
    meta = json.loads((index1 / "meta.json").read_text())
    assert meta[st.FORMAT_KEY] == st.RECORD_FORMAT
    docs = np.frombuffer((index1 / "docs.bin").read_bytes(), dtype=st.INDEX_DOC)
    assert docs["length"].tolist() == [len(base.encode())]
    m = run_dedup(tmp_path / "run2", [[corpus.doc(longer, "r2-long", score=9.0),
                                       corpus.doc(base + " tail", "r2-mid", score=6.0)]],
                  index_folders=[str(index1)])
    assert m["r2-long"]["dedup__duplicate_of"] == "r1-short" and m["r2-mid"]["dedup__duplicate_of"] == "r1-short"


def _to_format_1(folder: Path, bin_paths, meta_paths, legacy, current) -> None:
    """Rewrite sidecar/index records and their meta JSON as code before the length column wrote them."""
    for p in bin_paths:
        recs = np.frombuffer(p.read_bytes(), dtype=current)
        old = np.zeros(recs.size, dtype=legacy)
        for name in legacy.names:
            old[name] = recs[name]
        p.write_bytes(old.tobytes())
    for p in meta_paths:
        d = json.loads(p.read_text())
        del d[st.FORMAT_KEY]
        p.write_text(json.dumps(d))


def test_stores_and_indexes_without_lengths_still_read(tmp_path, corpus, texts):
    """Signatures and an index written before the sidecar had a length: read with length 0, ties by id."""
    base, longer = _versions(corpus, texts)

    def old_sigs(sigs: Path) -> None:
        _to_format_1(sigs, sorted((sigs / "docs").glob("*.bin")), sorted((sigs / "meta").glob("*.json")),
                     st.SIDE_V1, st.SIDE)

    docs = [corpus.doc(longer, "zzz-long", score=6.0), corpus.doc(base, "aaa-short", score=6.0)]
    docs += [corpus.doc(t, f"u{i}", score=6.0) for i, t in enumerate(texts[2:5])]
    m = run_dedup(tmp_path / "old", [docs[:2], docs[2:]], after_signatures=old_sigs)
    assert kept_of(m, ["aaa-short", "zzz-long"]) == ["aaa-short"]  # no lengths: the id order, as before
    old_index = tmp_path / "old" / "clusters" / "index"
    assert json.loads((old_index / "meta.json").read_text())[st.FORMAT_KEY] == st.RECORD_FORMAT
    # the index of that run, rewritten as the old code wrote it, serves a later run
    _to_format_1(old_index, [old_index / "docs.bin"], [old_index / "meta.json"], st.INDEX_DOC_V1, st.INDEX_DOC)
    m2 = run_dedup(tmp_path / "new", [[corpus.doc(longer + " more", "new-long", score=9.0)]],
                   index_folders=[str(old_index)])
    assert m2["new-long"]["dedup__duplicate_of"] == "aaa-short"
    # and annotate reads old sidecars' exact hashes back
    again = DedupAnnotate(str(tmp_path / "old" / "clusters"), CFG, signatures_folder=str(tmp_path / "old" / "sigs"))
    fresh = [corpus.doc(d.text, d.id, score=6.0) for d in docs]
    got = {d.id: d.metadata for d in again.run(iter(fresh), 0, 1)}
    assert got["aaa-short"]["dedup__exact_hash"] == m["aaa-short"]["dedup__exact_hash"] is not None


# ------------------------------------------------------------------------------ real pages (issue 17)
GO_HTML = "usr/share/doc/golang-1.19-doc/html"


@pytest.mark.slow
def test_golang_current_spec_kept_over_the_older_one(tmp_path, debian_doc):
    """golang-1.19-doc ships go_spec.html (the current spec) and go1.17_spec.html (older, shorter): near-duplicates
    (Jaccard 0.77). With bench_e2e's 5x copies they form one cluster, and both sat in ensemble bucket 6 there, so
    the smallest WARC record id decided. Here the smallest id is an old-spec copy: the current spec must win, in
    every input order and rank split."""
    from datatrove.data import Document

    from assay.stages.decisions.lengths import length_class
    from assay.stages.web.extract import HtmlExtractor

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import _e2e_corpus

    html = debian_doc("golang-1.19-doc") / GO_HTML
    pages = {n: (html / n).read_bytes() for n in ("go_spec.html", "go1.17_spec.html")}
    rng = random.Random(17)
    raw = []  # (page, copy, body): the original and four edited copies, as bench_e2e's 5x corpus
    for name, body in pages.items():
        raw.append((name, 0, body))
        raw += [(name, c, _e2e_corpus.edit_copy(body, rng)) for c in range(1, 5)]
    ids = sorted(f"urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in raw)
    old_first = sorted(raw, key=lambda r: (r[0] != "go1.17_spec.html", r[1]))  # the smallest id to an old copy
    docs = [Document(text=body.decode("utf-8", "replace"), id=i, metadata={"content_type": "text/html"})
            for i, (_, _, body) in zip(ids, old_first)]
    extracted = list(HtmlExtractor().run(iter(docs)))
    page_of = {i: n for i, (n, _, _) in zip(ids, old_first)}
    length = {d.id: len(d.text.encode()) for d in extracted}
    assert min(length[i] for i in ids if page_of[i] == "go_spec.html") > max(
        length[i] for i in ids if page_of[i] == "go1.17_spec.html")
    assert page_of[ids[0]] == "go1.17_spec.html"  # the id order alone keeps the older spec
    for k, n_ranks in enumerate((1, 2, 3)):
        order = [Document(text=d.text, id=d.id, metadata={"score": 6.0}) for d in extracted]
        random.Random(k).shuffle(order)
        m = run_dedup(tmp_path / f"run{k}", [order[r::n_ranks] for r in range(n_ranks)], bucket_tasks=1 + k)
        assert {m[i]["dedup__cluster_size"] for i in ids} == {len(ids)}  # one cluster of both specs
        kept = kept_of(m, ids)
        assert len(kept) == 1 and page_of[kept[0]] == "go_spec.html"
        cls = dict(zip(ids, length_class([length[i] for i in ids]).tolist()))
        assert kept[0] == sorted((i for i in ids if page_of[i] == "go_spec.html"), key=lambda i: (-cls[i], i))[0]


def test_length_class_is_monotone_and_coarse():
    from assay.stages.decisions.lengths import LENGTH_CLASS_RATIO, length_class

    lengths = np.arange(0, 200_000, 7)
    c = length_class(lengths)
    assert c[0] == 0 and (c[1:] >= 1).all() and (np.diff(c) >= 0).all()  # unknown first; never decreasing
    assert length_class([np.nan]).tolist() == [0]
    # one class spans a ratio of LENGTH_CLASS_RATIO: x and x * ratio**2 are always in different classes
    x = np.array([50, 1000, 165_000])
    assert (length_class(x * LENGTH_CLASS_RATIO ** 2) > length_class(x)).all()
    assert (length_class(x * 1.19) - length_class(x) >= 3).all()  # go_spec vs go1.17_spec: 19% longer
