"""Tokenize shards and pack documents into fixed-length training sequences (datatrove tokenized format).

Plain functions (notebooks and the benchmark import them):

* ``best_fit_decreasing(lengths, capacity)``: best-fit decreasing bin packing ("Fewer Truncations
  Improve Language Modeling", Ding et al., ICML 2024). Documents longer than a sequence are first cut
  into sequence-sized chunks (each fills a sequence exactly); the remainders and all shorter documents
  are sorted by length (longest first) and each goes into the open sequence with the least room left
  that still holds it (a segment tree over "room left" finds it in O(log capacity)); a new sequence is
  opened when none holds it. The rest of each sequence is padding.
* ``concat_split(lengths, capacity)``: the baseline (Megatron / datatrove ``DocumentTokenizer`` style):
  concatenate the documents and cut every ``capacity`` tokens; only the last sequence is padded.
* ``pack_documents(token_arrays, capacity, algorithm=..., pad_id=...)``: either of the above applied to
  token arrays -> sequences (token matrix), per-sequence segment ends, a padding mask and statistics.
* ``repeats_for(doc_id, epochs, seed)``: how many copies of a document a fractional epoch count gives
  (``floor(epochs)`` plus one more for a seeded-hash share ``frac(epochs)`` of the documents).

Step ``PackShards`` (one datatrove task per group of shards; resumable): reads Parquet shards of a
run, tokenizes ``text`` with a user-given ``tokenizers`` JSON, appends EOS, applies per-document
repeats from a repetition plan (``plan.json``), packs, and writes datatrove's tokenized format
(``<name>_<rank>.ds`` + ``.ds.index`` + ``.ds.loss`` + ``.ds.metadata``) with datatrove's own
``TokenizedFile`` writer. Boundary convention: see docs/packing.md. Each sequence is
``seq_len + 1`` tokens (nanotron's ``DatatroveFolderDataset(seq_len)`` reads windows of
``seq_len + 1`` tokens: inputs ``[:-1]``, labels ``[1:]``), so a reader's windows coincide with the
packed sequences.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

__all__ = [
    "ALGORITHMS",
    "PackStats",
    "PackedBatch",
    "best_fit_decreasing",
    "concat_split",
    "pieces_stats",
    "pack_documents",
    "repeats_for",
    "slice_epochs",
    "resolve_special_ids",
    "PackShards",
    "read_packed",
]

ALGORITHMS = ("best_fit", "concat")
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[SEP]")
STATS_DIR = "stats"
REPO_SOURCE = "code_repo"  # source of repository-level code documents (stages/code/repo_docs.py)


# ------------------------------------------------------------------------------------------ repeats


def repeats_for(doc_id: str, epochs: float, seed: int = 0) -> int:
    """Copies of one document for a (possibly fractional) epoch count: ``floor(epochs)`` plus one more
    when ``xxh3_64("{seed}:repeat:{id}") / 2**64 < frac(epochs)`` (so a share ``frac`` of a slice's
    documents gets the extra copy, the same ones on every rerun)."""
    if epochs <= 0:
        return 0
    whole = math.floor(epochs)
    frac = epochs - whole
    if frac <= 1e-12:
        return int(whole)
    import xxhash

    u = xxhash.xxh3_64_intdigest(f"{seed}:repeat:{doc_id}".encode("utf-8", "surrogatepass")) / 2.0**64
    return int(whole) + (1 if u < frac else 0)


def slice_epochs(epochs: dict[tuple[str, str, str], float], key: tuple[str, str, str]) -> float:
    """A slice's planned epochs; repository documents (source ``code_repo``) follow their code slice;
    slices the plan does not name are packed once."""
    if key in epochs:
        return epochs[key]
    if key[0] == REPO_SOURCE:
        return epochs.get(("code", key[1], key[2]), 1.0)
    return 1.0


# ------------------------------------------------------------------------------------------ packing


class _RoomTree:
    """Counts of open sequences per amount of room left (0..capacity); finds the smallest room >= L."""

    __slots__ = ("size", "t")

    def __init__(self, capacity: int):
        size = 1
        while size < capacity + 1:
            size *= 2
        self.size = size
        self.t = [0] * (2 * size)

    def add(self, pos: int, delta: int) -> None:
        i = pos + self.size
        t = self.t
        while i:
            t[i] += delta
            i >>= 1

    def first_at_least(self, lo: int) -> int:
        t = self.t
        i = lo + self.size
        if t[i]:
            return lo
        while i > 1:
            if not (i & 1) and t[i + 1]:
                i += 1
                break
            i >>= 1
        else:
            return -1
        size = self.size
        while i < size:
            i = 2 * i if t[2 * i] else 2 * i + 1
        return i - size


Piece = tuple[int, int, int]  # (document index, start token, end token)


def best_fit_decreasing(lengths: Sequence[int], capacity: int) -> list[list[Piece]]:
    """Sequences as lists of pieces ``(doc, start, end)``; see the module docstring."""
    if capacity < 1:
        raise ValueError("capacity must be >= 1")
    bins: list[list[Piece]] = []
    items: list[Piece] = []
    for d, n in enumerate(lengths):
        n = int(n)
        if n <= 0:
            continue
        full = n // capacity if n > capacity else 0
        for k in range(full):
            bins.append([(d, k * capacity, (k + 1) * capacity)])
        start = full * capacity
        if start < n:
            items.append((d, start, n))
    # longest first; ties by document index (deterministic)
    items.sort(key=lambda p: (p[1] - p[2], p[0]))
    tree = _RoomTree(capacity)
    by_room: dict[int, list[int]] = {}
    for piece in items:
        need = piece[2] - piece[1]
        room = tree.first_at_least(need)
        if room < 0:
            b = len(bins)
            bins.append([piece])
            left = capacity - need
        else:
            b = by_room[room].pop()
            tree.add(room, -1)
            bins[b].append(piece)
            left = room - need
        if left > 0:
            by_room.setdefault(left, []).append(b)
            tree.add(left, 1)
    return bins


def concat_split(lengths: Sequence[int], capacity: int) -> list[list[Piece]]:
    """Concatenate in the given order and cut every ``capacity`` tokens (the last sequence is padded)."""
    if capacity < 1:
        raise ValueError("capacity must be >= 1")
    bins: list[list[Piece]] = []
    cur: list[Piece] = []
    room = capacity
    for d, n in enumerate(lengths):
        s, n = 0, int(n)
        while s < n:
            take = min(room, n - s)
            cur.append((d, s, s + take))
            s += take
            room -= take
            if room == 0:
                bins.append(cur)
                cur, room = [], capacity
    if cur:
        bins.append(cur)
    return bins


@dataclass
class PackStats:
    documents: int = 0  # document copies packed (a document repeated 3 times counts 3)
    truncated_documents: int = 0  # copies whose tokens are spread over more than one sequence
    sequences: int = 0
    content_tokens: int = 0  # document tokens, EOS excluded
    eos_tokens: int = 0
    pad_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.content_tokens + self.eos_tokens + self.pad_tokens

    @property
    def truncated_share(self) -> float:
        return self.truncated_documents / self.documents if self.documents else 0.0

    @property
    def padding_share(self) -> float:
        return self.pad_tokens / self.total_tokens if self.total_tokens else 0.0

    def add(self, other: "PackStats") -> None:
        for k in ("documents", "truncated_documents", "sequences", "content_tokens", "eos_tokens", "pad_tokens"):
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(total_tokens=self.total_tokens, truncated_share=self.truncated_share, padding_share=self.padding_share)
        return d


@dataclass
class PackedBatch:
    tokens: np.ndarray  # [sequences, capacity]
    loss_mask: np.ndarray  # [sequences, capacity] bool, False on padding
    segment_ends: list[list[int]]  # per sequence: end offsets of each piece, then of the padding run
    stats: PackStats = field(default_factory=PackStats)


def pieces_stats(bins: list[list[Piece]], capacity: int) -> tuple[int, int]:
    """(truncated documents, padding tokens) of a packing."""
    seqs_per_doc: dict[int, int] = {}
    pad = 0
    for b in bins:
        used = 0
        for d, s, e in b:
            seqs_per_doc[d] = seqs_per_doc.get(d, 0) + 1
            used += e - s
        pad += capacity - used
    return sum(1 for v in seqs_per_doc.values() if v > 1), pad


def pack_documents(docs: Sequence[np.ndarray], capacity: int, *, algorithm: str = "best_fit", pad_id: int = 0,
                   eos_added: bool = True, order: np.ndarray | None = None) -> PackedBatch:
    """Pack token arrays (EOS already appended when ``eos_added``) into ``capacity``-token sequences."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
    lengths = [len(d) for d in docs]
    if algorithm == "best_fit":
        bins = best_fit_decreasing(lengths, capacity)
    else:
        idx = np.arange(len(docs)) if order is None else np.asarray(order)
        sub = concat_split([lengths[i] for i in idx], capacity)
        bins = [[(int(idx[d]), s, e) for d, s, e in b] for b in sub]
    truncated, pad = pieces_stats(bins, capacity)
    dtype = docs[0].dtype if len(docs) else np.uint32
    tokens = np.full((len(bins), capacity), pad_id, dtype=dtype)
    mask = np.zeros((len(bins), capacity), dtype=bool)
    ends: list[list[int]] = []
    for j, b in enumerate(bins):
        pos = 0
        e_list = []
        for d, s, e in b:
            n = e - s
            tokens[j, pos: pos + n] = docs[d][s:e]
            mask[j, pos: pos + n] = True
            pos += n
            e_list.append(pos)
        if pos < capacity:
            e_list.append(capacity)
        ends.append(e_list)
    n_docs = sum(1 for n in lengths if n > 0)
    eos = n_docs if eos_added else 0
    stats = PackStats(documents=n_docs, truncated_documents=truncated, sequences=len(bins),
                      content_tokens=sum(lengths) - eos, eos_tokens=eos, pad_tokens=pad)
    return PackedBatch(tokens, mask, ends, stats)


# ------------------------------------------------------------------------------------------ tokenizer


def resolve_special_ids(tokenizer, *, eos: bool, eos_token: str | None, pad_token: str | None) -> tuple[int | None, int]:
    """(eos id or None, pad id). EOS: ``eos_token`` or the first of ``EOS_CANDIDATES`` in the vocabulary.
    Padding: ``pad_token``, else the EOS id, else 0 (padding is masked anyway)."""
    eos_id = None
    if eos:
        names = [eos_token] if eos_token else list(EOS_CANDIDATES)
        for n in names:
            i = tokenizer.token_to_id(n)
            if i is not None:
                eos_id = int(i)
                break
        if eos_id is None:
            raise ValueError(f"no EOS token in the tokenizer (tried {names}); name one (eos_token) or turn eos off")
    pad_id = eos_id if eos_id is not None else 0
    if pad_token:
        i = tokenizer.token_to_id(pad_token)
        if i is None:
            raise ValueError(f"pad_token {pad_token!r} is not in the tokenizer's vocabulary")
        pad_id = int(i)
    return eos_id, pad_id


def token_dtype(vocab_size: int):
    return np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.uint32


# ------------------------------------------------------------------------------------------ step


def _shard_rows(path: Path, batch_rows: int = 1024) -> Iterator[dict[str, list]]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = set(pf.schema_arrow.names)
    cols = [c for c in ("id", "text", "source", "tier", "language", "token_count") if c in names]
    for batch in pf.iter_batches(batch_size=batch_rows, columns=cols):
        yield batch.to_pydict()


class PackShards(PipelineStep):
    """Tokenize + repeat + pack the Parquet shards of a run into datatrove's tokenized format.

    Args:
        input_folders: folders searched (recursively) for ``shard-*.parquet`` when the task starts
            (the run's ``output/``, and ``repo_docs/`` when repository documents replace code files).
        output_folder: where ``<name>_<rank>.ds`` files and ``stats/pack-<rank>.json`` go.
        tokenizer_path: a ``tokenizers`` JSON file.
        seq_len: training sequence length; each packed sequence holds ``seq_len + 1`` tokens.
        algorithm: ``best_fit`` (default) or ``concat`` (concatenate-and-split baseline).
        eos: append an EOS token to every document (``eos_token`` names it; default: auto).
        pad_token: padding token (default: the EOS token).
        plan_path: ``plan.json`` of ``assay plan`` (per-slice epochs, cluster caps); None: every document once.
        exclude_sources: shards of these sources are skipped (e.g. ``code`` when repository documents replace them).
        buffer_tokens: documents are packed in groups of about this many tokens (bounded memory).
        seed: order of sequences in a file (seeded shuffle) and of documents for ``concat``.
        name: file name prefix.
    """

    name = "📦 assay pack"
    type = "🔢 - TOKENIZER"

    def __init__(self, input_folders: list[str], output_folder: str, tokenizer_path: str, *, seq_len: int = 8192,
                 algorithm: str = "best_fit", eos: bool = True, eos_token: str | None = None,
                 pad_token: str | None = None, plan_path: str | None = None, exclude_sources: list[str] | None = None,
                 buffer_tokens: int = 16_000_000, seed: int = 0, name: str = "packed", batch_size: int = 512):
        super().__init__()
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
        if seq_len < 1:
            raise ValueError("seq_len must be >= 1")
        self.input_folders = [str(p) for p in input_folders]
        self.output_folder = str(output_folder)
        self.tokenizer_path = str(tokenizer_path)
        self.seq_len = int(seq_len)
        self.algorithm = algorithm
        self.eos = bool(eos)
        self.eos_token = eos_token
        self.pad_token = pad_token
        self.plan_path = plan_path
        self.exclude_sources = list(exclude_sources or [])
        self.buffer_tokens = int(buffer_tokens)
        self.seed = int(seed)
        self.file_name = name
        self.batch_size = int(batch_size)

    # -- inputs
    def shard_files(self) -> list[Path]:
        files: list[Path] = []
        for folder in self.input_folders:
            root = Path(folder)
            if root.exists():
                files.extend(sorted(root.rglob("shard-*.parquet")))
        return files

    def _plan(self) -> tuple[dict[tuple[str, str, str], float], dict[str, int], int]:
        if not self.plan_path or not Path(self.plan_path).exists():
            return {}, {}, self.seed
        plan = json.loads(Path(self.plan_path).read_text())
        epochs = {(s["source"], s["tier"], s["language"]): float(s["epochs"]) for s in plan.get("slices", [])}
        return epochs, {k: int(v) for k, v in plan.get("clusters", {}).get("repeats", {}).items()}, int(plan.get("seed", 0))

    # -- run
    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from datatrove.pipeline.tokens.tokenizer import TokenizedFile
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(self.tokenizer_path)
        eos_id, pad_id = resolve_special_ids(tok, eos=self.eos, eos_token=self.eos_token, pad_token=self.pad_token)
        dtype = token_dtype(tok.get_vocab_size())
        token_size = np.dtype(dtype).itemsize
        capacity = self.seq_len + 1
        epochs, overrides, plan_seed = self._plan()
        files = self.shard_files()[rank::world_size]

        out = Path(self.output_folder)
        fname = f"{self.file_name}_{rank:05d}.ds"
        staging = out / f".staging-{rank:05d}"
        shutil.rmtree(staging, ignore_errors=True)  # a rerun of this rank starts clean
        staging.mkdir(parents=True, exist_ok=True)
        writer = TokenizedFile(str(staging), fname, save_index=True, save_loss_metadata=True,
                               tokenizer_name_or_path=self.tokenizer_path, save_final_metadata=True, token_size=token_size)
        packer = _Packer(writer, capacity, self.algorithm, pad_id, dtype, eos_id is not None,
                         np.random.default_rng([self.seed, rank]))
        unique_tokens = unique_docs = mismatched = empty = 0
        slices: dict[str, dict[str, int]] = {}
        with self.track_time():
            for path in files:
                for cols in _shard_rows(path, self.batch_size):
                    n = len(cols["text"])
                    src = cols.get("source") or [""] * n
                    keep = [i for i in range(n) if src[i] not in self.exclude_sources]
                    if not keep:
                        continue
                    enc = tok.encode_batch([cols["text"][i] for i in keep])
                    tcs = cols.get("token_count")
                    for j, i in enumerate(keep):
                        ids = enc[j].ids
                        doc_id = cols["id"][i]
                        key = (src[i], cols["tier"][i], cols["language"][i])
                        unique_tokens += len(ids)
                        unique_docs += 1
                        if tcs is not None and tcs[i] != len(ids):
                            mismatched += 1
                        if doc_id in overrides:
                            r = overrides[doc_id]
                        elif epochs:
                            r = repeats_for(doc_id, slice_epochs(epochs, key), plan_seed)
                        else:
                            r = 1
                        sl = slices.setdefault("/".join(key), {"documents": 0, "tokens": 0, "copies": 0, "packed_tokens": 0})
                        sl["documents"] += 1
                        sl["tokens"] += len(ids)
                        sl["copies"] += r
                        sl["packed_tokens"] += r * len(ids)
                        self.stat_update("documents")
                        if r == 0:
                            self.stat_update("skipped_by_plan")
                            continue
                        if not ids and eos_id is None:
                            self.stat_update("empty_documents")
                            empty += r
                            continue
                        arr = np.asarray(ids + ([eos_id] if eos_id is not None else []), dtype=dtype)
                        packer.add(arr, r)
                        self.stat_update("tokens", value=r * len(ids))
                    if packer.buffered >= self.buffer_tokens:
                        packer.flush(final=False)
            packer.flush(final=True)
        writer.close()
        total = packer.stats
        # publish: files first, stats last (the stats file says this rank's output is whole)
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted(staging.iterdir()):
            os.replace(f, out / f.name)
        shutil.rmtree(staging, ignore_errors=True)
        for k, v in (("sequences", total.sequences), ("pad_tokens", total.pad_tokens),
                     ("truncated_documents", total.truncated_documents)):
            self.stat_update(k, value=v)
        stats = {
            "rank": rank, "file": fname, "shards": [str(p) for p in files], "algorithm": self.algorithm,
            "seq_len": self.seq_len, "capacity": capacity, "token_size": token_size, "eos_id": eos_id,
            "pad_id": pad_id, "unique_documents": unique_docs, "unique_tokens": unique_tokens,
            "token_count_mismatches": mismatched, "empty_copies": empty, "slices": slices, **total.as_dict(),
        }
        sdir = out / STATS_DIR
        sdir.mkdir(parents=True, exist_ok=True)
        tmp = sdir / f".pack-{rank:05d}.json.tmp"
        tmp.write_text(json.dumps(stats, indent=1, sort_keys=True))
        os.replace(tmp, sdir / f"pack-{rank:05d}.json")
        return
        yield  # a step that ends a pipeline: yields nothing


class _Packer:
    """Buffers document copies, packs them (best-fit per buffer, or one running concatenation) and
    writes sequences with datatrove's ``TokenizedFile``: tokens, segment ends (``.index``), loss mask."""

    def __init__(self, writer, capacity: int, algorithm: str, pad_id: int, dtype, eos: bool, rng):
        self.writer, self.capacity, self.algorithm = writer, capacity, algorithm
        self.pad_id, self.dtype, self.eos, self.rng = pad_id, dtype, eos, rng
        self.buf: list[np.ndarray] = []
        self.buffered = 0
        self.stats = PackStats()
        self._open: list[np.ndarray] = []  # concat: pieces of the sequence being filled
        self._open_ends: list[int] = []
        self._fill = 0

    def add(self, arr: np.ndarray, copies: int) -> None:
        for _ in range(copies):
            self.buf.append(arr)
        self.buffered += copies * len(arr)

    def _write(self, tokens: np.ndarray, mask: np.ndarray, ends: list[int]) -> None:
        self.writer.write_bytes(tokens.astype(self.dtype, copy=False).tobytes(), doc_ends=ends)
        self.writer.write_loss_bytes(mask.tobytes())

    def flush(self, *, final: bool) -> None:
        docs, self.buf, self.buffered = self.buf, [], 0
        if self.algorithm == "best_fit":
            if docs:
                batch = pack_documents(docs, self.capacity, algorithm="best_fit", pad_id=self.pad_id, eos_added=self.eos)
                for j in self.rng.permutation(len(batch.segment_ends)):
                    self._write(batch.tokens[j], batch.loss_mask[j], batch.segment_ends[j])
                self.stats.add(batch.stats)
            return
        C = self.capacity
        st = self.stats
        for i in self.rng.permutation(len(docs)):
            d = docs[i]
            st.documents += 1
            st.content_tokens += len(d) - (1 if self.eos else 0)
            st.eos_tokens += 1 if self.eos else 0
            s, pieces = 0, 0
            while s < len(d):
                take = min(C - self._fill, len(d) - s)
                self._open.append(d[s: s + take])
                self._fill += take
                self._open_ends.append(self._fill)
                s += take
                pieces += 1
                if self._fill == C:
                    self._write(np.concatenate(self._open), np.ones(C, dtype=bool), self._open_ends)
                    st.sequences += 1
                    self._open, self._open_ends, self._fill = [], [], 0
            st.truncated_documents += pieces > 1
        if final and self._fill:
            pad = C - self._fill
            toks = np.concatenate([*self._open, np.full(pad, self.pad_id, dtype=self.dtype)])
            mask = np.r_[np.ones(self._fill, dtype=bool), np.zeros(pad, dtype=bool)]
            self._write(toks, mask, [*self._open_ends, C])
            st.sequences += 1
            st.pad_tokens += pad
            self._open, self._open_ends, self._fill = [], [], 0


# ------------------------------------------------------------------------------------------ reading back


def read_packed(folder: str | Path, *, name: str = "packed", tokens: bool = True) -> Iterator[dict[str, Any]]:
    """Read packed files back with datatrove's own reader functions (``load_doc_ends`` and
    ``get_data_reader`` of ``datatrove.pipeline.tokens.merger``, the ones its merger uses):
    yields, per file, ``{"file", "token_size", "n_tokens", "tokens", "segment_ends", "loss_mask",
    "metadata_tokens"}``. ``tokens=False`` streams through the segments without keeping them
    (``tokens`` is then None), so a check needs memory for one segment at a time."""
    from datatrove.pipeline.tokens.merger import get_data_reader, load_doc_ends

    for ds in sorted(Path(folder).glob(f"{name}_*.ds")):
        meta = (ds.with_name(ds.name + ".metadata")).read_text().splitlines()
        token_size = int(meta[0].rsplit("|", 1)[1])
        ends = load_doc_ends(open(ds.with_name(ds.name + ".index"), "rb"))
        dt = np.uint16 if token_size == 2 else np.uint32
        parts: list[np.ndarray] = []
        n = 0
        for b in get_data_reader(open(ds, "rb"), ends, nb_bytes=token_size):
            n += len(b) // token_size
            if tokens:
                parts.append(np.frombuffer(b, dtype=dt))
        loss_path = ds.with_name(ds.name + ".loss")
        yield {"file": ds, "token_size": token_size, "n_tokens": n,
               "tokens": (np.concatenate(parts) if parts else np.empty(0, dtype=dt)) if tokens else None,
               "segment_ends": ends, "loss_mask": np.fromfile(loss_path, dtype=bool) if loss_path.exists() else None,
               "metadata_tokens": int(meta[1])}
