"""The signal store: every document of a run with all its signals, as Parquet part files.

Written at the end of the signals phase, read by the decide phase (and by a re-tier run, and by
notebooks). Each rank writes `part-<rank>-<k>.parquet`; the schema of a part is the union of the keys
of its documents, so sources with different signals coexist (readers use `union_by_name`).
Parts are written to a temporary name and renamed, so a killed task never leaves a part that
looks whole; a rank deletes its own earlier parts before writing, so a rerun is idempotent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

CORE_COLUMNS = ("id", "text", "source")


def _column_type(values: list[Any]):
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null(), lambda v: None
    if kinds == {bool}:
        return pa.bool_(), bool
    if kinds <= {int} or kinds <= {int, bool}:
        return pa.int64(), lambda v: None if v is None else int(v)
    if kinds <= {int, float, bool}:
        return pa.float64(), lambda v: None if v is None else float(v)
    if kinds == {str}:
        return pa.string(), str

    def to_text(v: Any) -> str | None:
        if v is None or isinstance(v, str):
            return v
        return json.dumps(v, sort_keys=True, default=str)

    return pa.string(), to_text


def rows_to_table(rows: list[dict[str, Any]]):
    """Build an Arrow table from flat dicts with possibly different keys and mixed scalar types."""
    import pyarrow as pa

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


def document_to_row(doc: Document) -> dict[str, Any]:
    row = {"id": doc.id, "text": doc.text, "source": doc.metadata.get("source")}
    for k, v in doc.metadata.items():
        if k in row:
            continue
        row[k] = v
    return row


def signals_frame(docs: Iterable[Document]):
    """A polars frame of the documents' scalar signals (no text), as the decision functions take it."""
    import polars as pl

    rows = []
    for doc in docs:
        row = document_to_row(doc)
        row.pop("text", None)
        rows.append({k: v for k, v in row.items() if not isinstance(v, (list, dict))})
    return pl.DataFrame(rows, strict=False, infer_schema_length=None)


def row_to_document(row: dict[str, Any]) -> Document:
    meta = {k: v for k, v in row.items() if k not in ("id", "text")}
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

    def __init__(self, output_folder: str, *, rows_per_part: int = 2000):
        super().__init__()
        self.output_folder = str(output_folder)
        self.rows_per_part = rows_per_part

    def _flush(self, rows: list[dict], rank: int, part: int) -> None:
        if not rows:
            return
        table = rows_to_table(rows)
        atomic_write_table(table, Path(self.output_folder) / f"part-{rank:05d}-{part:05d}.parquet")
        self.stat_update("parts_written")

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        folder = Path(self.output_folder)
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"part-{rank:05d}-*.parquet"):
            old.unlink()
        rows: list[dict] = []
        part = 0
        for doc in data or ():
            rows.append(document_to_row(doc))
            self.stat_update("documents_stored")
            if len(rows) >= self.rows_per_part:
                with self.track_time("batch"):
                    self._flush(rows, rank, part)
                rows, part = [], part + 1
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


def read_signals(folder: str | Path, columns: Iterable[str] | None = None):
    """All parts of a signal store as one polars DataFrame (missing columns filled with nulls)."""
    import polars as pl

    parts = list_parts(folder)
    if not parts:
        return pl.DataFrame()
    frames = []
    for p in parts:
        df = pl.read_parquet(p)
        if columns is not None:
            df = df.select([c for c in columns if c in df.columns])
        frames.append(df)
    return pl.concat(frames, how="diagonal_relaxed")
