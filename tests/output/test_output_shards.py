from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import BaseFilter

from assay.stages.output.shards import (
    ExclusionWriter,
    ShardWriter,
    exclusion_schema,
    list_shards,
    open_dataset,
    row_nbytes,
    shard_schema,
)



def _without_signals(schema):
    return schema.remove(schema.get_field_index("signals"))


def _sig_json(row):
    """The row-byte budget counts the signals as the JSON text of the present ones (see ShardWriter._row)."""
    from assay.stages.output.shards import _json_dumps

    return _json_dumps({k: v for k, v in row["signals"].items() if v is not None})

def _kept(docs):
    return [d for d in docs if d.metadata.get("decision__reason") is None]


def _copy(docs):
    return [Document(text=d.text, id=d.id, metadata=dict(d.metadata)) for d in docs]


def _write(folder: Path, docs, rank: int = 0, **kw) -> list[Document]:
    w = ShardWriter(str(folder), **kw)
    return list(w.run(iter(_copy(docs)), rank=rank))


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in list_shards(folder)}


def test_schema_layout_and_columns(tmp_path, documents):
    out = tmp_path / "out"
    passed = _write(out, documents, max_shard_bytes=50_000)
    assert len(passed) == len(documents)  # every document passes through
    shards = list_shards(out)
    assert shards
    kept = _kept(documents)
    rows = 0
    for p in shards:
        pf = pq.ParquetFile(p)
        assert _without_signals(pf.schema_arrow.remove_metadata()) == _without_signals(shard_schema())
        assert pa.types.is_struct(pf.schema_arrow.field("signals").type)  # typed, not a JSON string
        kv = pf.schema_arrow.metadata
        assert kv[b"assay.schema_version"] == b"1"
        assert kv[b"assay.token_count_method"].startswith(b"estimate:")
        assert pf.metadata.row_group(0).column(1).compression == "ZSTD"
        rel = p.relative_to(out).parts
        assert [x.split("=")[0] for x in rel[:3]] == ["source", "tier", "language"]
        assert p.name.startswith("shard-00000-")
        t = pf.read()
        part = dict(x.split("=") for x in rel[:3])
        for col in ("source", "tier", "language"):
            assert set(t.column(col).to_pylist()) == {part[col]}
        for s in t.column("signals").to_pylist():
            sig = {k: v for k, v in s.items() if v is not None}
            assert "quality__score" in sig and all("__" in k for k in sig)
            assert "decision__reason" not in sig and "lang__code" not in sig
        rows += t.num_rows
    assert rows == len(kept)
    table = open_dataset(out).to_table()
    by_id = {d.id: d for d in kept}
    for r in table.to_pylist()[:50]:
        d = by_id[r["id"]]
        assert r["text"] == d.text
        assert r["n_chars"] == len(d.text) and r["n_bytes"] == len(d.text.encode())
        assert r["url_or_path"] == (d.metadata.get("url") or d.metadata.get("path"))
        want_lang = d.metadata.get("lang__code") or d.metadata.get("code__language")
        assert r["language"] == want_lang
        prov = json.loads(r["provenance"])
        if d.metadata["source"] == "code":
            assert prov["repo"] == d.metadata["repo"]


def test_shard_sizes_respect_the_limits(tmp_path, documents):
    out = tmp_path / "out"
    max_b, max_t = 30_000, 4_000
    _write(out, documents, max_shard_bytes=max_b, max_shard_tokens=max_t, row_group_rows=7, row_group_bytes=12_000)
    n_multi = 0
    for p in list_shards(out):
        pf = pq.ParquetFile(p)
        t = pf.read()
        rb = [row_nbytes(r["n_bytes"], r["id"], r["url_or_path"], _sig_json(r), r["provenance"], r["source"], r["language"], r["tier"])
              for r in t.to_pylist()]
        assert int(pf.schema_arrow.metadata[b"assay.row_bytes"]) == sum(rb)
        if t.num_rows > 1:
            n_multi += 1
            assert sum(rb) <= max_b
            assert sum(t.column("token_count").to_pylist()) <= max_t
            assert p.stat().st_size <= max_b
        for i in range(pf.metadata.num_row_groups):
            g = pf.read_row_group(i).to_pylist()
            assert len(g) <= 7
            g_bytes = sum(row_nbytes(r["n_bytes"], r["id"], r["url_or_path"], _sig_json(r), r["provenance"], r["source"], r["language"], r["tier"]) for r in g)
            assert len(g) == 1 or g_bytes <= 12_000
    assert n_multi >= 5
    # a shard is cut only when the next document would not fit
    w = ShardWriter(str(tmp_path / "x"), max_shard_bytes=100, max_shard_tokens=None)
    assert w.plan_shards([40, 40, 40, 150, 10], [1] * 5) == [(0, 2), (2, 3), (3, 4), (4, 5)]


def test_oversize_document_is_written_alone(tmp_path):
    docs = [Document(text="word " * 5000, id="big", metadata={"source": "web", "tier": "high", "lang__code": "en", "decision__reason": None})]
    docs += [Document(text="small text", id=f"s{i}", metadata={"source": "web", "tier": "high", "lang__code": "en", "decision__reason": None}) for i in range(5)]
    _write(tmp_path, docs, max_shard_bytes=2_000)
    tables = [pq.read_table(p, columns=["id"]) for p in list_shards(tmp_path)]
    assert sum(t.num_rows for t in tables) == 6
    (big,) = [t for t in tables if "big" in t.column("id").to_pylist()]
    assert big.num_rows == 1
    assert len(tables) <= 3  # the small ones before/after "big" in shuffle order share shards


def test_assignment_is_deterministic_and_seeded(tmp_path, documents):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _write(a, documents, max_shard_bytes=40_000, seed=3)
    _write(b, list(reversed(documents)), max_shard_bytes=40_000, seed=3)
    assert _digest(a) == _digest(b) and len(_digest(a)) > 3  # byte-identical, whatever the arrival order
    _write(c, documents, max_shard_bytes=40_000, seed=4)
    ids_a = open_dataset(a).to_table(columns=["id"]).column("id").to_pylist()
    ids_c = open_dataset(c).to_table(columns=["id"]).column("id").to_pylist()
    assert sorted(ids_a) == sorted(ids_c) and ids_a != ids_c
    # the order is a shuffle: neither arrival order nor sorted by id
    part = sorted((a / "source=web" / "tier=high" / "language=en").glob("shard-*.parquet"))
    ids = [i for p in part for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()]
    arrival = [d.id for d in documents if d.id in set(ids)]
    assert len(ids) > 10 and ids != arrival and ids != sorted(ids)


def test_ranks_never_collide_and_reruns_are_idempotent(tmp_path, documents):
    out = tmp_path / "out"
    half = len(documents) // 2
    _write(out, documents[:half], rank=0, max_shard_bytes=40_000)
    _write(out, documents[half:], rank=1, max_shard_bytes=40_000)
    first = _digest(out)
    names0 = {k for k in first if "/shard-00000-" in k}
    names1 = {k for k in first if "/shard-00001-" in k}
    assert names0 and names1 and names0 | names1 == set(first)
    assert open_dataset(out).count_rows() == len(_kept(documents))
    # same input again: identical files
    _write(out, documents[:half], rank=0, max_shard_bytes=40_000)
    assert _digest(out) == first
    # rank 0 rerun with less data: its stale shards are gone, rank 1 untouched
    (out / "source=web" / "tier=high" / "language=en" / ".shard-00000-00099.parquet.tmp").write_bytes(b"partial")
    _write(out, documents[:10], rank=0, max_shard_bytes=40_000)
    now = _digest(out)
    assert {k: v for k, v in now.items() if "/shard-00001-" in k} == {k: first[k] for k in names1}
    assert open_dataset(out).count_rows() == len(_kept(documents[:10])) + len(_kept(documents[half:]))
    assert not list(out.rglob("*.tmp")) and not (out / ".staging").exists()


def test_bad_input_never_crashes(tmp_path):
    md = {"source": "web", "tier": "high", "decision__reason": None}
    docs = [
        Document(text="lone \udcff surrogate", id="bad\udcffid", metadata={**md, "lang__code": "en"}),
        Document(text="", id="empty", metadata={**md, "lang__code": None}),
        Document(text="nan signal", id="nan", metadata={**md, "x__score": float("nan"), "x__inf": float("inf"), "x__list": [1, 2], "x__obj": object()}),
        Document(text="weird partition", id="weird", metadata={"lang__code": "zh-Hant/../x y", "tier": None, "decision__reason": None}),
    ]
    _write(tmp_path, docs)
    t = open_dataset(tmp_path).to_table()
    rows = {r["id"]: r for r in t.to_pylist()}
    assert set(rows) == {"bad\ufffdid", "empty", "nan", "weird"}
    assert rows["bad\ufffdid"]["text"] == "lone \ufffd surrogate"
    assert rows["empty"]["language"] == "und" and rows["empty"]["token_count"] == 0
    sig = rows["nan"]["signals"]
    assert sig["x__score"] is None and sig["x__inf"] is None and sig["x__list"] == "[1, 2]"
    assert rows["weird"]["source"] == "unknown" and rows["weird"]["tier"] == "unknown"
    assert "/" not in rows["weird"]["language"] and ".." in rows["weird"]["language"]
    assert all(p.parent.parent.parent.parent == tmp_path for p in list_shards(tmp_path))


def test_exclusion_writer_step(tmp_path, documents):
    w = ExclusionWriter(str(tmp_path))
    passed = list(w.run(iter(_copy(documents)), rank=3))
    assert len(passed) == len(documents)
    files = sorted(tmp_path.glob("part-00003-*.parquet"))
    t = pq.read_table(files)
    assert _without_signals(t.schema.remove_metadata()) == _without_signals(exclusion_schema())
    assert pa.types.is_struct(t.schema.field("signals").type)
    excluded = [d for d in documents if d.metadata.get("decision__reason")]
    assert t.num_rows == len(excluded)
    rows = {r["id"]: r for r in t.to_pylist()}
    for d in excluded:
        r = rows[d.id]
        assert r["reason"] == d.metadata["decision__reason"]
        assert r["text"] is None and r["n_chars"] == len(d.text)
        assert (r["token_count"] > 0) == bool(d.text)
        if d.metadata.get("reject_reason"):
            assert r["stage"] == "reject"
        elif r["reason"].startswith("dedup"):
            assert r["stage"] == "dedup" and r["duplicate_of"] == d.metadata["dedup__cluster_id"]
        elif r["reason"].startswith("tier_"):
            assert r["stage"] == "tier"
        else:
            assert r["stage"] == "rules"


class _ShortDocs(BaseFilter):
    name = "short"

    def filter(self, doc):
        return (len(doc.text) >= 20, "too_short")


def test_exclusion_writer_as_datatrove_exclusion_writer(tmp_path):
    docs = [Document(text="x" * n, id=f"d{n}", metadata={"source": "web", "lang__code": "en"}) for n in (5, 50, 10, 100)]
    f = _ShortDocs(exclusion_writer=ExclusionWriter(str(tmp_path), include_text=True))
    kept = list(f.run(iter(docs), rank=0))
    assert [d.id for d in kept] == ["d50", "d100"]
    t = pq.read_table(sorted(tmp_path.glob("part-*.parquet")))
    assert sorted(t.column("id").to_pylist()) == ["d10", "d5"]
    assert set(t.column("reason").to_pylist()) == {"too_short"}
    assert sorted(t.column("text").to_pylist()) == ["x" * 5, "x" * 10]


def test_shards_read_back_with_datatrove_parquet_reader(tmp_path, documents):
    from datatrove.pipeline.readers import ParquetReader

    _write(tmp_path, documents, max_shard_bytes=40_000)
    r = ParquetReader(str(tmp_path), glob_pattern="**/shard-*.parquet", text_key="text", id_key="id")
    got = list(r.run())
    assert sorted(d.id for d in got) == sorted(d.id for d in _kept(documents))
    assert all("token_count" in d.metadata and "signals" in d.metadata for d in got)


def test_remote_output_folder_is_refused():
    with pytest.raises(ValueError, match="local path"):
        ShardWriter("s3://bucket/out")


def test_partition_subset_and_stale_staging(tmp_path, documents):
    stale = tmp_path / ".staging" / "rank-00000-killed"
    stale.mkdir(parents=True)
    (stale / "000000.arrow").write_bytes(b"junk")
    _write(tmp_path, documents, partition_by=["source"])
    dirs = sorted({p.parent.relative_to(tmp_path).as_posix() for p in list_shards(tmp_path)})
    assert dirs == ["source=code", "source=pdf", "source=web"]
    t = open_dataset(tmp_path).to_table(columns=["tier"])
    assert set(t.column("tier").to_pylist()) == {"high", "medium", "low"}  # still a column
    assert not (tmp_path / ".staging").exists()
    with pytest.raises(ValueError, match="partition_by"):
        ShardWriter(str(tmp_path), partition_by=["source", "url"])
