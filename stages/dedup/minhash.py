"""datatrove-style exact + MinHash near-dedup phases, each parallel by rank with bounded memory.

1. `MinhashSignatures` (inside the signals phase, passes documents through): vectorised signatures,
   per-rank per-unit sorted band-hash files, exact content hash, id/priority/date/length sidecar.
2. `MinhashBuckets` (tasks: bands + 1, see `dedup_phase_tasks`): candidate pairs per band (and for
   the exact hash), also against earlier runs' indexes; streams the hash space in windows.
3. `MinhashClusters` (1 task): union-find (connected components), kept member per cluster by
   policy (`choose_kept`), lookup of doc -> cluster, and this run's index for the next runs.
4. `DedupAnnotate` (inside the decide phase): cluster signals on every document; never drops.

File formats: see `assay.stages.dedup.storage`.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

import numpy as np
from datatrove.data import DocumentsPipeline
from datatrove.io import DataFolderLike, get_datafolder
from datatrove.pipeline.base import PipelineStep

from assay.stages.dedup import storage as st
from assay.stages.decisions.lengths import length_class
from assay.stages.dedup.config import KEEP_POLICIES, DedupConfig, dedup_phase_tasks  # noqa: F401 (re-export)

SIGNAL_KEYS = (
    "dedup__exact_hash",
    "dedup__doc_key",
    "dedup__cluster_id",
    "dedup__cluster_size",
    "dedup__duplicate_of",
    "dedup__exact_duplicate",
    "dedup__is_duplicate",
)
REASON_EXACT = "dedup_exact"
REASON_MINHASH = "dedup_minhash"


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def _to_float(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, (bool, int, float, np.integer, np.floating)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _to_timestamp(v: Any) -> float:
    """Seconds since epoch for numbers, ISO-8601 strings and datetimes; NaN when unknown."""
    if v is None or isinstance(v, bool):
        return math.nan
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    if isinstance(v, datetime):
        dt = v
    else:
        s = str(v).strip()
        if not s:
            return math.nan
        try:
            return float(s)
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            try:
                from email.utils import parsedate_to_datetime

                dt = parsedate_to_datetime(s)
            except (TypeError, ValueError, IndexError):
                return math.nan
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def cluster_id_for(doc_id: str) -> int:
    """Stable signed 64-bit cluster id: xxh3-64 of the kept document's id."""
    import xxhash

    v = xxhash.xxh3_64_intdigest(str(doc_id).encode("utf-8", "surrogatepass"))
    return v - (1 << 64) if v >= (1 << 63) else v


def dedup_reason(signals: dict[str, Any]) -> str | None:
    """Reason code for a document's dedup signals: ``dedup_exact``, ``dedup_minhash`` or None (keep)."""
    if not signals.get("dedup__is_duplicate"):
        return None
    return REASON_EXACT if signals.get("dedup__exact_duplicate") else REASON_MINHASH


def _check_fingerprint(found: dict, cfg: DedupConfig, where: str) -> None:
    want = cfg.fingerprint()
    got = found.get("fingerprint", found)
    if got != want:
        raise ValueError(f"dedup config mismatch with {where}: found {got}, this run uses {want}")


# ----------------------------------------------------------------------------------------------
# phase 1
# ----------------------------------------------------------------------------------------------
class MinhashSignatures(PipelineStep):
    """Phase 1 (inside the signals phase): pass documents through unchanged except for the signals
    ``dedup__exact_hash`` (xxh3-128 hex of the normalised text, None when empty) and
    ``dedup__doc_key`` (rank << 32 | position, used by `DedupAnnotate`), while writing per-rank,
    per-unit sorted band-hash files and the id/priority/date/length sidecar (length: UTF-8 bytes of the
    text, as the ``doc__bytes`` signal counts them; the keep policy's tie-break inside a priority).

    Documents with a ``reject_reason`` (when ``skip_rejected``) and documents without words get no
    signature, so they can neither be removed as duplicates nor be kept in place of a good copy.
    """

    type = "🫂 - DEDUP"
    name = "🎯 assay minhash signatures"

    def __init__(
        self,
        output_folder: DataFolderLike = "dedup/signatures",
        config: DedupConfig | dict | None = None,
        priority_signal: str | None = None,
        date_signal: str | None = "date",
        skip_rejected: bool = True,
    ):
        super().__init__()
        self.output_folder = get_datafolder(output_folder)
        self.config = DedupConfig.coerce(config)
        self.priority_signal = priority_signal
        self.date_signal = date_signal
        self.skip_rejected = skip_rejected

    def _flush(self, batch, rank, idx0, unit_files, side_files, counts):
        from assay.stages.dedup.shingles import SignatureBatch, band_hashes, compute_signatures

        cfg = self.config
        use = [not (self.skip_rejected and d.metadata.get("reject_reason")) for d in batch]
        with self.track_time(unit="batch"):
            texts = [d.text if u and isinstance(d.text, str) else "" for d, u in zip(batch, use)]
            try:
                sb = compute_signatures(texts, cfg)
            except Exception:  # noqa: BLE001  (never fail a task: isolate the bad document)
                parts = []
                for i, t in enumerate(texts):
                    try:
                        parts.append(compute_signatures([t], cfg))
                    except Exception:  # noqa: BLE001
                        self.stat_update("dedup/signature_error")
                        parts.append(compute_signatures([""], cfg))
                        use[i] = False
                sb = SignatureBatch(
                    sigs=np.vstack([p.sigs for p in parts]),
                    n_shingles=np.concatenate([p.n_shingles for p in parts]),
                    exact=[p.exact[0] for p in parts],
                    kinds=[p.kinds[0] for p in parts],
                )
            has = np.flatnonzero(sb.has_signature)
            idx = np.arange(idx0, idx0 + len(batch), dtype=np.uint32)
            if has.size and cfg.near:
                bh = band_hashes(sb.sigs[has], cfg)
                for u in range(cfg.bands):
                    rec = np.empty(has.size, dtype=st.REC)
                    rec["h"], rec["d"] = bh[:, u], idx[has]
                    unit_files[u].write(rec.tobytes())
            ex = [i for i, e in enumerate(sb.exact) if e is not None]
            if ex and cfg.exact:
                rec = np.empty(len(ex), dtype=st.REC)
                rec["h"] = [int.from_bytes(sb.exact[i][8:], "little") for i in ex]
                rec["d"] = idx[ex]
                unit_files[cfg.bands].write(rec.tobytes())
            counts["sig"] += has.size
        prio, dates, ids, lengths = [], [], [], []
        for i, doc in enumerate(batch):
            md = doc.metadata
            md["dedup__exact_hash"] = sb.exact[i].hex() if sb.exact[i] is not None else None
            md["dedup__doc_key"] = (rank << 32) | (idx0 + i)
            ids.append(str(doc.id))
            prio.append(_to_float(md.get(self.priority_signal)) if self.priority_signal else math.nan)
            dates.append(_to_timestamp(md.get(self.date_signal)) if self.date_signal else math.nan)
            lengths.append(len(doc.text.encode("utf-8", "surrogatepass")) if isinstance(doc.text, str) else 0)
            if not use[i]:
                self.stat_update("dedup/skipped_rejected")
            elif sb.exact[i] is None:
                self.stat_update("dedup/empty_text")
        side = np.zeros(len(batch), dtype=st.SIDE)
        side["priority"], side["date"] = prio, dates
        side["n_shingles"] = sb.n_shingles
        side["length"] = lengths
        for i, e in enumerate(sb.exact):
            if e is not None:
                side["exact"][i] = np.frombuffer(e, dtype="V16")[0]
                side["has_exact"][i] = 1
        side_files[0].write(side.tobytes())
        side_files[1].write(st.ids_to_bytes(ids))

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        cfg = self.config
        folder = self.output_folder
        tmp_paths = {u: f"sigs/u{u:03d}/{rank:05d}.unsorted" for u in cfg.units}
        unit_files = {u: folder.open(p, "wb") for u, p in tmp_paths.items()}
        side_files = [folder.open(p, "wb") for p in st.side_paths(rank)]
        counts = {"sig": 0}
        n_docs = 0
        batch, nbytes = [], 0
        try:
            for doc in data or []:
                self.stat_update("documents")
                batch.append(doc)
                nbytes += len(doc.text) if isinstance(doc.text, str) else 0
                if len(batch) >= cfg.batch_docs or nbytes >= cfg.batch_bytes:
                    self._flush(batch, rank, n_docs, unit_files, side_files, counts)
                    n_docs += len(batch)
                    yield from batch
                    batch, nbytes = [], 0
            if batch:
                self._flush(batch, rank, n_docs, unit_files, side_files, counts)
                n_docs += len(batch)
                yield from batch
        finally:
            for f in list(unit_files.values()) + side_files:
                f.close()
        self.stat_update("dedup/signatures", value=counts["sig"])
        # sort each unit file (12 bytes per document held at once, like datatrove's phase 1)
        with self.track_time(unit="rank"):
            for u, tmp in tmp_paths.items():
                with folder.open(tmp, "rb") as f:
                    rec = np.frombuffer(f.read(), dtype=st.REC)
                rec = rec[np.argsort(rec["h"], kind="stable")]
                with folder.open(st.sig_path(u, rank), "wb") as f:
                    f.write(rec.tobytes())
                folder.rm(tmp)
        st.write_json(folder, f"meta/{rank:05d}.json", {"fingerprint": cfg.fingerprint(), "n_docs": n_docs, "rank": rank,
                                                        st.FORMAT_KEY: st.RECORD_FORMAT})


# ----------------------------------------------------------------------------------------------
# phase 2
# ----------------------------------------------------------------------------------------------
class MinhashBuckets(PipelineStep):
    """Phase 2: candidate pairs per band unit (``bands`` LSH bands + the exact hash), against this
    run and against earlier runs' indexes (``index_folders``: index folders or roots of them).

    Any task count works; ``dedup_phase_tasks(config)["buckets"]`` (bands + 1) is the natural one, and
    multiples of it split every unit's hash range. Memory per task is bounded by
    ``config.max_records_in_memory`` records (the hash range is processed in windows)."""

    type = "🫂 - DEDUP"
    name = "🎯 assay minhash buckets"

    def __init__(
        self,
        input_folder: DataFolderLike = "dedup/signatures",
        output_folder: DataFolderLike = "dedup/buckets",
        config: DedupConfig | dict | None = None,
        index_folders: list[str] | None = None,
    ):
        super().__init__()
        self.input_folder = get_datafolder(input_folder)
        self.output_folder = get_datafolder(output_folder)
        self.config = DedupConfig.coerce(config)
        self.index_folders = list(index_folders or [])

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is not None:
            yield from data
        cfg = self.config
        inp, out = self.input_folder, self.output_folder
        metas = inp.list_files(subdirectory="meta", glob_pattern="*.json")
        if not metas:
            raise FileNotFoundError(f"no dedup signatures (meta/*.json) in {inp.path}")
        _check_fingerprint(st.read_json(inp, metas[0]), cfg, f"signatures in {inp.path}")
        indexes = st.resolve_index_folders(self.index_folders)
        if len(indexes) >= st.MAX_INDEXES:
            raise ValueError(f"too many dedup indexes ({len(indexes)})")
        index_dfs = [get_datafolder(p) for p in indexes]
        for p, f in zip(indexes, index_dfs):
            _check_fingerprint(st.read_json(f, "meta.json"), cfg, f"index {p}")
        if rank == 0:
            st.write_json(
                out,
                "meta.json",
                {"fingerprint": cfg.fingerprint(), "signatures_folder": inp.path, "index_folders": indexes,
                 "world_size": world_size},
            )
        units = cfg.units
        parts = max(1, world_size // len(units))
        items = [(u, p) for p in range(parts) for u in units][rank::world_size]
        for u, p in items:
            with self.track_time(unit="unit"):
                self._run_unit(u, p, parts, inp, out, index_dfs)

    def _run_unit(self, u, p, parts, inp, out, index_dfs):
        cfg = self.config
        lo = st.HASH_SPACE * p // parts
        hi = st.HASH_SPACE * (p + 1) // parts
        readers: list[st.SortedRunReader] = []
        for path in inp.list_files(subdirectory=f"sigs/u{u:03d}", glob_pattern="*.bin"):
            r = int(path.rsplit("/", 1)[-1].split(".")[0])
            readers.append(st.SortedRunReader(inp, path, st.REC, lambda d, r=r: st.new_doc_keys(r, d)))
        for i, f in enumerate(index_dfs):
            path = f"u{u:03d}.bin"
            if f.exists(path):
                readers.append(st.SortedRunReader(f, path, st.IDX_REC, lambda d, i=i: st.index_doc_keys(i, d)))
        n_records = sum(r.n_records for r in readers) // parts
        for r in readers:
            r.seek_to(lo)
        n_edges = n_index = 0
        with out.open(f"edges/u{u:03d}_p{p:03d}.bin", "wb") as fo:
            for bound in st.window_bounds(lo, hi, n_records, cfg.max_records_in_memory):
                chunks = [r.take_below(bound) for r in readers]
                if not chunks:
                    break
                h = np.concatenate([c[0] for c in chunks])
                keys = np.concatenate([c[1] for c in chunks])
                a, b = st.group_edges(h, keys)
                if a.size:
                    fo.write(st.edges_to_bytes(a, b))
                    n_edges += a.size
                    n_index += int(np.count_nonzero(st.is_index_key(a) | st.is_index_key(b)))
        for r in readers:
            r.close()
        self.stat_update("dedup/edges", value=n_edges)
        self.stat_update("dedup/index_edges", value=n_index)
        if u == cfg.bands:
            self.stat_update("dedup/exact_edges", value=n_edges)


# ----------------------------------------------------------------------------------------------
# phase 3
# ----------------------------------------------------------------------------------------------
def _connected_components(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, labels) of the graph given by edge arrays (vectorised min-label hooking with pointer
    jumping; each label is the smallest node index of its component)."""
    nodes, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    n = nodes.size
    labels = np.arange(n, dtype=np.int64)
    if n == 0:
        return nodes, labels
    ia, ib = inv[: a.size].astype(np.int64), inv[a.size :].astype(np.int64)
    while True:
        la, lb = labels[ia], labels[ib]
        if np.array_equal(la, lb):
            break
        m = np.minimum(la, lb)
        np.minimum.at(labels, la, m)  # hook roots onto the smaller label
        np.minimum.at(labels, lb, m)
        np.minimum.at(labels, ia, m)
        np.minimum.at(labels, ib, m)
        while True:  # pointer jumping until every node points at a root
            nxt = labels[labels]
            if np.array_equal(nxt, labels):
                break
            labels = nxt
    return nodes, labels


def choose_kept(
    labels: np.ndarray,
    ids: list[str],
    priority: np.ndarray,
    date: np.ndarray,
    in_index: np.ndarray,
    policy: str,
    length: np.ndarray | None = None,
) -> np.ndarray:
    """Per node, the node index of its cluster's kept member (deterministic: it depends on the members'
    attributes only, never on their order, rank or task count).

    Documents from an earlier run's index always win (already published); then by policy: ``highest_priority``
    (highest priority, NaN last; within one priority the longest text by ``decisions.lengths.length_class`` of
    ``length`` in bytes: the more complete version, e.g. a current spec over an older one 19% shorter in the
    same ensemble bucket; copies within about 5% of each other's length are one class, so a copy that only
    repeats or inserts a few words does not win for that), ``oldest`` (smallest date, NaN last), ``first_id``;
    remaining ties broken by the smallest id (string order). ``length`` None (or 0: unknown, e.g. a store
    written before lengths) adds no order."""
    if policy not in KEEP_POLICIES:
        raise ValueError(f"keep_policy must be one of {KEEP_POLICIES}, got {policy!r}")
    n = labels.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    _, id_rank = np.unique(np.asarray(ids, dtype=object).astype(str), return_inverse=True)
    keys: list[np.ndarray] = [id_rank]
    if policy == "highest_priority":
        if length is not None:
            keys.append(-length_class(length))  # longer first, by length class (about 5% apart)
        keys.append(np.where(np.isnan(priority), np.inf, -priority))
    elif policy == "oldest":
        keys.append(np.where(np.isnan(date), np.inf, date))
    keys += [~in_index, labels]
    order = np.lexsort(keys)
    first_of_label = np.empty(labels.max() + 1, dtype=np.int64)
    ls = labels[order]
    starts = np.r_[True, ls[1:] != ls[:-1]]
    first_of_label[ls[starts]] = order[starts]
    return first_of_label[labels]


def _lookup_parquet(folder, n_rows: int) -> None:
    """lookup.parquet (same rows as lookup.jsonl) for notebooks and polars joins; built with
    pyarrow's JSON reader, which (unlike ``pa.array``) does not import pandas."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    schema = pa.schema(
        [("doc_key", pa.int64()), ("doc_id", pa.string()), ("cluster_id", pa.int64()), ("cluster_size", pa.int64()),
         ("duplicate_of", pa.string()), ("exact_duplicate", pa.bool_()), ("is_duplicate", pa.bool_()),
         ("duplicate_of_published", pa.bool_())]
    )
    if n_rows:
        with folder.open("lookup.jsonl", "rb") as f:
            table = pj.read_json(f, parse_options=pj.ParseOptions(explicit_schema=schema))
    else:
        table = schema.empty_table()
    with folder.open("lookup.parquet", "wb") as f:
        pq.write_table(table, f)


class MinhashClusters(PipelineStep):
    """Phase 3 (exactly 1 task): connected components of all edges (exact and near duplicates, also
    to earlier runs' documents), the kept member of each cluster by ``keep_policy`` and:

    - ``lookup.jsonl`` and ``lookup.parquet`` (same rows) in ``output_folder``: doc_key, doc_id, cluster_id, cluster_size,
      duplicate_of (kept id, null when this doc is kept), exact_duplicate, is_duplicate, for every
      new document in a cluster of size >= 2 (documents not listed are unique);
    - this run's index (signatures of every kept document of this run) in ``index_output_folder``
      (default ``<output_folder>/index``; ``None``/"" disables it), to pass to the next run's
      `MinhashBuckets(index_folders=[...])`. Earlier indexes are never rewritten.
    """

    type = "🫂 - DEDUP"
    name = "🎯 assay minhash clusters"

    def __init__(
        self,
        input_folder: DataFolderLike = "dedup/buckets",
        output_folder: DataFolderLike = "dedup/clusters",
        config: DedupConfig | dict | None = None,
        keep_policy: str | None = None,
        signatures_folder: str | None = None,
        index_folders: list[str] | None = None,
        index_output_folder: str | None = "__default__",
    ):
        super().__init__()
        self.input_folder = get_datafolder(input_folder)
        self.output_folder = get_datafolder(output_folder)
        self.config = DedupConfig.coerce(config)
        self.keep_policy = keep_policy or self.config.keep_policy
        if self.keep_policy not in KEEP_POLICIES:
            raise ValueError(f"keep_policy must be one of {KEEP_POLICIES}, got {self.keep_policy!r}")
        self.signatures_folder = signatures_folder
        self.index_folders = index_folders
        if index_output_folder == "__default__":
            index_output_folder = self.output_folder.path.rstrip("/") + "/index"
        self.index_output_folder = index_output_folder or None

    # -- attribute loading -----------------------------------------------------------------
    def _node_attributes(self, nodes, sig_folder, index_dfs):
        n = nodes.size
        ids = np.empty(n, dtype=object)
        prio = np.full(n, np.nan)
        date = np.full(n, np.nan)
        length = np.zeros(n, dtype=np.int64)
        exact = np.empty(n, dtype=object)
        in_index = st.is_index_key(nodes)
        # documents of this run, by rank
        new_pos = np.flatnonzero(~in_index)
        ranks = (nodes[new_pos] >> np.uint64(32)).astype(np.int64)
        for r in np.unique(ranks):
            pos = new_pos[ranks == r]
            idx = (nodes[pos] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            bin_path, ids_path = st.side_paths(int(r))
            meta = st.read_json(sig_folder, f"meta/{int(r):05d}.json")
            rec = st.read_versioned(sig_folder, bin_path, meta, st.SIDE, st.SIDE_V1)[idx]
            ids[pos] = st.read_ids_at(sig_folder, ids_path, idx)
            prio[pos], date[pos], length[pos] = rec["priority"], rec["date"], rec["length"]
            exact[pos] = st.exact_bytes(rec)
        # documents of earlier runs
        idx_pos = np.flatnonzero(in_index)
        inos = ((nodes[idx_pos] >> np.uint64(st.REF_BITS)) & np.uint64(st.MAX_INDEXES - 1)).astype(np.int64)
        for i in np.unique(inos):
            pos = idx_pos[inos == i]
            refs = (nodes[pos] & st.REF_MASK).astype(np.uint64)
            folder = index_dfs[int(i)]
            recs = st.read_versioned(folder, "docs.bin", st.read_json(folder, "meta.json"), st.INDEX_DOC,
                                     st.INDEX_DOC_V1)
            at = np.searchsorted(recs["ref"], refs)
            if np.any(at >= recs.size) or np.any(recs["ref"][np.minimum(at, recs.size - 1)] != refs):
                raise ValueError(f"index {folder.path}: docs.bin misses referenced documents")
            rec = recs[at]
            ids[pos] = st.read_ids_at(folder, "ids.jsonl", at)
            prio[pos], date[pos], length[pos] = rec["priority"], rec["date"], rec["length"]
            exact[pos] = st.exact_bytes(rec)
        return ids, prio, date, length, exact, in_index

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is not None:
            yield from data
        if world_size != 1:
            raise ValueError("MinhashClusters must run with exactly 1 task")
        import json

        cfg = self.config
        inp, out = self.input_folder, self.output_folder
        meta = st.read_json(inp, "meta.json")
        _check_fingerprint(meta, cfg, f"buckets in {inp.path}")
        sig_folder = get_datafolder(self.signatures_folder or meta["signatures_folder"])
        indexes = st.resolve_index_folders(self.index_folders) if self.index_folders is not None else meta["index_folders"]
        index_dfs = [get_datafolder(p) for p in indexes]
        with self.track_time(unit="run"):
            parts = []
            for path in inp.list_files(subdirectory="edges", glob_pattern="*.bin"):
                with inp.open(path, "rb") as f:
                    parts.append(np.frombuffer(f.read(), dtype=st.EDGE))
            edges = np.concatenate(parts) if parts else np.empty(0, dtype=st.EDGE)
            nodes, labels = _connected_components(edges["a"].copy(), edges["b"].copy())
            ids, prio, date, length, exact, in_index = self._node_attributes(nodes, sig_folder, index_dfs)
            kept = choose_kept(labels, list(ids), prio, date, in_index, self.keep_policy, length)
            sizes = np.bincount(labels)[labels] if labels.size else np.empty(0, dtype=np.int64)
            is_dup = kept != np.arange(nodes.size)
            kept_ids = ids[kept] if nodes.size else ids
            exact_dup = np.array(
                [bool(d) and exact[i] is not None and exact[i] == exact[k] for i, (d, k) in enumerate(zip(is_dup, kept))],
                dtype=bool,
            )
            new = ~in_index
            cluster_ids = np.fromiter((cluster_id_for(x) for x in kept_ids[new]), dtype=np.int64, count=int(new.sum()))
            published = is_dup & in_index[kept] if nodes.size else is_dup
            with out.open("lookup.jsonl", "wt", encoding="utf-8") as f:
                for k, pos in enumerate(np.flatnonzero(new)):
                    row = {
                        "doc_key": int(nodes[pos]),
                        "doc_id": ids[pos],
                        "cluster_id": int(cluster_ids[k]),
                        "cluster_size": int(sizes[pos]),
                        "duplicate_of": kept_ids[pos] if is_dup[pos] else None,
                        "exact_duplicate": bool(exact_dup[pos]),
                        "is_duplicate": bool(is_dup[pos]),
                        "duplicate_of_published": bool(published[pos]),
                    }
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            _lookup_parquet(out, n_rows=int(new.sum()))
            n_clusters = int(np.unique(labels).size)
            self.stat_update("dedup/clusters", value=n_clusters)
            self.stat_update("dedup/docs_in_clusters", value=int(new.sum()))
            self.stat_update("dedup/duplicates", value=int(is_dup[new].sum()))
            self.stat_update("dedup/exact_duplicates", value=int(exact_dup[new].sum()))
            self.stat_update("dedup/duplicates_of_published", value=int(published[new].sum()))
            st.write_json(out, "meta.json", {"fingerprint": cfg.fingerprint(), "keep_policy": self.keep_policy,
                                             "signatures_folder": sig_folder.path, "index_folders": indexes})
            if self.index_output_folder:
                removed = np.sort(nodes[new & is_dup])
                self._write_index(sig_folder, get_datafolder(self.index_output_folder), removed)

    def _write_index(self, sig_folder, idx_out, removed: np.ndarray) -> None:
        """Signatures and sidecar rows of every kept document of this run (streamed per unit)."""
        cfg = self.config
        metas = sorted(sig_folder.list_files(subdirectory="meta", glob_pattern="*.json"))
        n_by_rank, meta_by_rank = {}, {}
        for m in metas:
            d = st.read_json(sig_folder, m)
            n_by_rank[int(d["rank"])] = int(d["n_docs"])
            meta_by_rank[int(d["rank"])] = d
        offsets, acc = {}, 0
        for r in sorted(n_by_rank):
            offsets[r] = acc
            acc += n_by_rank[r]

        def is_removed(keys: np.ndarray) -> np.ndarray:
            if removed.size == 0:
                return np.zeros(keys.size, dtype=bool)
            at = np.minimum(np.searchsorted(removed, keys), removed.size - 1)
            return removed[at] == keys

        n_kept_sigs = 0
        for u in cfg.units:
            readers = []
            for path in sig_folder.list_files(subdirectory=f"sigs/u{u:03d}", glob_pattern="*.bin"):
                r = int(path.rsplit("/", 1)[-1].split(".")[0])
                readers.append(st.SortedRunReader(sig_folder, path, st.REC, lambda d, r=r: st.new_doc_keys(r, d)))
            n_records = sum(r.n_records for r in readers)
            with idx_out.open(f"u{u:03d}.bin", "wb") as fo:
                for bound in st.window_bounds(0, st.HASH_SPACE, n_records, cfg.max_records_in_memory):
                    chunks = [r.take_below(bound) for r in readers]
                    if not chunks:
                        break
                    h = np.concatenate([c[0] for c in chunks])
                    keys = np.concatenate([c[1] for c in chunks])
                    keep = ~is_removed(keys)
                    h, keys = h[keep], keys[keep]
                    rk = (keys >> np.uint64(32)).astype(np.int64)
                    off = np.array([offsets.get(int(x), 0) for x in range(int(rk.max()) + 1)] if rk.size else [0])
                    ref = off[rk].astype(np.uint64) + (keys & np.uint64(0xFFFFFFFF))
                    order = np.argsort(h, kind="stable")
                    rec = np.empty(h.size, dtype=st.IDX_REC)
                    rec["h"], rec["d"] = h[order], ref[order]
                    fo.write(rec.tobytes())
                    if u == cfg.units[0]:
                        n_kept_sigs += h.size
            for r in readers:
                r.close()
        n_docs = 0
        with idx_out.open("docs.bin", "wb") as fd, idx_out.open("ids.jsonl", "wb") as fi:
            for r in sorted(n_by_rank):
                bin_path, ids_path = st.side_paths(r)
                side = st.read_versioned(sig_folder, bin_path, meta_by_rank[r], st.SIDE, st.SIDE_V1)
                idx = np.arange(side.size, dtype=np.uint64)
                keep = ~is_removed(st.new_doc_keys(r, idx)) & (side["n_shingles"] > 0)
                rec = np.zeros(int(keep.sum()), dtype=st.INDEX_DOC)
                rec["ref"] = np.uint64(offsets[r]) + idx[keep]
                for col in ("priority", "date", "exact", "has_exact", "length"):
                    rec[col] = side[col][keep]
                fd.write(rec.tobytes())
                keep_pos = np.flatnonzero(keep)
                with sig_folder.open(ids_path, "rb") as f:
                    k = 0
                    for i, line in enumerate(f):
                        if k < keep_pos.size and i == keep_pos[k]:
                            fi.write(line)
                            k += 1
                if k != keep_pos.size:
                    raise ValueError(f"{ids_path}: fewer ids than documents")
                n_docs += rec.size
        st.write_json(idx_out, "meta.json", {"fingerprint": cfg.fingerprint(), "n_docs": n_docs,
                                             st.FORMAT_KEY: st.RECORD_FORMAT})
        self.stat_update("dedup/index_docs", value=n_docs)


# ----------------------------------------------------------------------------------------------
# phase 4
# ----------------------------------------------------------------------------------------------
class DedupAnnotate(PipelineStep):
    """Phase 4 (inside the decide phase): sets on every document ``dedup__exact_hash`` (computed
    here when phase 1 did not), ``dedup__cluster_id``, ``dedup__cluster_size``,
    ``dedup__duplicate_of`` (kept doc id; None when this doc is kept or unique),
    ``dedup__exact_duplicate`` and ``dedup__is_duplicate``. Never drops a document: the decision
    step excludes duplicates (``dedup_reason`` gives ``dedup_exact`` / ``dedup_minhash``).

    Documents are matched by ``dedup__doc_key`` (set by `MinhashSignatures`), falling back to the
    document id when the key is absent.

    ``signatures_folder``: phase 1's output for the same documents. Its sidecar holds the exact hash of
    every document phase 1 hashed, computed with the same text normalisation: those are read back by
    document id instead of hashing each text again (documents phase 1 did not hash, e.g. rejected ones,
    are hashed here as before; the values are the same either way). Each task holds 24 bytes per document
    of the run for that: beyond ``max_stored_exact`` documents every text is hashed here instead."""

    type = "🫂 - DEDUP"
    name = "🎯 assay dedup annotate"

    def __init__(self, clusters_folder: DataFolderLike = "dedup/clusters", config: DedupConfig | dict | None = None,
                 signatures_folder: DataFolderLike | None = None, max_stored_exact: int = 4_000_000):
        super().__init__()
        self.max_stored_exact = int(max_stored_exact)
        self.clusters_folder = get_datafolder(clusters_folder)
        self.config = DedupConfig.coerce(config)
        self.signatures_folder = get_datafolder(signatures_folder) if signatures_folder is not None else None
        self._by_key: dict[int, tuple] | None = None
        self._by_id: dict[str, tuple] | None = None
        self._exact: tuple[np.ndarray, np.ndarray] | None = None

    def _load_exact(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted 64-bit keys of document ids, their exact digests) from phase 1's sidecars: 24 bytes per
        document held. Empty when there are none or phase 1 normalised text otherwise than ``self.config``."""
        import xxhash

        empty = (np.empty(0, dtype=np.uint64), np.empty(0, dtype="V16"))
        folder = self.signatures_folder
        if folder is None:
            return empty
        norm = ("lowercase", "remove_punctuation", "normalize_numbers", "strip_accents")
        metas = [st.read_json(folder, p) for p in folder.list_files(subdirectory="meta", glob_pattern="*.json")]
        if sum(int(m.get("n_docs") or 0) for m in metas) > self.max_stored_exact:
            return empty  # every task would hold them all: hashed here instead, as before
        keys, digests = [], []
        for meta in metas:
            if any(meta.get("fingerprint", {}).get(k) != getattr(self.config, k) for k in norm):
                return empty
            bin_path, ids_path = st.side_paths(int(meta["rank"]))
            if not (folder.exists(bin_path) and folder.exists(ids_path)):
                continue
            side = st.read_versioned(folder, bin_path, meta, st.SIDE, st.SIDE_V1)
            has = side["has_exact"] == 1
            with folder.open(ids_path, "rb") as f:
                ids = [line for line, h in zip(f, has.tolist()) if h]
            if len(ids) != int(has.sum()):
                continue
            # the id as phase 1 wrote it (one JSON string per line): hashed as its decoded string
            keys.append(np.fromiter((xxhash.xxh3_64_intdigest(json.loads(i).encode("utf-8", "surrogatepass"))
                                     for i in ids), dtype=np.uint64, count=len(ids)))
            digests.append(side["exact"][has])
        if not keys:
            return empty
        k, d = np.concatenate(keys), np.concatenate(digests)
        order = np.argsort(k, kind="stable")
        k, d = k[order], d[order]
        # a key held twice (the same id in two ranks, or two ids with one 64-bit hash): hashed here instead
        same = k[1:] == k[:-1]
        shared = np.zeros(k.size, dtype=bool)
        shared[1:] |= same
        shared[:-1] |= same
        return k[~shared], d[~shared]

    def _stored_exact(self, doc_id: str) -> str | None:
        """The exact hash (hex) phase 1 computed for this document, None when it did not."""
        import xxhash

        keys, digests = self._exact
        if not keys.size:
            return None
        h = np.uint64(xxhash.xxh3_64_intdigest(doc_id.encode("utf-8", "surrogatepass")))
        i = int(np.searchsorted(keys, h))
        return digests[i].tobytes().hex() if i < keys.size and keys[i] == h else None

    def _load(self) -> None:
        import json

        self._by_key, self._by_id = {}, {}
        if not self.clusters_folder.exists("lookup.jsonl"):
            raise FileNotFoundError(f"no lookup.jsonl in {self.clusters_folder.path}: run MinhashClusters first")
        with self.clusters_folder.open("lookup.jsonl", "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                row = (d["cluster_id"], d["cluster_size"], d["duplicate_of"], d["exact_duplicate"], d["is_duplicate"])
                self._by_key[d["doc_key"]] = row
                self._by_id.setdefault(d["doc_id"], row)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if self._by_key is None:
            self._load()
        if self._exact is None:
            self._exact = self._load_exact()
        for doc in data or []:
            with self.track_time():
                md = doc.metadata
                if md.get("dedup__exact_hash") is None and "dedup__exact_hash" not in md:
                    stored = self._stored_exact(str(doc.id))
                    if stored is not None:
                        md["dedup__exact_hash"] = stored
                    else:
                        from assay.stages.dedup.shingles import exact_hash

                        e = exact_hash(doc.text, self.config)
                        md["dedup__exact_hash"] = e.hex() if e is not None else None
                key = md.get("dedup__doc_key")
                row = self._by_key.get(int(key)) if key is not None else self._by_id.get(str(doc.id))
                if row is None:
                    row = (cluster_id_for(doc.id), 1, None, False, False)
                cid, size, dup_of, exact_dup, is_dup = row
                md["dedup__cluster_id"] = int(cid)
                md["dedup__cluster_size"] = int(size)
                md["dedup__duplicate_of"] = dup_of
                md["dedup__exact_duplicate"] = bool(exact_dup)
                md["dedup__is_duplicate"] = bool(is_dup)
                self.stat_update("documents")
                if is_dup:
                    self.stat_update("dedup/exact_duplicate" if exact_dup else "dedup/near_duplicate")
                elif size > 1:
                    self.stat_update("dedup/kept_representative")
            yield doc
