"""Tokenization-ready Parquet shards (`ShardWriter`) and the record of excluded documents (`ExclusionWriter`).

Schema, layout and guarantees are documented in docs/output_schema.md. In short:

* one fixed schema for every shard of a run (``shard_schema(signal_schema)``): core columns, ``signals``
  as a typed struct with one field per signal the run's steps declare (null where a document has none,
  so shards of different sources read as one dataset) and ``provenance`` as a JSON-object string;
* hive layout ``<output>/source=<s>/tier=<t>/language=<l>/shard-<rank>-<k>.parquet``;
* deterministic, seeded shuffle: documents are ordered by ``xxh3_64(f"{seed}:{id}")`` (ties by a
  hash of the text) within each (rank, partition), then cut into shards in that order, so the
  same input gives byte-identical shards whatever order the documents arrived in;
* a shard holds at most ``max_shard_bytes`` (uncompressed row bytes, see ``row_nbytes``) and at
  most ``max_shard_tokens`` tokens; a single document larger than a limit is written alone;
* row groups of at most ``row_group_rows`` rows and ``row_group_bytes`` bytes, zstd pages;
* atomic: a shard is written as ``.shard-....parquet.tmp`` (a dot name that globbing ``*.parquet``
  and pyarrow/HF dataset discovery ignore), fsynced, then ``os.replace``d to its final name;
* per-rank names: rank r only ever writes/deletes ``shard-<r:05d>-*``; a rerun of a rank first
  removes that rank's earlier shards and leftover temporary files, so reruns are idempotent.

Documents are staged per (rank, partition) in uncompressed Arrow IPC files while they stream in,
and sorted/cut/written when the step closes; the staging files are memory-mapped, so a rank
never needs its whole output in RAM (only one shard at a time).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.output.normalize import sanitize_text
from assay.stages.output.tokens import count_method, count_tokens

SCHEMA_VERSION = "1"
PARTITION_KEYS = ("source", "tier", "language")
DEFAULT_LANGUAGE_KEYS = ("lang__code", "code__language")
REASON_KEY = "decision__reason"
UNKNOWN = "unknown"
UNDETERMINED_LANGUAGE = "und"
# fixed overhead per row in the byte budget: offsets, ints, small strings, validity bits
ROW_OVERHEAD_BYTES = 64

_CORE_META = {"source", "tier", "url", "path", REASON_KEY, "decision__stage", "reject_reason"}
_SAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def signals_struct(signal_schema: dict[str, str] | None):
    """The Arrow struct of the ``signals`` column: one field per declared signal (sorted by name)."""
    import pyarrow as pa

    from assay.stages.common.store import arrow_type

    fields = [pa.field(k, arrow_type(t)) for k, t in sorted((signal_schema or {}).items())]
    return pa.struct(fields or [pa.field("none", pa.bool_())])


def shard_schema(signal_schema: dict[str, str] | None = None):
    """The fixed Arrow schema of every output shard of a run (see docs/output_schema.md)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("language", pa.string(), nullable=False),
            pa.field("tier", pa.string(), nullable=False),
            pa.field("url_or_path", pa.string()),
            pa.field("token_count", pa.int64(), nullable=False),
            pa.field("n_chars", pa.int64(), nullable=False),
            pa.field("n_bytes", pa.int64(), nullable=False),
            pa.field("signals", signals_struct(signal_schema), nullable=False),
            pa.field("provenance", pa.string(), nullable=False),
        ]
    )


def exclusion_schema(signal_schema: dict[str, str] | None = None):
    """The fixed Arrow schema of exclusion files."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("stage", pa.string(), nullable=False),
            pa.field("duplicate_of", pa.string()),
            pa.field("url_or_path", pa.string()),
            pa.field("language", pa.string(), nullable=False),
            pa.field("tier", pa.string()),
            pa.field("n_chars", pa.int64(), nullable=False),
            pa.field("n_bytes", pa.int64(), nullable=False),
            pa.field("token_count", pa.int64(), nullable=False),
            pa.field("signals", signals_struct(signal_schema), nullable=False),
            pa.field("text", pa.string()),
        ]
    )


# ------------------------------------------------------------------------------------------ helpers


def partition_value(value: Any, default: str = UNKNOWN) -> str:
    """A value safe as a hive path segment: ``[A-Za-z0-9_.+-]`` only, others -> ``_``; empty -> default."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return default
    s = _SAFE.sub("_", str(value).strip())
    return s or default


def _json_scalar(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _json_dumps(d: dict[str, Any]) -> str:
    return json.dumps({k: _json_scalar(v) for k, v in sorted(d.items())}, ensure_ascii=False, allow_nan=False)


def split_metadata(metadata: dict[str, Any], language_key: str | None) -> tuple[dict, dict]:
    """(signals, provenance): namespaced ``a__b`` keys are signals, the rest is provenance.

    Keys stored in core columns and keys whose value is None are left out."""
    signals, prov = {}, {}
    for k, v in metadata.items():
        if k in _CORE_META or k == language_key or v is None:
            continue
        if isinstance(v, (list, dict, tuple)):
            v = json.dumps(v, sort_keys=True, default=str)
        if "__" in k:
            signals[k] = v
        else:
            prov[k] = v
    return signals, prov


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    return "str"


class SignalTypes:
    """The types of the ``signals`` struct: declared (the run's schema) or, without one, inferred from
    the values a writer sees (int and float merge to float, other mixes to str)."""

    def __init__(self, declared: dict[str, str] | None):
        self.declared = dict(declared) if declared else None
        self.seen: dict[str, str] = {}

    def split(self, signals: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(signals of the struct, undeclared ones: they go to provenance, so nothing is dropped)."""
        if self.declared is None:
            for k, v in signals.items():
                if v is None:
                    continue
                old, new = self.seen.get(k), _kind(v)
                if old is None or old == new:
                    self.seen[k] = new
                elif {old, new} <= {"int", "float"}:
                    self.seen[k] = "float"
                else:
                    self.seen[k] = "str"
            return signals, {}
        typed = {k: v for k, v in signals.items() if k in self.declared}
        return typed, {k: v for k, v in signals.items() if k not in self.declared}

    @property
    def schema(self) -> dict[str, str]:
        return self.declared if self.declared is not None else dict(self.seen)

    def struct_array(self, values: list[dict[str, Any] | str]):
        """The typed ``signals`` struct array of dicts (or their JSON strings)."""
        import pyarrow as pa

        from assay.stages.common.store import coerce

        schema = self.schema
        rows = []
        for v in values:
            d = json.loads(v) if isinstance(v, str) else (v or {})
            rows.append({k: coerce(d.get(k), t)[0] for k, t in schema.items()} if schema else {"none": None})
        return pa.array(rows, type=signals_struct(schema))


def doc_language(metadata: dict[str, Any], language_keys: Iterable[str]) -> tuple[str, str | None]:
    for k in language_keys:
        v = metadata.get(k)
        if v not in (None, ""):
            return partition_value(v, UNDETERMINED_LANGUAGE), k
    return UNDETERMINED_LANGUAGE, None


def shuffle_key(doc_id: str, seed: int) -> int:
    """The seeded position of a document in the shard order (xxh3_64 of ``"{seed}:{id}"``)."""
    import xxhash

    return xxhash.xxh3_64_intdigest(f"{seed}:{doc_id}".encode("utf-8"))


def row_nbytes(text_bytes: int, *others: str | None) -> int:
    """The byte budget of one row: UTF-8 text + other string columns + ``ROW_OVERHEAD_BYTES``."""
    return text_bytes + sum(len(o.encode("utf-8", "surrogatepass")) for o in others if o) + ROW_OVERHEAD_BYTES


def _fsync_replace(tmp: Path, final: Path) -> None:
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, final)
    try:  # make the rename itself durable
        dfd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass


def _local_folder(output_folder: Any) -> Path:
    s = str(output_folder)
    if "://" in s and not s.startswith("file://"):
        raise ValueError(
            f"{type(output_folder).__name__}: output_folder must be a local path (got {s!r}); "
            "write locally and sync, so that shard renames stay atomic"
        )
    return Path(s.removeprefix("file://"))


def _int_column(table, name: str):
    """``table.column(name).to_numpy()`` of an integer column without nulls, read from its data buffer.
    pyarrow's ``to_numpy`` converts through its pandas layer, which imports pandas (about 47 MiB in the
    process that writes the shards, which needs pandas for nothing else); a column with nulls or another
    type still goes through ``to_numpy``."""
    import numpy as np
    import pyarrow as pa

    arr = table.column(name).combine_chunks()
    if arr.null_count or not pa.types.is_integer(arr.type):
        return table.column(name).to_numpy()
    dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(arr.type) else 'u'}{arr.type.bit_width // 8}")
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _write_parquet_atomically(table, final: Path, *, row_group_rows: int, row_group_bytes: int,
                              metadata: dict[str, str], dictionary_columns: list[str],
                              statistics_columns: list[str], compression_level: int | None = None,
                              row_sizes: list[int] | None = None) -> None:
    """Write ``table`` to ``final`` through a dot-named temporary file, in bounded row groups."""
    import pyarrow.parquet as pq

    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp")
    schema = table.schema.with_metadata({**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}})
    table = table.replace_schema_metadata(schema.metadata)
    with pq.ParquetWriter(
        tmp,
        schema,
        compression="zstd",
        compression_level=compression_level,
        use_dictionary=dictionary_columns,
        write_statistics=statistics_columns,
        write_page_index=True,
    ) as w:
        for start, stop in _row_group_bounds(table, row_group_rows, row_group_bytes, row_sizes):
            w.write_table(table.slice(start, stop - start), row_group_size=stop - start)
    _fsync_replace(tmp, final)


def _row_group_bounds(table, max_rows: int, max_bytes: int, sizes: list[int] | None = None) -> list[tuple[int, int]]:
    n = table.num_rows
    if n == 0:
        return []
    if sizes is not None:
        pass
    elif "n_bytes" in table.column_names:
        sizes = [b + ROW_OVERHEAD_BYTES for b in table.column("n_bytes").to_pylist()]
    else:
        sizes = [0] * n
    bounds, start, acc = [], 0, 0
    for i, s in enumerate(sizes):
        if i > start and (i - start >= max_rows or acc + s > max_bytes):
            bounds.append((start, i))
            start, acc = i, 0
        acc += s
    bounds.append((start, n))
    return bounds


# --------------------------------------------------------------------------------------- ShardWriter


class ShardWriter(PipelineStep):
    """Write kept documents to hive-partitioned, seeded-shuffled, size-bounded zstd Parquet shards.

    A document is written when ``metadata[reason_key]`` is None (kept) and it has no
    ``reject_reason``; every document is passed on unchanged (so an ExclusionWriter can follow).

    Args:
        output_folder: local directory (the run's ``output/``).
        max_shard_bytes: upper bound of a shard's uncompressed row bytes (``row_nbytes``).
        max_shard_tokens: optional upper bound of a shard's tokens.
        row_group_rows / row_group_bytes: row-group bounds (streaming readers read one row group at a time).
        partition_by: subset of ``["source", "tier", "language"]``, in path order.
        seed: shuffle seed.
        tokenizer_path: `tokenizers` JSON for exact ``token_count``; None -> estimate.
        language_keys: metadata keys tried in order for the ``language`` column.
        reason_key: metadata key holding the exclusion reason (None when kept).
        signal_schema: the run's declared signals (name -> bool|int|float|str) for the typed ``signals``
            struct; None infers the types from the documents this writer sees (ad hoc use).
        staging_dir: where staging files go (default: ``<output_folder>/.staging``).
        staging_buffer_bytes: buffered bytes before staging rows are flushed to disk.
        compression_level: zstd level (None: pyarrow's default).
    """

    name = "📦 Shard writer"
    type = "💽 - WRITER"

    def __init__(
        self,
        output_folder: str,
        *,
        max_shard_bytes: int = 256 * 1024 * 1024,
        max_shard_tokens: int | None = None,
        row_group_rows: int = 2048,
        row_group_bytes: int = 64 * 1024 * 1024,
        partition_by: list[str] = list(PARTITION_KEYS),
        seed: int = 0,
        tokenizer_path: str | None = None,
        language_keys: list[str] = list(DEFAULT_LANGUAGE_KEYS),
        reason_key: str = REASON_KEY,
        signal_schema: dict[str, str] | None = None,
        staging_dir: str | None = None,
        staging_buffer_bytes: int = 64 * 1024 * 1024,
        compression_level: int | None = None,
    ):
        super().__init__()
        bad = [p for p in partition_by if p not in PARTITION_KEYS]
        if bad:
            raise ValueError(f"partition_by: unknown keys {bad}; allowed: {list(PARTITION_KEYS)}")
        if max_shard_bytes < 1 or (max_shard_tokens is not None and max_shard_tokens < 1):
            raise ValueError("max_shard_bytes / max_shard_tokens must be positive")
        self.output_folder = str(_local_folder(output_folder))
        self.max_shard_bytes = int(max_shard_bytes)
        self.max_shard_tokens = None if max_shard_tokens is None else int(max_shard_tokens)
        self.row_group_rows = int(row_group_rows)
        self.row_group_bytes = int(row_group_bytes)
        self.partition_by = list(partition_by)
        self.seed = int(seed)
        self.tokenizer_path = str(tokenizer_path) if tokenizer_path else None
        self.language_keys = list(language_keys)
        self.reason_key = reason_key
        self.signal_schema = dict(signal_schema) if signal_schema else None
        self._types = SignalTypes(self.signal_schema)
        self.staging_dir = staging_dir
        self.staging_buffer_bytes = int(staging_buffer_bytes)
        self.compression_level = compression_level

    # -- per-document -------------------------------------------------------------------------
    def _row(self, doc: Document) -> tuple[str, dict[str, Any]]:
        md = doc.metadata
        text = doc.text or ""
        try:  # one pass: byte length, and a check that the text is valid UTF-8 (no lone surrogates)
            n_bytes = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            text = sanitize_text(text)
            n_bytes = len(text.encode("utf-8"))
        language, lang_key = doc_language(md, self.language_keys)
        source = partition_value(md.get("source"))
        tier = partition_value(md.get("tier"))
        signals, prov = split_metadata(md, lang_key)
        signals, undeclared = self._types.split(signals)
        signals_json, prov_json = _json_dumps(signals), _json_dumps({**prov, **undeclared})
        url_or_path = md.get("url") or md.get("path")
        url_or_path = None if url_or_path is None else sanitize_text(str(url_or_path))
        doc_id = sanitize_text(str(doc.id))
        values = {"source": source, "tier": tier, "language": language}
        part = "/".join(f"{k}={values[k]}" for k in self.partition_by)
        import xxhash

        row = {
            "id": doc_id,
            "text": text,
            "source": source,
            "language": language,
            "tier": tier,
            "url_or_path": url_or_path,
            "token_count": 0,  # filled per batch at flush
            "n_chars": len(text),
            "n_bytes": n_bytes,
            "signals": signals_json,
            "provenance": prov_json,
            "_key": shuffle_key(doc_id, self.seed),
            "_tie": xxhash.xxh3_64_intdigest(text.encode("utf-8")),
            "_rowbytes": row_nbytes(n_bytes, doc_id, url_or_path, signals_json, prov_json, source, language, tier),
        }
        return part, row

    # -- staging ------------------------------------------------------------------------------
    def _staging_schema(self):
        import pyarrow as pa

        s = shard_schema()
        s = s.set(s.get_field_index("signals"), pa.field("signals", pa.string(), nullable=False))
        for name, typ in (("_key", pa.uint64()), ("_tie", pa.uint64()), ("_rowbytes", pa.int64())):
            s = s.append(pa.field(name, typ, nullable=False))
        return s

    def _flush(self, buffers: dict[str, list[dict]], writers: dict, staging: Path) -> None:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        parts = [p for p, rows in buffers.items() if rows]
        if not parts:
            return
        all_rows = [r for p in parts for r in buffers[p]]
        with self.track_time():
            counts = count_tokens([r["text"] for r in all_rows], self.tokenizer_path)
        for r, c in zip(all_rows, counts):
            r["token_count"] = c
            self.stat_update("tokens", f"tokens/{r['source']}", value=c)
        schema = self._staging_schema()
        for p in parts:
            if p not in writers:
                path = staging / f"{len(writers):06d}.arrow"
                writers[p] = (path, ipc.new_file(str(path), schema))
            writers[p][1].write_batch(pa.RecordBatch.from_pylist(buffers[p], schema=schema))
            buffers[p] = []

    # -- cutting and writing ------------------------------------------------------------------
    def plan_shards(self, rowbytes: list[int], tokens: list[int]) -> list[tuple[int, int]]:
        """Cut a sequence of rows (already in shard order) into [start, stop) shards within the limits."""
        bounds, start, acc_b, acc_t = [], 0, 0, 0
        for i, (b, t) in enumerate(zip(rowbytes, tokens)):
            over = acc_b + b > self.max_shard_bytes or (
                self.max_shard_tokens is not None and acc_t + t > self.max_shard_tokens
            )
            if i > start and over:
                bounds.append((start, i))
                start, acc_b, acc_t = i, 0, 0
            acc_b += b
            acc_t += t
        if start < len(rowbytes):
            bounds.append((start, len(rowbytes)))
        return bounds

    def _write_partition(self, part: str, staged: Path, rank: int) -> list[Path]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.ipc as ipc

        with pa.memory_map(str(staged), "r") as source:
            table = ipc.open_file(source).read_all()
            key = _int_column(table, "_key")
            tie = _int_column(table, "_tie")
            order = np.lexsort((tie, key))
            rowbytes = _int_column(table, "_rowbytes")[order]
            tokens = _int_column(table, "token_count")[order]
            written = []
            meta = {
                "assay.schema_version": SCHEMA_VERSION,
                "assay.token_count_method": count_method(self.tokenizer_path),
                "assay.seed": str(self.seed),
                "assay.partition": part,
            }
            final_schema = shard_schema(self._types.schema)
            core = final_schema.names
            for k, (start, stop) in enumerate(self.plan_shards(rowbytes.tolist(), tokens.tolist())):
                shard = table.take(pa.array(order[start:stop])).select(core)
                i = core.index("signals")
                shard = shard.set_column(i, final_schema.field("signals"),
                                         self._types.struct_array(shard.column("signals").to_pylist()))
                shard = shard.cast(final_schema)
                final = Path(self.output_folder) / part / f"shard-{rank:05d}-{k:05d}.parquet"
                meta_k = {**meta, "assay.row_bytes": str(int(rowbytes[start:stop].sum()))}
                _write_parquet_atomically(
                    shard, final, row_group_rows=self.row_group_rows, row_group_bytes=self.row_group_bytes,
                    metadata=meta_k, dictionary_columns=["source", "language", "tier"],
                    statistics_columns=["id", "source", "language", "tier", "token_count", "n_chars", "n_bytes"],
                    compression_level=self.compression_level, row_sizes=rowbytes[start:stop].tolist(),
                )
                written.append(final)
                self.stat_update("shards")
            del table
        return written

    def _remove_rank_files(self, rank: int) -> None:
        root = Path(self.output_folder)
        if not root.exists():
            return
        for pattern in (f"shard-{rank:05d}-*.parquet", f".shard-{rank:05d}-*.parquet.tmp"):
            for old in root.rglob(pattern):
                old.unlink()

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        root = Path(self.output_folder)
        root.mkdir(parents=True, exist_ok=True)
        self._remove_rank_files(rank)
        base = Path(self.staging_dir) if self.staging_dir else root / ".staging"
        try:
            for old in list(base.glob(f"rank-{rank:05d}-*")):
                shutil.rmtree(old, ignore_errors=True)  # left by a killed earlier attempt of this rank
        except FileNotFoundError:  # no staging folder yet (or another rank's cleanup removed it)
            pass
        for attempt in range(5):  # another rank may remove the (empty) base between mkdir and mkdtemp
            base.mkdir(parents=True, exist_ok=True)
            try:
                staging = Path(tempfile.mkdtemp(prefix=f"rank-{rank:05d}-", dir=base))
                break
            except FileNotFoundError:
                if attempt == 4:
                    raise
        buffers: dict[str, list[dict]] = {}
        writers: dict[str, tuple[Path, Any]] = {}
        buffered = 0
        try:
            for doc in data or ():
                md = doc.metadata
                if md.get(self.reason_key) is None and not md.get("reject_reason"):
                    with self.track_time():
                        part, row = self._row(doc)
                        buffers.setdefault(part, []).append(row)
                        buffered += row["_rowbytes"]
                        self.stat_update("documents")
                        self.stat_update(f"documents/{row['source']}")
                        self.update_doc_stats(doc)
                    if buffered >= self.staging_buffer_bytes:
                        self._flush(buffers, writers, staging)
                        buffered = 0
                else:
                    self.stat_update("passed_excluded")
                yield doc
            self._flush(buffers, writers, staging)
            for _, w in writers.values():
                w.close()
            for part in sorted(writers):
                self._write_partition(part, writers[part][0], rank)
        finally:
            for _, w in writers.values():
                try:
                    w.close()
                except Exception:
                    pass
            shutil.rmtree(staging, ignore_errors=True)
            if not self.staging_dir:  # the default `<output>/.staging`: remove it once empty (no other rank)
                try:
                    base.rmdir()
                except OSError:
                    pass
            # a shared `staging_dir` (the pipeline's `<run>/.staging/decide`) is never removed by a rank:
            # another rank may be listing it; the finalize phase removes it

    def write_documents(self, docs: Iterable[Document], rank: int = 0) -> None:
        """Convenience for notebooks/tests: write ``docs`` as rank ``rank`` (consumes the pass-through)."""
        for _ in self.run(iter(docs), rank=rank):
            pass


# ------------------------------------------------------------------------------------ ExclusionWriter


STAGE_KEY = "decision__stage"


def exclusion_stage(reason: str, metadata: dict[str, Any]) -> str:
    """The funnel stage of an exclusion, as the decision compiler gave it (``decision__stage``): reject |
    rules | tier | dedup | rebalance. Without a decision (an exclusion writer of a filter), an earlier
    stage's ``reject_reason`` is ``reject`` and anything else is ``filter``: never guessed from the spelling."""
    stage = metadata.get(STAGE_KEY)
    if stage:
        return str(stage)
    if metadata.get("reject_reason") and reason == metadata.get("reject_reason"):
        return "reject"
    return "filter"


class ExclusionWriter(PipelineStep):
    """Record excluded documents (one row each, with reason) to ``<output>/part-<rank>-<k>.parquet``.

    Use it as a pipeline step after the decision step (it writes documents whose
    ``metadata[reason_key]`` or ``reject_reason`` is set and passes every document on), or as a
    datatrove ``exclusion_writer`` of a filter (``with writer: writer.write(doc, rank)``; the
    filter's ``filter_reason`` is used when no other reason is set). Files are written atomically.

    Args:
        output_folder: local directory (the run's ``excluded/``).
        include_text: also store the text (off by default: excluded text stays in the signal store).
        tokenizer_path: exact token counts (default: estimate, see assay.stages.output.tokens).
        rows_per_file: rows per exclusion file.
    """

    name = "🗑️ Exclusion writer"
    type = "💽 - WRITER"

    def __init__(
        self,
        output_folder: str,
        *,
        include_text: bool = False,
        tokenizer_path: str | None = None,
        rows_per_file: int = 100_000,
        language_keys: list[str] = list(DEFAULT_LANGUAGE_KEYS),
        reason_key: str = REASON_KEY,
        signal_schema: dict[str, str] | None = None,
    ):
        super().__init__()
        self.output_folder = str(_local_folder(output_folder))
        self.signal_schema = dict(signal_schema) if signal_schema else None
        self._types = SignalTypes(self.signal_schema)
        self.include_text = include_text
        self.tokenizer_path = str(tokenizer_path) if tokenizer_path else None
        self.rows_per_file = int(rows_per_file)
        self.language_keys = list(language_keys)
        self.reason_key = reason_key
        self._rows: list[dict] = []
        self._pending: list[dict] = []
        self._file_index = 0
        self._rank: int | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_rows"] = []
        state["_pending"] = []
        return state

    def _reason(self, md: dict[str, Any]) -> str | None:
        return md.get(self.reason_key) or md.get("reject_reason") or md.get("filter_reason")

    def _row(self, doc: Document, reason: str) -> dict[str, Any]:
        md = doc.metadata
        text = doc.text or ""
        try:  # one pass: byte length, and a check that the text is valid UTF-8 (no lone surrogates)
            n_bytes = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            text = sanitize_text(text)
            n_bytes = len(text.encode("utf-8"))
        language, lang_key = doc_language(md, self.language_keys)
        signals, _ = split_metadata(md, lang_key)
        signals, _ = self._types.split(signals)
        stage = exclusion_stage(reason, md)
        dup = None
        if stage == "dedup":
            dup = md.get("dedup__duplicate_of") or md.get("dedup__cluster_id")
        url_or_path = md.get("url") or md.get("path")
        tier = md.get("tier")
        return {
            "id": sanitize_text(str(doc.id)),
            "source": partition_value(md.get("source")),
            "reason": str(reason),
            "stage": stage,
            "duplicate_of": None if dup is None else str(dup),
            "url_or_path": None if url_or_path is None else sanitize_text(str(url_or_path)),
            "language": language,
            "tier": None if tier is None else str(tier),
            "n_chars": len(text),
            "n_bytes": len(text.encode("utf-8")),
            "token_count": 0,
            "signals": _json_dumps(signals),  # typed into the struct at flush
            "text": text if self.include_text else None,
            "_text": text,
        }

    # DiskWriter-compatible protocol (datatrove filters call these) ------------------------------
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def write(self, document: Document, rank: int = 0, **kwargs) -> None:
        if self._rank is None:
            self._start(rank)
        reason = self._reason(document.metadata) or "unspecified"
        row = self._row(document, reason)
        self._rows.append(row)
        self._pending.append(row)
        self.stat_update("documents", f"excluded/{reason}", f"excluded_source/{row['source']}")
        if len(self._pending) >= 512:
            self._count_pending()
        if len(self._rows) >= self.rows_per_file:
            self._flush()

    def close(self) -> None:
        if self._rank is not None:
            self._flush()
        self._rank = None

    # internals ----------------------------------------------------------------------------------
    def _start(self, rank: int) -> None:
        self._rank = rank
        self._file_index = 0
        self._rows = []
        self._pending = []
        root = Path(self.output_folder)
        root.mkdir(parents=True, exist_ok=True)
        for pattern in (f"part-{rank:05d}-*.parquet", f".part-{rank:05d}-*.parquet.tmp"):
            for old in root.glob(pattern):
                old.unlink()

    def _count_pending(self) -> None:
        """Token counts in batches; the text is then dropped from memory unless it is stored."""
        if not self._pending:
            return
        texts = [r.pop("_text") for r in self._pending]
        counts = count_tokens(texts, self.tokenizer_path)
        for r, c in zip(self._pending, counts):
            r["token_count"] = c
        self._pending = []

    def _flush(self) -> None:
        import pyarrow as pa

        self._count_pending()
        if not self._rows:
            return
        schema = exclusion_schema(self._types.schema)
        signals = self._types.struct_array([r.pop("signals") for r in self._rows])
        plain = schema.remove(schema.get_field_index("signals"))
        table = pa.Table.from_pylist(self._rows, schema=plain)
        table = table.add_column(schema.get_field_index("signals"), schema.field("signals"), signals)
        final = Path(self.output_folder) / f"part-{self._rank:05d}-{self._file_index:05d}.parquet"
        _write_parquet_atomically(
            table, final, row_group_rows=8192, row_group_bytes=64 * 1024 * 1024,
            metadata={"assay.schema_version": SCHEMA_VERSION,
                      "assay.token_count_method": count_method(self.tokenizer_path)},
            dictionary_columns=["source", "reason", "stage", "language", "tier"],
            statistics_columns=["id", "source", "reason", "stage", "n_chars", "token_count"],
        )
        self._file_index += 1
        self._rows = []

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        self._start(rank)
        try:
            for doc in data or ():
                reason = self._reason(doc.metadata)
                if reason:
                    with self.track_time():
                        self.write(doc, rank)
                yield doc
        finally:
            self.close()


def list_shards(output_folder: str | Path) -> list[Path]:
    """All finished shards under an output folder (temporary files are never listed)."""
    return sorted(Path(output_folder).rglob("shard-*.parquet"))


def open_dataset(output_folder: str | Path):
    """The shards as one ``pyarrow.dataset`` (partition columns read from the files, not re-inferred)."""
    import pyarrow.dataset as ds

    import pyarrow.parquet as pq

    files = [str(p) for p in list_shards(output_folder)]
    schema = pq.read_schema(files[0]).remove_metadata() if files else shard_schema()
    return ds.dataset(files, schema=schema, format="parquet")
