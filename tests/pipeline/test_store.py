from __future__ import annotations

from datatrove.data import Document

from assay.stages.common.gate import SourceGate
from assay.stages.common.store import SignalStoreReader, SignalStoreWriter, list_parts, read_signals, rows_to_table


def test_rows_with_mixed_types_and_keys():
    t = rows_to_table([{"id": "a", "x": 1, "b": True}, {"id": "b", "x": 2.5, "s": "t", "l": [1, 2]}])
    assert t.schema.field("x").type.__str__() == "double"
    assert t.column("l").to_pylist() == [None, "[1, 2]"]


def test_store_roundtrip_and_rerun_is_idempotent(tmp_path):
    docs = [Document(text=f"t{i}", id=f"d{i}", metadata={"source": "web" if i % 2 else "code", "sig__v": i})
            for i in range(25)]
    w = SignalStoreWriter(str(tmp_path), rows_per_part=10)
    assert len(list(w.run(iter(docs), rank=0))) == 25
    assert len(list_parts(tmp_path)) == 3
    # rerun of the same rank replaces its parts, no duplicates
    list(SignalStoreWriter(str(tmp_path), rows_per_part=10).run(iter(docs), rank=0))
    assert len(list_parts(tmp_path)) == 3
    back = [d for r in range(2) for d in SignalStoreReader(str(tmp_path)).run(None, rank=r, world_size=2)]
    assert sorted(d.id for d in back) == sorted(d.id for d in docs)
    df = read_signals(tmp_path)
    assert df.height == 25 and df["sig__v"].sum() == sum(range(25))


def test_store_parts_close_at_a_text_size_cap(tmp_path):
    """A few huge pages never pile up in one part: a part closes at the text cap as well as the row cap."""
    docs = [Document(text=("x" * 400 if i % 3 == 0 else "short"), id=f"d{i}", metadata={"source": "web"})
            for i in range(12)]
    list(SignalStoreWriter(str(tmp_path), rows_per_part=1000, text_bytes_per_part=1000).run(iter(docs), rank=0))
    parts = list_parts(tmp_path)
    assert len(parts) == 2  # 400+5+5+400+5+5+400 = 1220 closes the first part at the 7th doc
    df = read_signals(tmp_path)
    assert sorted(df["id"].to_list()) == sorted(d.id for d in docs)


class Upper:
    name = "upper"
    type = "T"

    def __init__(self):
        from datatrove.utils.stats import Stats

        self.stats = Stats("upper")

    def run(self, data, rank=0, world_size=1):
        for d in data:
            d.text = d.text.upper()
            yield d


def test_source_gate_only_touches_its_source():
    docs = [Document(text="a", id="1", metadata={"source": "web"}),
            Document(text="b", id="2", metadata={"source": "code"}),
            Document(text="c", id="3", metadata={"source": "web"})]
    out = list(SourceGate(Upper(), "web").run(iter(docs)))
    assert [d.text for d in out] == ["A", "b", "C"]


def test_rows_to_table_fast_path_equals_coerce():
    """Values already of their declared type are stored as they are; the result equals coercing every
    value (NaN, infinities, bools in int/float columns, out-of-range ints, strings with lone surrogates)."""
    import math

    from assay.stages.common.store import ISSUES_COLUMN, coerce, rows_to_table

    schema = {"f": "float", "i": "int", "b": "bool", "s": "str"}
    vals = {"f": [1.5, float("nan"), float("inf"), -0.0, 3, True, "2.5", None, "x"],
            "i": [7, 2**70, -(2**70), 3.0, 3.5, True, "12", None, float("nan")],
            "b": [True, False, 1, 0, 2, "true", None, 1.0, "no"],
            "s": ["a", "b\udcff", 3, 2.5, True, None, ["x"], {"k": 1}, b"by"]}
    rows = [{k: vals[k][j] for k in schema} for j in range(9)]
    got = rows_to_table(rows, schema).to_pylist()
    for j, row in enumerate(got):
        problems = []
        for k, typ in schema.items():
            want, problem = coerce(rows[j][k], typ)
            v = row[k]
            assert (v == want) or (isinstance(v, float) and isinstance(want, float) and math.isnan(v) and math.isnan(want)), (k, j)
            assert type(v) is type(want) or want is None, (k, j)
            if problem:
                problems.append(f"{k}:{problem}")
        assert row[ISSUES_COLUMN] == (",".join(problems) or None)


def test_default_parts_close_after_one_mebi_character_of_text_and_read_back_the_same(tmp_path, shared_data):
    """Real pages: the default writer closes a part once its texts reach 1 Mi characters (a part's Arrow
    table and Parquet encoding briefly take about 8x its text: a signals worker's final flush was its peak),
    and the parts read back exactly as one big part does, row by row and cell by cell."""
    import polars as pl

    pages = sorted((shared_data / "html").rglob("*.html"))
    docs, chars = [], 0
    for i, p in enumerate(pages * 4):
        text = p.read_text(encoding="utf-8", errors="replace")
        docs.append(Document(text=text, id=f"p{i}", metadata={"source": "web", "doc__chars": len(text)}))
        chars += len(text)
        if chars > 3 * 2**20:
            break
    assert chars > 3 * 2**20, "the shared html pages hold too little text for this test"
    split, whole = tmp_path / "split", tmp_path / "whole"
    schema = {"doc__chars": "int"}
    assert [d.id for d in SignalStoreWriter(str(split), schema=schema).run(iter(docs), rank=0)] == [d.id for d in docs]
    list(SignalStoreWriter(str(whole), schema=schema, text_bytes_per_part=1 << 30).run(iter(docs), rank=0))
    parts = list_parts(split)
    assert len(parts) >= 3 and len(list_parts(whole)) == 1
    for part in parts[:-1]:  # each closed at the cap: at most the cap plus its last page
        texts = pl.read_parquet(part, columns=["text"])["text"].str.len_chars()
        assert texts.sum() >= 2**20 and texts.sum() - texts[-1] < 2**20
    back = [d for d in SignalStoreReader(str(split), by_writer_rank=True).run(None, rank=0)]
    assert [(d.id, d.text) for d in back] == [(d.id, d.text) for d in docs]
    assert read_signals(split).equals(read_signals(whole))
