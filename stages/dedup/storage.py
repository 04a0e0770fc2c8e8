"""On-disk formats of the dedup phases and bounded-memory readers for sorted record files.

Layout (all little-endian, fixed-size records, every `.bin` file sorted by ``h``):

signatures folder (phase 1, one file set per rank):
    sigs/u{unit:03d}/{rank:05d}.bin   records (h: u8 band hash, d: u4 doc index in rank); unit
                                      ``bands`` holds the low 64 bits of the exact content hash
    docs/{rank:05d}.bin               sidecar records (SIDE): priority, date, exact hash (16 B), n_shingles,
                                      length (UTF-8 bytes of the text; format 2, see `read_versioned`)
    docs/{rank:05d}.ids.jsonl         document ids, one JSON string per line (line = doc index)
    meta/{rank:05d}.json              config fingerprint, document count, record format
buckets folder (phase 2):
    edges/u{unit:03d}_p{part:03d}.bin  records (a: u8 key, b: u8 key), one edge per colliding doc
    meta.json                          config fingerprint, signatures folder, index folders
clusters folder (phase 3):
    lookup.jsonl, lookup.parquet       one row per new document in a cluster of size >= 2
    index/                             this run's index for the next runs (see below)
index folder (cross-run):
    u{unit:03d}.bin                    records (h: u8, ref: u8) of every published (kept) doc
    docs.bin, ids.jsonl                INDEX_DOC records (ref, priority, date, exact, length) + ids, same order
    meta.json                          config fingerprint, document count, record format

Document keys (u8) used in edges: ``rank << 32 | idx`` for documents of this run, and
``1 << 63 | index_no << 40 | ref`` for documents of earlier runs' indexes.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

REC = np.dtype([("h", "<u8"), ("d", "<u4")])  # 12 bytes
IDX_REC = np.dtype([("h", "<u8"), ("d", "<u8")])  # 16 bytes
EDGE = np.dtype([("a", "<u8"), ("b", "<u8")])

INDEX_FLAG = np.uint64(1 << 63)
REF_BITS = 40
REF_MASK = np.uint64((1 << REF_BITS) - 1)
MAX_INDEXES = 1 << 22
HASH_SPACE = 1 << 64


def new_doc_keys(rank: int, idx: np.ndarray) -> np.ndarray:
    return (np.uint64(rank) << np.uint64(32)) | idx.astype(np.uint64)


def index_doc_keys(index_no: int, ref: np.ndarray) -> np.ndarray:
    return INDEX_FLAG | (np.uint64(index_no) << np.uint64(REF_BITS)) | ref.astype(np.uint64)


def is_index_key(keys: np.ndarray) -> np.ndarray:
    return (keys & INDEX_FLAG) != 0


def sig_path(unit: int, rank: int) -> str:
    return f"sigs/u{unit:03d}/{rank:05d}.bin"


def read_json(folder, path: str) -> dict[str, Any]:
    with folder.open(path, "rt") as f:
        return json.load(f)


def write_json(folder, path: str, obj: dict[str, Any]) -> None:
    with folder.open(path, "wt") as f:
        json.dump(obj, f, sort_keys=True, indent=1)


class SortedRunReader:
    """Streams a sorted record file window by window (``take_below``), holding at most one read
    chunk beyond the records it returns. Keys of the returned records are built by ``key_fn``."""

    def __init__(self, folder, path: str, dtype: np.dtype, key_fn, chunk_records: int = 1 << 18):
        self.folder = folder
        self.path = path
        self.dtype = dtype
        self.key_fn = key_fn
        self.chunk_bytes = chunk_records * dtype.itemsize
        self.size = folder.size(path)
        if self.size % dtype.itemsize:
            raise ValueError(f"{path}: size {self.size} is not a multiple of the {dtype.itemsize}-byte record")
        self.n_records = self.size // dtype.itemsize
        self._f = folder.open(path, "rb")
        self._buf = np.empty(0, dtype=dtype)
        self._eof = self.size == 0

    def seek_to(self, lo: int) -> None:
        """Skip every record with h < lo (binary search over record positions)."""
        if lo <= 0 or self._eof:
            return
        rs = self.dtype.itemsize
        left, right = 0, self.n_records
        while left < right:
            mid = (left + right) // 2
            self._f.seek(mid * rs)
            h = int(np.frombuffer(self._f.read(8), dtype="<u8")[0])
            if h < lo:
                left = mid + 1
            else:
                right = mid
        self._f.seek(left * rs)
        self._buf = np.empty(0, dtype=self.dtype)
        self._eof = left >= self.n_records

    def _read_chunk(self) -> None:
        data = self._f.read(self.chunk_bytes)
        if len(data) < self.chunk_bytes:
            self._eof = True
        usable = len(data) - len(data) % self.dtype.itemsize
        if usable:
            chunk = np.frombuffer(data[:usable], dtype=self.dtype)
            self._buf = chunk if self._buf.size == 0 else np.concatenate([self._buf, chunk])

    def take_below(self, hi: int | None) -> tuple[np.ndarray, np.ndarray]:
        """(h, keys) of the next records with h < hi (all remaining when hi is None)."""
        while not self._eof and (hi is None or self._buf.size == 0 or int(self._buf["h"][-1]) < hi):
            self._read_chunk()
        if hi is None or hi >= HASH_SPACE:
            cut = self._buf.size
        else:
            cut = int(np.searchsorted(self._buf["h"], np.uint64(hi), side="left"))
        out, self._buf = self._buf[:cut], self._buf[cut:]
        return out["h"].copy(), self.key_fn(out["d"])

    def close(self) -> None:
        self._f.close()


def window_bounds(lo: int, hi: int, n_records: int, max_records: int) -> list[int]:
    """Upper bounds of equal hash-range windows so that each holds ~max_records (hashes are uniform)."""
    n_windows = max(1, -(-n_records // max_records))
    return [lo + (hi - lo) * (i + 1) // n_windows for i in range(n_windows)]


def group_edges(h: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Star edges (first member -> every other member) of each group of equal ``h``; edges between
    two index documents are dropped (they are already published)."""
    if h.size < 2:
        empty = np.empty(0, dtype=np.uint64)
        return empty, empty
    order = np.argsort(h, kind="stable")
    hs, ks = h[order], keys[order]
    is_start = np.empty(hs.size, dtype=bool)
    is_start[0] = True
    np.not_equal(hs[1:], hs[:-1], out=is_start[1:])
    if is_start.all():
        empty = np.empty(0, dtype=np.uint64)
        return empty, empty
    gid = np.cumsum(is_start) - 1
    first = ks[is_start][gid]
    m = ~is_start
    a, b = first[m], ks[m]
    keep = ~(is_index_key(a) & is_index_key(b))
    return a[keep], b[keep]


def edges_to_bytes(a: np.ndarray, b: np.ndarray) -> bytes:
    rec = np.empty(a.size, dtype=EDGE)
    rec["a"], rec["b"] = a, b
    return rec.tobytes()


def resolve_index_folders(paths: list[str] | tuple[str, ...]) -> list[str]:
    """Each entry is an index folder (has meta.json) or a root whose sub-folders are indexes."""
    from datatrove.io import get_datafolder

    out: list[str] = []
    for p in paths or []:
        folder = get_datafolder(p)
        if folder.exists("meta.json"):
            out.append(p)
            continue
        if not folder.isdir(""):
            raise FileNotFoundError(f"dedup index folder {p!r} does not exist")
        # ls (not glob) so that symlinked index folders are found too
        subs = sorted(s.rstrip("/").rsplit("/", 1)[-1] for s in folder.ls("", detail=False))
        out.extend(f"{p.rstrip('/')}/{s}" for s in subs if folder.exists(f"{s}/meta.json"))
    return out


# per-document sidecar (phase 1) and index documents: fixed-size records + one JSON id per line.
# Format 2 adds ``length`` (UTF-8 bytes of the text, the keep policy's tie-break inside a priority); stores and
# indexes written before it (format 1, no ``length``; their meta JSON has no format key) are read with length 0.
SIDE_V1 = np.dtype([("priority", "<f8"), ("date", "<f8"), ("exact", "V16"), ("n_shingles", "<u4"), ("has_exact", "u1")])
INDEX_DOC_V1 = np.dtype([("ref", "<u8"), ("priority", "<f8"), ("date", "<f8"), ("exact", "V16"), ("has_exact", "u1")])
SIDE = np.dtype(SIDE_V1.descr + [("length", "<u8")])
INDEX_DOC = np.dtype(INDEX_DOC_V1.descr + [("length", "<u8")])
RECORD_FORMAT = 2
FORMAT_KEY = "record_format"  # in meta/{rank}.json (signatures) and meta.json (index); absent: format 1


def read_versioned(folder, path: str, meta: dict[str, Any], current: np.dtype, legacy: np.dtype) -> np.ndarray:
    """Sidecar (``SIDE``) or index (``INDEX_DOC``) records in the current layout, whatever format ``meta`` (the
    JSON written beside them) names; format-1 records get ``length`` 0 (unknown: shortest)."""
    fmt = int(meta.get(FORMAT_KEY, 1))
    if fmt == RECORD_FORMAT:
        return read_records(folder, path, current)
    if fmt != 1:
        raise ValueError(f"{path}: record format {fmt} is newer than this code's ({RECORD_FORMAT})")
    old = read_records(folder, path, legacy)
    out = np.zeros(old.size, dtype=current)
    for name in legacy.names:
        out[name] = old[name]
    return out


def side_paths(rank: int) -> tuple[str, str]:
    return f"docs/{rank:05d}.bin", f"docs/{rank:05d}.ids.jsonl"


def ids_to_bytes(ids) -> bytes:
    return "".join(json.dumps(str(i), ensure_ascii=False) + "\n" for i in ids).encode("utf-8", "surrogatepass")


def read_records(folder, path: str, dtype: np.dtype) -> np.ndarray:
    with folder.open(path, "rb") as f:
        data = f.read()
    if len(data) % dtype.itemsize:
        raise ValueError(f"{path}: truncated ({len(data)} bytes, {dtype.itemsize}-byte records)")
    return np.frombuffer(data, dtype=dtype)


def read_ids_at(folder, path: str, positions: np.ndarray) -> list[str]:
    """Ids at the given line positions (any order), streaming the file (bounded memory)."""
    want = np.unique(positions)
    found: dict[int, str] = {}
    if want.size:
        k, last = 0, int(want[-1])
        with folder.open(path, "rb") as f:
            for i, line in enumerate(f):
                if i == int(want[k]):
                    found[i] = json.loads(line)
                    k += 1
                    if k == want.size:
                        break
                if i >= last:
                    break
    missing = [int(p) for p in want if int(p) not in found]
    if missing:
        raise ValueError(f"{path}: no id at lines {missing[:5]}")
    return [found[int(p)] for p in positions]


def exact_bytes(rec: np.ndarray) -> list[bytes | None]:
    return [r["exact"].tobytes() if r["has_exact"] else None for r in rec]
