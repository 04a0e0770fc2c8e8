"""The signal store as one typed dataset: polars, duckdb and pyarrow read a real run's store directly."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from assay.pipeline.recipe import load_recipe
from assay.pipeline.registry import store_schema
from assay.pipeline.runner import run_recipe
from assay.stages.common.store import (INT64_MAX, SignalStoreReader, SignalStoreWriter, coerce, list_parts,
                                       read_signals)


@pytest.fixture(scope="module")
def default_store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("typed") / "default"
    run_recipe(load_recipe(None, ["executor.tasks=2", "executor.workers=2"]), out)
    return out


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory) -> Path:
    """web + code + pdf, three tasks and parts of two rows, so most parts hold one source only (every other
    source's signals all null there: the case that typed a column `null` in one part, `double` in another)."""
    out = tmp_path_factory.mktemp("typed") / "mixed"
    recipe = load_recipe(None, ["executor.tasks=3", "executor.workers=2", "signal_store_rows=2",
                                "decisions.rebalance={source: code, key: code__language, caps: {'*': 1500}}"])
    run_recipe(recipe, out)
    return out


def _check_store(run: Path):
    glob = str(run / "signals" / "*.parquet")
    parts = list_parts(run / "signals")
    assert len(parts) >= 2
    schemas = {pq.read_schema(p).remove_metadata() for p in parts}
    assert len(schemas) == 1  # one explicit schema, every part
    schema = schemas.pop()
    assert not any(pa.types.is_null(f.type) for f in schema)
    declared = json.loads((run / "signals" / "_schema.json").read_text())["signals"]
    assert [f.name for f in schema][: len(declared)] == list(declared)

    lazy = pl.scan_parquet(glob).collect()  # polars, directly
    con = duckdb.connect()
    by_source = dict(con.sql(f"select source, count(*) from read_parquet('{glob}') group by source").fetchall())
    table = ds.dataset(str(run / "signals"), format="parquet").to_table()  # pyarrow.dataset, directly
    assert lazy.height == sum(by_source.values()) == table.num_rows
    assert set(by_source) == {"web", "code", "pdf"}
    # typed per signal: numbers are numbers in every part, whatever source the part holds
    assert lazy.schema["gopher__n_words"] == pl.Int64 and lazy.schema["fasttext_web__pct"] == pl.Float64
    assert lazy.schema["code__generated"] == pl.Boolean and lazy.schema["lang__code"] == pl.String
    mean = con.sql(f"select avg(fasttext_web__pct) from read_parquet('{glob}') where source = 'web'").fetchall()[0][0]
    assert 0.0 <= mean <= 1.0
    # nothing undeclared on the shipped steps (a new signal must be declared in pipeline/registry.py)
    extra = lazy["extra"].drop_nulls().to_list()
    assert extra == [], f"undeclared signals: {sorted({k for e in extra for k in json.loads(e)})}"
    assert lazy["store__issues"].null_count() == lazy.height
    return lazy


@pytest.mark.slow
def test_default_run_store_reads_as_one_dataset(default_store):
    df = _check_store(default_store)
    assert df.height == read_signals(default_store / "signals").height


@pytest.mark.slow
def test_mixed_run_store_reads_as_one_dataset_and_shards_carry_typed_signals(mixed_store):
    _check_store(mixed_store)
    shards = pl.scan_parquet(str(mixed_store / "output" / "**" / "*.parquet"), hive_partitioning=False).collect()
    assert isinstance(shards.schema["signals"], pl.Struct)
    assert shards.schema["signals"].to_schema()["fasttext_web__pct"] == pl.Float64
    web = shards.filter(pl.col("source") == "web").select(pl.col("signals").struct.field("gopher__n_words"))
    assert web.to_series().drop_nulls().len() == web.height > 0
    excluded = pl.read_parquet(mixed_store / "excluded" / "*.parquet")
    assert isinstance(excluded.schema["signals"], pl.Struct)
    assert set(excluded["stage"]) <= {"reject", "rules", "tier", "dedup", "rebalance"}


def test_out_of_range_and_wrong_type_values_never_crash_the_store(tmp_path):
    schema = {"warc__http_status": "int", "warc__offset": "int", "x__frac": "float", "x__flag": "bool", "x__s": "str"}
    docs = [
        Document(text="a", id="big", metadata={"source": "web", "warc__offset": 99999999999999999999,
                                                 "warc__http_status": -(10**30), "x__frac": 10**400}),
        Document(text="b", id="bad", metadata={"source": "web", "warc__offset": "abc", "x__flag": "maybe",
                                                 "x__frac": float("nan"), "x__s": "name \udce9\udcff", "new__key": [1]}),
        Document(text="c", id="ok", metadata={"source": "web", "warc__offset": 12.0, "x__flag": 1, "x__s": 3}),
    ]
    w = SignalStoreWriter(str(tmp_path), rows_per_part=10, schema=schema)
    assert len(list(w.run(iter(docs), rank=0))) == 3
    df = pl.scan_parquet(str(tmp_path / "*.parquet")).collect().sort("id")
    rows = {r["id"]: r for r in df.iter_rows(named=True)}
    assert rows["big"]["warc__offset"] == INT64_MAX and rows["big"]["warc__http_status"] == -(2**63)
    assert rows["big"]["x__frac"] == 1.7976931348623157e308
    assert set(rows["big"]["store__issues"].split(",")) == {
        "warc__offset:saturated", "warc__http_status:saturated", "x__frac:saturated"}
    assert rows["bad"]["warc__offset"] is None and rows["bad"]["x__flag"] is None
    assert "warc__offset:invalid" in rows["bad"]["store__issues"] and "x__flag:invalid" in rows["bad"]["store__issues"]
    assert rows["bad"]["x__s"] == "name \\udce9\\udcff"  # undecodable names kept, escaped
    assert json.loads(rows["bad"]["extra"]) == {"new__key": [1]}  # undeclared: kept, not dropped
    assert rows["ok"]["warc__offset"] == 12 and rows["ok"]["x__flag"] is True and rows["ok"]["x__s"] == "3"
    assert rows["ok"]["store__issues"] is None
    stats = w.stats.get_repr() if hasattr(w.stats, "get_repr") else str(w.stats)
    assert "coerced" in stats or "documents_with_coerced_signals" in str(w.stats.to_dict())
    back = {d.id: d for d in SignalStoreReader(str(tmp_path)).run(None)}
    assert back["bad"].metadata["new__key"] == [1] and "x__flag" not in back["bad"].metadata


@pytest.mark.parametrize("value, typ, want", [
    (True, "int", (1, None)), (3.0, "int", (3, None)), (3.5, "int", (None, "invalid")),
    (2**70, "float", (float(2**70), None)), ("1e3", "float", (1000.0, None)), (float("inf"), "float", (float("inf"), None)),
    ("TRUE", "bool", (True, None)), (2, "bool", (None, "invalid")), ({"a": 1}, "str", ('{"a": 1}', None)),
])
def test_coerce(value, typ, want):
    assert coerce(value, typ) == want


def test_the_run_schema_is_the_declared_one():
    r = load_recipe(None)
    sch = store_schema(r)
    assert list(sch)[:4] == ["id", "text", "source", "reject_reason"]
    assert sch["prose__gopher__n_words"] == "int" and sch["quality__priority"] == "int"


@pytest.mark.slow
def test_a_content_length_beyond_int64_does_not_crash_the_run(tmp_path):
    """Issue 15, item 7: `Content-Length: 99999999999999999999` used to crash the store with OverflowError."""
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    body = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><p>"
            + b"A page with some words in it. " * 30 + b"</p></body></html>")
    head = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:11111111-1111-1111-1111-111111111111>\r\n"
            b"WARC-Target-URI: http://example.com/big\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            b"Content-Type: application/http; msgtype=response\r\nContent-Length: 99999999999999999999\r\n\r\n")
    (warcs / "big.warc").write_bytes(head + body + b"\r\n\r\n")
    web_only = ("sources=[{name: web, reader: {kind: warc_reader_v1, params: {paths: [" + str(warcs) + "]}}, "
                "steps: [{kind: html_extract_v1}, {kind: web_heuristics_v1}, {kind: url_safety_v1}]}]")
    out = tmp_path / "run"
    run_recipe(load_recipe(None, [web_only, "executor.tasks=1", "executor.workers=1"]), out)
    row = pl.scan_parquet(str(out / "signals" / "*.parquet")).collect().row(0, named=True)
    # the reader refuses a length past 2^62 as an invalid record (no value out of range reaches the store;
    # the store's own saturation is tested above with values injected past the reader)
    assert row["reject_reason"] == "warc_invalid_record"
    excluded = pl.read_parquet(out / "excluded" / "*.parquet")
    assert excluded["reason"].to_list() == ["warc_invalid_record"]  # counted, with its reason


def test_decisions_read_an_untyped_store_of_an_older_run(tmp_path):
    """A re-tier of a run written before the typed schema: parts disagree on a column's type."""
    from assay.stages.decisions.frame import scan_store

    pl.DataFrame({"id": ["a"], "x__v": [None], "dedup__doc_key": [1]}).write_parquet(tmp_path / "part-00000-00000.parquet")
    pl.DataFrame({"id": ["b"], "x__v": [2.5], "dedup__doc_key": [2]}).write_parquet(tmp_path / "part-00001-00000.parquet")
    assert scan_store(tmp_path, ["id", "x__v"])["x__v"].to_list() == [None, 2.5]
    assert scan_store(tmp_path, ["id", "x__v"], doc_keys=[2])["id"].to_list() == ["b"]
    assert read_signals(tmp_path).height == 2
