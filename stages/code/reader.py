"""Code ingestion: directory trees, tar/zip archives (incl. .tar.zst), Parquet/JSONL of files.

Every file read becomes one Document (``metadata["source"] = "code"``, ``repo``, ``path``,
``license``, ``source_file``, ``code__encoding`` = the codec the bytes were decoded with, see
``assay.stages.code.inspection.decode_bytes``). Files that cannot be used keep flowing with ``text = ""`` and a
``reject_reason``: ``code_binary``, ``code_undecodable``, ``code_oversized``,
``code_archive_path_traversal``, ``code_archive_link``, ``code_archive_too_many_files``,
``code_archive_too_large``, ``code_corrupt_archive``, ``code_broken_record``, ``code_unreadable``.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
import tarfile
import zipfile
from typing import Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.readers.base import BaseReader

from assay.stages.code.inspection import decode_bytes

__all__ = ["CodeReader", "detect_license", "safe_member_path", "input_kind"]

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".zip")
TABLE_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".json.gz")
SKIP_DIRS = {".git", ".hg", ".svn", ".bzr", "CVS", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox"}

_CONTENT_KEYS = ("content", "text", "code", "source")
_PATH_KEYS = ("path", "max_stars_repo_path", "file_path", "filepath", "filename")
_REPO_KEYS = ("repo", "repo_name", "max_stars_repo_name", "repository")
_LICENSE_KEYS = ("license", "licenses", "max_stars_repo_licenses", "detected_licenses", "license_type")
_ID_KEYS = ("id", "blob_id", "hexsha")

_LICENSE_PATTERNS = [
    ("Apache-2.0", re.compile(r"Apache License,?\s+Version 2\.0", re.I)),
    ("AGPL-3.0", re.compile(r"GNU AFFERO GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("LGPL-3.0", re.compile(r"GNU LESSER GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("LGPL-2.1", re.compile(r"GNU LESSER GENERAL PUBLIC LICENSE\s+Version 2\.1", re.I)),
    ("GPL-3.0", re.compile(r"GNU GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("GPL-2.0", re.compile(r"GNU GENERAL PUBLIC LICENSE\s+Version 2", re.I)),
    ("MPL-2.0", re.compile(r"Mozilla Public License,?\s+(Version|v\.?)\s*2\.0", re.I)),
    ("MIT", re.compile(r"\bMIT License\b|Permission is hereby granted, free of charge, to any person", re.I)),
    ("BSD-3-Clause", re.compile(r"Neither the name of .{0,200}? nor the names of", re.I | re.S)),
    ("BSD-2-Clause", re.compile(r"Redistributions in binary form must reproduce the above copyright", re.I)),
    ("ISC", re.compile(r"Permission to use, copy, modify, and/?or distribute this software for any purpose", re.I)),
    ("Unlicense", re.compile(r"This is free and unencumbered software released into the public domain", re.I)),
    ("CC0-1.0", re.compile(r"CC0 1\.0 Universal", re.I)),
]
_LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|COPYRIGHT)(\.(md|txt|rst))?$", re.I)


def detect_license(text: str) -> str | None:
    """SPDX id of a LICENSE/COPYING text (first matching common licence), else None."""
    head = text[:20000]
    for spdx, rx in _LICENSE_PATTERNS:
        if rx.search(head):
            return spdx
    return None


def safe_member_path(name: str) -> str | None:
    """Normalised relative path of an archive member, or None if it escapes the archive root."""
    n = name.replace("\\", "/")
    if n.startswith("/") or re.match(r"^[A-Za-z]:", n):
        return None
    norm = posixpath.normpath(n)
    if norm == ".." or norm.startswith("../") or "/../" in f"/{norm}/":
        return None
    return norm if norm != "." else ""


def input_kind(path: str) -> str:
    p = path.lower()
    if os.path.isdir(path):
        return "dir"
    if p.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if p.endswith(TABLE_SUFFIXES):
        return "table"
    return "file"


def _archive_stem(path: str) -> str:
    base = os.path.basename(path)
    for suf in sorted(ARCHIVE_SUFFIXES + TABLE_SUFFIXES, key=len, reverse=True):
        if base.lower().endswith(suf):
            return base[: -len(suf)]
    return base


class CodeReader(BaseReader):
    """Read source files from directories, archives and Stack-style Parquet/JSONL tables.

    Args:
        paths: directories, archives (.tar[.gz|.bz2|.xz|.zst], .zip), tables (.parquet, .jsonl[.gz|.zst])
            or single files.
        glob: optional fnmatch pattern on the path relative to the tree/archive root.
        max_file_bytes: larger files are emitted with ``code_oversized`` (content not read).
        max_files: per input (tree/archive/table), further members yield one ``code_archive_too_many_files``.
        max_archive_bytes: uncompressed bytes read per archive before ``code_archive_too_large``.
        repo: repository name override (default: directory name / archive stem / table column).
        license: licence override (default: table column, else root LICENSE file of a tree/zip/tar).
    """

    name = "📂 Code reader"

    def __init__(
        self,
        paths: list[str] | str = (),
        *,
        glob: str | None = None,
        max_file_bytes: int = 1_000_000,
        max_files: int = 1_000_000,
        max_archive_bytes: int = 8 * 1024**3,
        repo: str | None = None,
        license: str | None = None,
        limit: int = -1,
        skip: int = 0,
        default_metadata: dict | None = None,
    ):
        super().__init__(limit=limit, skip=skip, default_metadata=default_metadata)
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.glob = glob
        self.max_file_bytes = int(max_file_bytes)
        self.max_files = int(max_files)
        self.max_archive_bytes = int(max_archive_bytes)
        self.repo = repo
        self.license = license

    # ---------------------------------------------------------------- units and sharding
    def _units(self) -> list[tuple[str, str, str | None]]:
        """(kind, path, root) work units in a deterministic order; trees expand to single files."""
        units: list[tuple[str, str, str | None]] = []
        for p in self.paths:
            kind = input_kind(p)
            if kind == "dir":
                root = os.path.abspath(p)
                files: list[str] = []
                for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                    dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                    files.extend(os.path.join(dirpath, f) for f in sorted(filenames))
                for f in files:
                    units.append(("tree_file", f, root))
            else:
                units.append((kind, os.path.abspath(p), None))
        return units

    def _match(self, rel: str) -> bool:
        if not self.glob:
            return True
        import fnmatch

        return fnmatch.fnmatch(rel, self.glob) or fnmatch.fnmatch(os.path.basename(rel), self.glob)

    # ---------------------------------------------------------------- document construction
    def _member_limits(self, path: str, rel: str, size: int, is_link: bool, n_files: int, total: int,
                       kw: dict) -> tuple[Document | None, bool, int]:
        """Limits shared by tar and zip members: (reject document or None, stop the archive, bytes so far)."""
        if n_files > self.max_files:
            return self._doc(doc_id=f"{path}#too_many_files", text="", path="",
                             reject="code_archive_too_many_files", **kw), True, total
        if is_link:
            return self._doc(doc_id=f"{path}/{rel}", text="", path=rel, reject="code_archive_link", **kw), False, total
        if size > self.max_file_bytes:
            return self._doc(doc_id=f"{path}/{rel}", text="", path=rel, reject="code_oversized",
                             extra={"n_bytes": size}, **kw), False, total
        total += size
        if total > self.max_archive_bytes:
            return self._doc(doc_id=f"{path}#too_large", text="", path="",
                             reject="code_archive_too_large", **kw), True, total
        return None, False, total

    def _doc(self, *, doc_id: str, text: str, repo: str | None, path: str, license: str | None,
             source_file: str, reject: str | None = None, extra: dict | None = None) -> Document:
        meta = {"source": "code", "repo": self.repo or repo, "path": path, "license": self.license or license,
                "source_file": source_file}
        if extra:
            meta.update(extra)
        if reject:
            meta["reject_reason"] = reject
            self.stat_update(f"reject/{reject}")
        if self.default_metadata:
            meta = self.default_metadata | meta
        self.stat_update("documents")
        return Document(text=text, id=doc_id, metadata=meta)

    def _from_bytes(self, content: bytes, *, doc_id: str, **kw) -> Document:
        text, reject, encoding = decode_bytes(content)
        # the encoding the text was decoded with (or the failed guess/declaration of an undecodable file)
        extra = {"code__encoding": encoding} if encoding else None
        return self._doc(doc_id=doc_id, text=text or "", reject=reject, extra=extra, **kw)

    # ---------------------------------------------------------------- readers
    def _read_tree_file(self, fpath: str, root: str, lic_cache: dict) -> Iterator[Document]:
        rel = os.path.relpath(fpath, root).replace(os.sep, "/")
        if not self._match(rel):
            return
        repo = os.path.basename(root)
        if root not in lic_cache:
            lic_cache[root] = None
            for f in sorted(os.listdir(root)):
                if _LICENSE_FILE.match(f) and os.path.isfile(os.path.join(root, f)):
                    try:
                        with open(os.path.join(root, f), "rb") as fh:
                            lic_cache[root] = detect_license(fh.read(20000).decode("utf-8", "replace"))
                    except OSError:
                        pass
                    if lic_cache[root]:
                        break
        kw = dict(doc_id=fpath, repo=repo, path=rel, license=lic_cache[root], source_file=fpath)
        if os.path.islink(fpath):
            target = os.path.realpath(fpath)
            if not (target == root or target.startswith(root + os.sep)):
                yield self._doc(text="", reject="code_archive_path_traversal", **kw)
                return
        try:
            size = os.path.getsize(fpath)
            if size > self.max_file_bytes:
                yield self._doc(text="", reject="code_oversized", extra={"n_bytes": size}, **kw)
                return
            with open(fpath, "rb") as fh:
                content = fh.read(self.max_file_bytes + 1)
        except OSError:
            yield self._doc(text="", reject="code_unreadable", **kw)
            return
        yield self._from_bytes(content, **kw)

    def _read_single_file(self, fpath: str) -> Iterator[Document]:
        root = os.path.dirname(fpath)
        yield from self._read_tree_file(fpath, root, {root: None})

    def _open_tar(self, path: str):
        if path.lower().endswith((".tar.zst", ".tzst")):
            import zstandard

            fh = open(path, "rb")
            stream = zstandard.ZstdDecompressor().stream_reader(fh)
            return tarfile.open(fileobj=stream, mode="r|"), fh
        return tarfile.open(path, mode="r:*"), None

    def _read_archive(self, path: str) -> Iterator[Document]:
        stem = _archive_stem(path)
        if path.lower().endswith(".zip"):
            yield from self._read_zip(path, stem)
        else:
            yield from self._read_tar(path, stem)

    def _member_doc(self, path: str, stem: str, name: str, lic: str | None):
        rel = safe_member_path(name)
        kw = dict(repo=stem, license=lic, source_file=path)
        if rel is None:
            return None, self._doc(doc_id=f"{path}/{name}", text="", path=name, reject="code_archive_path_traversal", **kw)
        return rel, kw

    def _read_tar(self, path: str, stem: str) -> Iterator[Document]:
        try:
            tf, fh = self._open_tar(path)
        except Exception:  # noqa: BLE001 - any open failure is a corrupt archive
            yield self._doc(doc_id=path, text="", repo=stem, path="", license=None, source_file=path,
                            reject="code_corrupt_archive")
            return
        n_files = 0
        total = 0
        lic = self._tar_license_prepass(path)
        try:
            for m in tf:
                if m.isdir():
                    continue
                rel, kw = self._member_doc(path, stem, m.name, lic)
                if rel is None:
                    yield kw
                    continue
                is_licence = bool(rel) and "/" not in rel and _LICENSE_FILE.match(rel) and m.isfile() and m.size < 200_000
                if not is_licence and not self._match(rel):
                    continue
                is_link = m.issym() or m.islnk()
                if not is_link and not m.isfile():
                    continue
                n_files += 1
                doc_id = f"{path}/{rel}"
                reject, stop, total = self._member_limits(path, rel, m.size, is_link, n_files, total, kw)
                if reject is not None:
                    yield reject
                if stop:
                    return
                if reject is not None:
                    continue
                f = tf.extractfile(m)
                content = f.read(self.max_file_bytes + 1) if f is not None else b""
                if is_licence:
                    lic = detect_license(content.decode("utf-8", "replace")) or lic
                    kw["license"] = lic
                    if not self._match(rel):
                        continue
                yield self._from_bytes(content, doc_id=doc_id, path=rel, **kw)
        except Exception:  # noqa: BLE001 - truncated / corrupt stream mid-way
            yield self._doc(doc_id=f"{path}#corrupt", text="", repo=stem, path="", license=lic, source_file=path,
                            reject="code_corrupt_archive")
        finally:
            tf.close()
            if fh is not None:
                fh.close()

    def _tar_license_prepass(self, path: str) -> str | None:
        """Root LICENSE of a (small) tar archive, found by a header pass before reading members."""
        try:
            if os.path.getsize(path) > 64 * 1024**2:
                return None
            tf, fh = self._open_tar(path)
        except Exception:  # noqa: BLE001
            return None
        try:
            for m in tf:
                rel = safe_member_path(m.name)
                if rel and "/" not in rel and _LICENSE_FILE.match(rel) and m.isfile() and m.size < 200_000:
                    found = detect_license(tf.extractfile(m).read().decode("utf-8", "replace"))
                    if found:
                        return found
        except Exception:  # noqa: BLE001
            return None
        finally:
            tf.close()
            if fh is not None:
                fh.close()
        return None

    def _read_zip(self, path: str, stem: str) -> Iterator[Document]:
        try:
            zf = zipfile.ZipFile(path)
            infos = zf.infolist()
        except Exception:  # noqa: BLE001
            yield self._doc(doc_id=path, text="", repo=stem, path="", license=None, source_file=path,
                            reject="code_corrupt_archive")
            return
        lic = None
        for info in infos:
            rel = safe_member_path(info.filename)
            if rel and "/" not in rel and _LICENSE_FILE.match(rel) and info.file_size < 200_000:
                try:
                    lic = detect_license(zf.read(info).decode("utf-8", "replace"))
                except Exception:  # noqa: BLE001
                    lic = None
                if lic:
                    break
        n_files = 0
        total = 0
        with zf:
            for info in infos:
                if info.is_dir():
                    continue
                rel, kw = self._member_doc(path, stem, info.filename, lic)
                if rel is None:
                    yield kw
                    continue
                if not self._match(rel):
                    continue
                n_files += 1
                doc_id = f"{path}/{rel}"
                # a unix symlink is stored in the external attributes
                is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
                reject, stop, total = self._member_limits(path, rel, info.file_size, is_link, n_files, total, kw)
                if reject is not None:
                    yield reject
                if stop:
                    return
                if reject is not None:
                    continue
                try:
                    with zf.open(info) as f:
                        content = f.read(self.max_file_bytes + 1)
                except Exception:  # noqa: BLE001 - bad CRC, unsupported compression, encrypted member
                    yield self._doc(doc_id=doc_id, text="", path=rel, reject="code_corrupt_archive", **kw)
                    continue
                yield self._from_bytes(content, doc_id=doc_id, path=rel, **kw)

    # ---------------------------------------------------------------- Stack-style tables
    def _table_rows(self, path: str) -> Iterator[dict | Exception]:
        low = path.lower()
        if low.endswith(".parquet"):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=256):
                yield from batch.to_pylist()
            return
        if low.endswith(".gz"):
            import gzip

            fh = gzip.open(path, "rb")
        elif low.endswith(".zst"):
            import zstandard

            fh = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        else:
            fh = open(path, "rb")
        with fh:
            for line in io.BufferedReader(fh) if low.endswith(".zst") else fh:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    yield row if isinstance(row, dict) else ValueError("not an object")
                except ValueError as e:
                    yield e

    def _read_table(self, path: str) -> Iterator[Document]:
        stem = _archive_stem(path)
        i = -1
        try:
            for i, row in enumerate(self._table_rows(path)):
                if i >= self.max_files:
                    yield self._doc(doc_id=f"{path}#too_many_files", text="", repo=stem, path="", license=None,
                                    source_file=path, reject="code_archive_too_many_files")
                    return
                if isinstance(row, Exception):
                    yield self._doc(doc_id=f"{path}#{i}", text="", repo=stem, path="", license=None, source_file=path,
                                    reject="code_broken_record")
                    continue
                yield self._table_doc(row, path, stem, i)
        except Exception:  # noqa: BLE001 - unreadable parquet / truncated gzip
            yield self._doc(doc_id=f"{path}#corrupt@{i + 1}", text="", repo=stem, path="", license=None,
                            source_file=path, reject="code_corrupt_archive")

    def _table_doc(self, row: dict, path: str, stem: str, i: int) -> Document:
        def first(keys):
            for k in keys:
                if row.get(k) not in (None, ""):
                    return row[k]
            return None

        rel = first(_PATH_KEYS) or f"record_{i}"
        rel = str(rel)
        repo = first(_REPO_KEYS)
        lic = first(_LICENSE_KEYS)
        if isinstance(lic, (list, tuple)):
            lic = ",".join(str(x) for x in lic) if lic else None
        rid = first(_ID_KEYS)
        doc_id = str(rid) if rid is not None else f"{path}#{i}"
        kw = dict(repo=str(repo) if repo is not None else stem, path=rel, license=str(lic) if lic else None,
                  source_file=path)
        content = first(_CONTENT_KEYS)
        if content is None:
            return self._doc(doc_id=doc_id, text="", reject="code_broken_record", **kw)
        if isinstance(content, str):
            if len(content) > self.max_file_bytes and len(content.encode("utf-8", "surrogatepass")) > self.max_file_bytes:
                return self._doc(doc_id=doc_id, text="", reject="code_oversized", **kw)
            if "\x00" in content[:8192]:
                return self._doc(doc_id=doc_id, text="", reject="code_binary", **kw)
            return self._doc(doc_id=doc_id, text=content, **kw)
        if isinstance(content, (bytes, bytearray)):
            if len(content) > self.max_file_bytes:
                return self._doc(doc_id=doc_id, text="", reject="code_oversized", **kw)
            return self._from_bytes(bytes(content), doc_id=doc_id, **kw)
        return self._doc(doc_id=doc_id, text="", reject="code_broken_record", **kw)

    # ---------------------------------------------------------------- run
    def read_unit(self, kind: str, path: str, root: str | None, lic_cache: dict) -> Iterator[Document]:
        if kind == "tree_file":
            yield from self._read_tree_file(path, root, lic_cache)
        elif kind == "archive":
            yield from self._read_archive(path)
        elif kind == "table":
            yield from self._read_table(path)
        elif not os.path.exists(path):
            yield self._doc(doc_id=path, text="", repo=None, path=os.path.basename(path), license=None,
                            source_file=path, reject="code_unreadable")
        else:
            yield from self._read_single_file(path)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        units = self._units()
        mine = units[rank::world_size]
        lic_cache: dict = {}
        n = 0
        skipped = 0
        for kind, path, root in mine:
            self.stat_update("input_files")
            for doc in self.read_unit(kind, path, root, lic_cache):
                if skipped < self.skip:
                    skipped += 1
                    continue
                if self.limit != -1 and n >= self.limit:
                    return
                n += 1
                self.update_doc_stats(doc)
                yield doc
