"""The signal store: every document of a run with all its signals, as Parquet part files.

Written at the end of the signals phase, read by the decide phase (and by a re-tier run, and by
notebooks). Each rank writes `part-<rank>-<k>.parquet`. With the run's declared schema (signal name ->
bool | int | float | str, from the registry's step declarations; `assay.pipeline.registry.store_schema`)
every part has exactly the same columns and types, so `pl.scan_parquet("RUN/signals/*.parquet")`,
duckdb's `read_parquet` and `pyarrow.dataset` read the store as one table. Keys no step declares are kept
in the `extra` column (a JSON object); a value that does not fit its declared type is saturated (an
integer beyond int64) or stored as null, and either is recorded in `store__issues` (`name:saturated`,
`name:invalid`) and counted, never crashing the task. The schema is also written as `_schema.json`.
Parts are written to a temporary name and renamed, so a killed task never leaves a part that
looks whole; a rank deletes its own earlier parts before writing, so a rerun is idempotent.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.decisions.frame import documents_frame

CORE_COLUMNS = ("id", "text", "source")
EXTRA_COLUMN = "extra"
ISSUES_COLUMN = "store__issues"
SCHEMA_FILE = "_schema.json"
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
FLOAT_MAX = 1.7976931348623157e308


def arrow_type(typ: str):
    import pyarrow as pa

    return {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}[typ]


def clean_str(s: str) -> str:
    """A string Arrow can store: lone surrogates (undecodable file names) become `\\udcXX` escapes."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_default(v: Any) -> str:
    return str(v)


def coerce(value: Any, typ: str) -> tuple[Any, str | None]:
    """`value` as a declared `typ` (bool | int | float | str): (stored value, None | 'saturated' | 'invalid')."""
    if value is None:
        return None, None
    if typ == "str":
        if isinstance(value, str):
            return clean_str(value), None
        if isinstance(value, (list, dict, tuple)):
            return clean_str(json.dumps(value, sort_keys=True, default=_json_default)), None
        if isinstance(value, bytes):
            return clean_str(value.decode("utf-8", "surrogateescape")), None
        return clean_str(str(value)), None
    if typ == "bool":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value), None
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true", None
        return None, "invalid"
    if typ == "int":
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return None, "invalid"
            value = int(value)
        elif isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                return None, "invalid"
        if not isinstance(value, int):
            return None, "invalid"
        if value > INT64_MAX:
            return INT64_MAX, "saturated"
        if value < INT64_MIN:
            return INT64_MIN, "saturated"
        return int(value), None
    if typ == "float":
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None, "invalid"
        if not isinstance(value, (int, float)):
            return None, "invalid"
        try:
            f = float(value)
        except OverflowError:
            return (FLOAT_MAX if value > 0 else -FLOAT_MAX), "saturated"
        return (None, "invalid") if math.isnan(f) else (f, None)
    raise ValueError(f"unknown signal type {typ!r}")


def _column_type(values: list[Any]):
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null(), lambda v: None
    if kinds == {bool}:
        return pa.bool_(), bool
    if kinds <= {int} or kinds <= {int, bool}:
        if all(v is None or INT64_MIN <= v <= INT64_MAX for v in values):
            return pa.int64(), lambda v: None if v is None else int(v)
    if kinds <= {int, float, bool}:
        return pa.float64(), lambda v: None if v is None else coerce(v, "float")[0]
    if kinds == {str}:
        return pa.string(), clean_str

    def to_text(v: Any) -> str | None:
        if v is None:
            return None
        return coerce(v, "str")[0]

    return pa.string(), to_text


def rows_to_table(rows: list[dict[str, Any]], schema: Mapping[str, str] | None = None):
    """An Arrow table from flat dicts. With `schema` (name -> bool|int|float|str): exactly those columns,
    typed, plus `extra` (undeclared keys as a JSON object) and `store__issues`; without one, the union
    of the keys with types inferred per table (ad hoc use only: parts may then disagree)."""
    import pyarrow as pa

    if schema is None:
        keys: dict[str, None] = {}
        for r in rows:
            for k in r:
                keys.setdefault(k, None)
        arrays, fields = [], []
        for k in keys:
            values = [r.get(k) for r in rows]
            typ, conv = _column_type(values)
            arrays.append(pa.array([None if v is None else conv(v) for v in values], type=typ))
            fields.append(pa.field(k, typ))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    cols: dict[str, list[Any]] = {k: [] for k in schema}
    extras: list[str | None] = []
    issues: list[str | None] = []
    items = list(schema.items())
    for r in rows:
        extra: dict[str, Any] = {}
        problems: list[str] = []
        get = r.get
        for k, typ in items:
            v = get(k)
            t = type(v)
            # the values signal steps write already have their declared type: stored as they are (what
            # `coerce` returns for them); anything else goes through `coerce`
            if v is None or (t is float and typ == "float" and v == v) or (t is bool and typ == "bool") or (
                    t is int and typ == "int" and INT64_MIN <= v <= INT64_MAX):
                cols[k].append(v)
                continue
            v, problem = coerce(v, typ)
            cols[k].append(v)
            if problem:
                problems.append(f"{k}:{problem}")
        for k, v in r.items():
            if k not in schema and k not in (EXTRA_COLUMN, ISSUES_COLUMN) and v is not None:
                extra[clean_str(str(k))] = v
        extras.append(clean_str(json.dumps(extra, sort_keys=True, default=_json_default)) if extra else None)
        issues.append(",".join(problems) or None)
    arrays = [pa.array(cols[k], type=arrow_type(t)) for k, t in schema.items()]
    fields = [pa.field(k, arrow_type(t)) for k, t in schema.items()]
    arrays += [pa.array(extras, type=pa.string()), pa.array(issues, type=pa.string())]
    fields += [pa.field(EXTRA_COLUMN, pa.string()), pa.field(ISSUES_COLUMN, pa.string())]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def full_schema(schema: Mapping[str, str]) -> dict[str, str]:
    """The declared schema with the core columns first (id, text, source)."""
    return {"id": "str", "text": "str", "source": "str", **{k: v for k, v in schema.items() if k not in CORE_COLUMNS}}


def document_to_row(doc: Document) -> dict[str, Any]:
    row = {"id": doc.id, "text": doc.text, "source": doc.metadata.get("source")}
    for k, v in doc.metadata.items():
        if k in row:
            continue
        row[k] = v
    return row


def signals_frame(docs: Iterable[Document]):
    """A polars frame of the documents' scalar signals (no text), as the decision functions take it."""
    return documents_frame(docs)


def row_to_document(row: dict[str, Any]) -> Document:
    """A stored row back as a Document: null signals are absent, `extra` keys are restored."""
    meta = {k: v for k, v in row.items() if k not in ("id", "text", EXTRA_COLUMN) and v is not None}
    extra = row.get(EXTRA_COLUMN)
    if extra:
        for k, v in json.loads(extra).items():
            meta.setdefault(k, v)
    return Document(text=row.get("text") or "", id=str(row["id"]), metadata=meta)


def atomic_write_table(table, path: Path, *, compression: str = "zstd") -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression=compression)
    os.replace(tmp, path)


class SignalStoreWriter(PipelineStep):
    """Write every document (kept, rejected, whatever its source) with its signals. Passes docs on."""

    name = "signal store writer"
    type = "💾 - STORE"

    def __init__(self, output_folder: str, *, rows_per_part: int = 2000, text_bytes_per_part: int = 1 << 20,
                 schema: Mapping[str, str] | None = None):
        super().__init__()
        self.output_folder = str(output_folder)
        self.rows_per_part = rows_per_part
        # a part also closes once its texts reach this many characters, so a few huge pages (a
        # single-page API manual) never hold thousands of rows of text in a worker's memory; 1 Mi characters
        # (was 16, then 4): writing a part briefly takes about 8x its text (Arrow conversion, then Parquet
        # encoding: +30 MiB for a 3.7 Mi-character part), and a signals worker's last flush was its peak on
        # bench_e2e's set-I documentation (285 -> 314 MiB); outputs identical cell by cell
        self.text_bytes_per_part = text_bytes_per_part
        self.schema = None if schema is None else full_schema(schema)

    def _flush(self, rows: list[dict], rank: int, part: int) -> None:
        if not rows:
            return
        table = rows_to_table(rows, self.schema)
        if ISSUES_COLUMN in table.column_names:
            n_issues = len(rows) - table.column(ISSUES_COLUMN).null_count
            if n_issues:
                import pyarrow.compute as pc  # only here: its import costs a worker about 0.1 CPU-s

                self.stat_update("documents_with_coerced_signals", value=n_issues)
                for problem in pc.unique(table.column(ISSUES_COLUMN).drop_null()).to_pylist():
                    for p in problem.split(","):
                        self.stat_update(f"coerced/{p}")
        atomic_write_table(table, Path(self.output_folder) / f"part-{rank:05d}-{part:05d}.parquet")
        self.stat_update("parts_written")

    def _write_schema(self) -> None:
        if self.schema is None:
            return
        path = Path(self.output_folder) / SCHEMA_FILE
        payload = json.dumps({"version": 1, "signals": self.schema, "extra": EXTRA_COLUMN, "issues": ISSUES_COLUMN},
                             indent=1)  # in column order
        if path.is_file() and path.read_text() == payload:
            return
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(payload)
        os.replace(tmp, path)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        folder = Path(self.output_folder)
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"part-{rank:05d}-*.parquet"):
            old.unlink()
        self._write_schema()
        rows: list[dict] = []
        part = text_chars = 0
        for doc in data or ():
            rows.append(document_to_row(doc))
            text_chars += len(doc.text or "")
            self.stat_update("documents_stored")
            if len(rows) >= self.rows_per_part or text_chars >= self.text_bytes_per_part:
                with self.track_time("batch"):
                    self._flush(rows, rank, part)
                rows, part, text_chars = [], part + 1, 0
            yield doc
        with self.track_time("batch"):
            self._flush(rows, rank, part)


def list_parts(folder: str | Path) -> list[Path]:
    return sorted(Path(folder).glob("part-*.parquet"))


class SignalStoreReader(PipelineStep):
    """Read the signal store of a run (this run's, or an earlier one's for re-tiering)."""

    name = "signal store reader"
    type = "📖 - READER"

    def __init__(self, folder: str, *, batch_rows: int = 1024, by_writer_rank: bool = False,
                 columns: list[str] | None = None):
        """`by_writer_rank`: task r reads exactly the parts that rank r of the signals phase wrote, in
        order (the dedup phase runs with the signals phase's task count, so positions stay keys).
        `columns`: read only these (None: all)."""
        super().__init__()
        self.folder = str(folder)
        self.batch_rows = batch_rows
        self.by_writer_rank = by_writer_rank
        self.columns = None if columns is None else list(columns)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow.parquet as pq

        if data:
            yield from data
        if self.by_writer_rank:
            parts = sorted(Path(self.folder).glob(f"part-{rank:05d}-*.parquet"))
        else:
            parts = list_parts(self.folder)[rank::world_size]
        for path in parts:
            pf = pq.ParquetFile(path)
            cols = None if self.columns is None else [c for c in self.columns if c in pf.schema_arrow.names]
            for batch in pf.iter_batches(batch_size=self.batch_rows, columns=cols):
                for row in batch.to_pylist():
                    self.stat_update("documents")
                    yield row_to_document(row)


def read_schema(folder: str | Path) -> dict[str, str] | None:
    """The declared schema of a store (`_schema.json`), or None for a store written without one."""
    p = Path(folder) / SCHEMA_FILE
    return dict(json.loads(p.read_text())["signals"]) if p.is_file() else None


def read_signals(folder: str | Path, columns: Iterable[str] | None = None):
    """All parts of a signal store as one polars DataFrame (a typed store is scanned as one dataset;
    an older, untyped one is concatenated with missing columns filled with nulls)."""
    import polars as pl

    parts = list_parts(folder)
    if not parts:
        return pl.DataFrame()
    if read_schema(folder) is not None:
        lf = pl.scan_parquet([str(p) for p in parts])
        if columns is not None:
            names = lf.collect_schema().names()
            lf = lf.select([c for c in columns if c in names])
        return lf.collect()
    frames = []
    for p in parts:
        df = pl.read_parquet(p)
        if columns is not None:
            df = df.select([c for c in columns if c in df.columns])
        frames.append(df)
    return pl.concat(frames, how="diagonal_relaxed")
