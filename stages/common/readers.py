"""The shared base of assay's readers: datatrove's ``BaseDiskReader`` over a list of paths.

Listing, globs, sharding (``rank::world_size``), ``limit``/``skip`` and fsspec paths (local, ``file://``,
``memory://``, ``s3://``, ``hf://`` ...) come from datatrove: every path given is a ``DataFolder`` (a directory)
or one file of its parent ``DataFolder``; directories are listed with ``DataFolder.list_files`` (recursive,
symlinked directories are not followed) and ``read_files_shard`` reads a task's files.

What the base adds, for every reader:

* **ids unique by construction and stable across machines**: ``<source>:<file key>[#<record or member>]``
  where the file key is the file's path relative to the root that was given, under the root's own name
  (``repo/src/a.py``; a file given on its own: its name). Two roots with the same name get ``~2``, ``~3``;
  a key that repeats inside one file (two records sharing a ``WARC-Record-ID``, a member name twice in a
  tar, ``"id": "r1"`` twice in JSONL) gets an occurrence counter ``~2``, ``~3`` (deterministic: the file is
  read in order by one task). The absolute path stays in ``metadata["source_file"]``.
* **names that are not UTF-8** (file names with arbitrary bytes, latin-1 tar members, lone surrogates) are
  carried losslessly: ids and metadata hold an escaped form (``\\xe9``), and ``<key>_raw`` the hex of the
  raw bytes (:func:`escape_text`).
* **files that are not regular files** (FIFOs, devices, sockets, symlinks to directories) are never
  opened: one reject document with ``<family>_special_file``.
* **stats for conservation** (rank-independent totals in datatrove's merged stats): ``input_files``
  (every file a task reads, datatrove's own stat), ``files/ignored`` (files in a directory that the name
  filter left out; with a glob, datatrove lists only matching files), ``roots/no_input_files`` (+ a warning) for a directory without a single
  file to read, ``documents`` (every document the reader yields).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.io import DataFolder
from datatrove.pipeline.readers.base import BaseDiskReader
from datatrove.utils.logging import logger

__all__ = ["FileRef", "PathsReader", "escape_text", "sanitize_metadata"]


def escape_text(s: str) -> tuple[str, bytes | None]:
    """``(text that encodes as UTF-8, raw bytes or None)``.

    A string holding surrogates (``os`` decodes non-UTF-8 file names with ``surrogateescape``; JSON may hold
    a lone ``\\ud800``) cannot be written as UTF-8. Its raw bytes are recovered (``surrogateescape``, else
    ``surrogatepass``) and the text is those bytes decoded with ``backslashreplace`` (``b"\\xe9"`` ->
    ``"\\\\xe9"``), so nothing crashes and the raw bytes are kept for provenance."""
    try:
        s.encode("utf-8")
        return s, None
    except UnicodeEncodeError:
        pass
    try:
        raw = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = s.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace"), raw


_RAW_KEYS = ("source_file", "path", "url", "record_id", "repo", "license")


def sanitize_metadata(meta: dict) -> None:
    """Escape every string value that is not valid Unicode (in place); the raw bytes of provenance keys go to
    ``<key>_raw`` (hex)."""
    for k, v in list(meta.items()):
        if not isinstance(v, str):
            continue
        text, raw = escape_text(v)
        if raw is not None:
            meta[k] = text
            if k in _RAW_KEYS:
                meta[f"{k}_raw"] = raw.hex()


@dataclass
class FileRef:
    """One input file: where it lives, how ids name it."""

    folder: DataFolder
    rel: str  # path relative to ``folder`` (as listed; may hold surrogate escapes)
    full: str  # the resolved path (local path, or URL with protocol)
    key: str  # the id key: path relative to the given root, under the root's name
    root: str  # the root as resolved (directory, or the file itself)
    root_rel: str  # path relative to the given root ("" for a file given on its own)

    @property
    def name(self) -> str:
        return posixpath.basename(self.rel)

    @property
    def local_path(self) -> str | None:
        return self.full if self.folder.is_local() else None

    def open(self, mode: str = "rb"):
        return self.folder.open(self.rel, mode)

    def size(self) -> int | None:
        try:
            return int(self.folder.size(self.rel))
        except Exception:  # noqa: BLE001
            return None

    def kind(self) -> tuple[str, str]:
        """``("file"|"missing"|"special", detail)``: only regular files (or links to them) are opened."""
        try:
            info = self.folder.info(self.rel)
        except FileNotFoundError as e:
            return "missing", repr(e)
        except OSError as e:
            return "missing", repr(e)
        typ = info.get("type")
        if typ == "file":
            return "file", ""
        mode = info.get("mode")
        what = "directory" if typ == "directory" else _mode_name(mode)
        return "special", f"not a regular file: {what}"


def _mode_name(mode) -> str:
    import stat

    if not isinstance(mode, int):
        return "other"
    for test, name in ((stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "other"


def _glob_for_datatrove(glob: str | None) -> str | None:
    """assay globs match a file name at any depth (``*.warc.gz``) or a relative path (``sub/*.py``);
    datatrove matches the relative path exactly, so a pattern without ``/`` becomes ``**/<pattern>``."""
    if not glob:
        return None
    return glob if "/" in glob else f"**/{glob}"


class PathsReader(BaseDiskReader):
    """datatrove's disk reader over several paths (directories or files, local or fsspec URLs).

    Subclasses set ``family`` (``web``/``code``/``pdf``), ``reason_unreadable`` and ``reason_special``,
    implement :meth:`read_ref` (documents of one file, ids relative to the file: ``FileRef.key`` plus a
    suffix) and :meth:`reject_doc`, and may override :meth:`wanted` (which files of a directory to read
    when no glob is given)."""

    family = "data"
    reason_unreadable = "unreadable"
    reason_special = "special_file"

    def __init__(self, paths: list[str] | str = (), glob: str | None = None, limit: int = -1, skip: int = 0,
                 default_metadata: dict | None = None, recursive: bool = True):
        self.paths = [paths] if isinstance(paths, str) else [str(p) for p in paths]
        first = self.paths[0] if self.paths else "."
        super().__init__(data_folder=first, limit=limit, skip=skip, default_metadata=default_metadata,
                         recursive=recursive, glob_pattern=_glob_for_datatrove(glob), add_file_path=False)
        self.glob = glob
        self._listing = None

    # -------------------------------------------------------------------------------- listing
    def wanted(self, rel: str) -> bool:
        return True

    def _roots(self) -> list[tuple[DataFolder, str | None, str, str]]:
        """Per given path: (folder, file name or None for a directory, id label, resolved root)."""
        from fsspec.core import url_to_fs

        out, used = [], {}
        for p in self.paths:
            try:
                fs, fpath = url_to_fs(p)
                is_dir = fs.isdir(fpath)
            except Exception:  # noqa: BLE001 - unreachable filesystem: read_file reports it
                fs, fpath, is_dir = None, p, False
            fpath = fpath.rstrip("/") or fpath
            if is_dir:
                folder, single = DataFolder(fpath, fs=fs), None
                label = posixpath.basename(fpath) or "root"
            else:
                parent = posixpath.dirname(fpath) or "."
                folder = DataFolder(parent, fs=fs) if fs is not None else DataFolder(parent)
                single = posixpath.basename(fpath)
                label = single
            n = used[label] = used.get(label, 0) + 1
            if n > 1:
                label = f"{label}~{n}"
            out.append((folder, single, label, folder.resolve_paths(single) if single else folder.resolve_paths("")))
        return out

    def _list(self) -> tuple[dict[str, FileRef], list[str], int]:
        """(refs by resolved path in reading order, directories without input files, files left out)."""
        if self._listing is not None:
            return self._listing
        refs: dict[str, FileRef] = {}
        empty: list[str] = []
        ignored = 0
        for folder, single, label, root in self._roots():
            if single is not None:
                full = folder.resolve_paths(single)
                refs.setdefault(full, FileRef(folder, single, full, label, root, ""))
                continue
            try:
                if self.glob_pattern:
                    # datatrove's glob (one listing); files it leaves out are not counted
                    chosen = folder.list_files(recursive=self.recursive, glob_pattern=self.glob_pattern)
                    if "/" not in (self.glob or ""):
                        top = folder.list_files(recursive=False, glob_pattern=self.glob)  # `**/` may skip the top
                        chosen = sorted(set(chosen) | set(top))
                else:
                    everything = folder.list_files(recursive=self.recursive)
                    chosen = [r for r in everything if self.wanted(r)]
                    ignored += len(everything) - len(chosen)
            except Exception as e:  # noqa: BLE001
                logger.warning(f"{self.name}: cannot list {root}: {e!r}")
                chosen = []
            if not chosen:
                empty.append(root)
            for rel in chosen:
                full = folder.resolve_paths(rel)
                refs.setdefault(full, FileRef(folder, rel, full, f"{label}/{rel}", root, rel))
        self._listing = (refs, empty, ignored)
        return self._listing

    def list_files(self) -> list[str]:
        """Every file this reader reads, in reading order (resolved paths)."""
        return list(self._list()[0])

    def get_shard(self, rank: int = 0, world_size: int = 1) -> list[str]:
        return self.list_files()[rank::world_size]

    def file_ref(self, filepath: str) -> FileRef:
        refs = self._list()[0]
        if filepath in refs:
            return refs[filepath]
        # a path outside the listing (a direct read_file call): a root of its own
        old = self.paths
        try:
            self.paths, self._listing = [filepath], None
            return next(iter(self._list()[0].values()))
        finally:
            self.paths, self._listing = old, None

    # -------------------------------------------------------------------------------- documents
    def read_ref(self, ref: FileRef) -> Iterator[Document]:  # pragma: no cover - abstract
        raise NotImplementedError

    def reject_doc(self, ref: FileRef, reason: str, detail: str) -> Document:  # pragma: no cover - abstract
        raise NotImplementedError

    def read_file(self, filepath: str) -> Iterator[Document]:
        """Documents of one file with final ids (``<source>:<key>...``, unique within the file); a missing or
        special file yields one reject document and is never opened."""
        ref = self.file_ref(filepath)
        kind, detail = ref.kind()
        if kind == "missing":
            docs: Iterator[Document] = iter([self.reject_doc(ref, self.reason_unreadable, detail)])
        elif kind == "special":
            docs = iter([self.reject_doc(ref, self.reason_special, detail)])
        else:
            docs = self.read_ref(ref)
        seen: set[str] = set()
        for doc in docs:
            doc.id = self._unique(f"{doc.metadata.get('source') or self.family}:{doc.id}", seen)
            sanitize_metadata(doc.metadata)
            yield doc

    @staticmethod
    def _unique(doc_id: str, seen: set[str]) -> str:
        doc_id = escape_text(doc_id)[0]
        out, n = doc_id, 1
        while out in seen:
            n += 1
            out = f"{doc_id}~{n}"
        seen.add(out)
        return out

    # -------------------------------------------------------------------------------- run
    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        refs, empty, ignored = self._list()
        if rank == 0:
            # counted once per run (rank 0), so the merged totals are the run's
            if ignored:
                self.stat_update("files/ignored", value=ignored)
            for root in empty:
                self.stat_update("roots/no_input_files")
                logger.warning(f"{self.name}: no input files in {root} (nothing to read there)")
        shard = list(refs)[rank::world_size]
        self._log_limit_scope(rank, world_size)
        for doc in self.read_files_shard(shard):
            self.update_doc_stats(doc)
            yield doc

