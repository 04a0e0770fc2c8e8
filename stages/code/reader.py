"""Code ingestion: directory trees, tar/zip archives (incl. .tar.zst), Parquet/JSONL of files.

Every file read becomes one Document (``metadata["source"] = "code"``, ``repo``, ``path``,
``license``, ``source_file``, ``code__encoding`` = the codec the bytes were decoded with, see
``assay.stages.code.inspection.decode_bytes``). Files that cannot be used keep flowing with ``text = ""`` and a
``reject_reason``: ``code_binary``, ``code_undecodable``, ``code_oversized``,
``code_archive_path_traversal``, ``code_archive_link``, ``code_archive_too_many_files``,
``code_archive_too_large``, ``code_corrupt_archive``, ``code_broken_record``, ``code_unreadable``,
``code_special_file`` (a FIFO / device / socket, in a tree or as a tar member: never opened; a symlink to a
directory), ``code_archive_skipped`` (an archive inside a source folder with ``archives="skip"``).

Listing, sharding, ``limit``/``skip``, globs and fsspec paths come from datatrove's ``BaseDiskReader``
(:class:`assay.stages.common.readers.PathsReader`). Ids are relative to the root that was given:
``code:<root name>/<path>``, ``code:<archive key>/<member>``, ``code:<table key>#<row id or number>``
(a key repeated inside one archive or table gets ``~2``, ``~3``); the absolute path stays in
``source_file``. Archives found inside a source folder are read like archives given on their own.
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

from datatrove.data import Document

from assay.stages.code.inspection import decode_bytes, strip_notebook
from assay.stages.common.readers import PathsReader

__all__ = ["CodeReader", "detect_license", "safe_member_path", "input_kind"]

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".zip")
TABLE_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".json.gz")
NOTEBOOK_FACTOR = 16  # a .ipynb may be this many times max_file_bytes before its outputs are stripped
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
    if "://" not in path and os.path.isdir(path):
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


class CodeReader(PathsReader):
    """Read source files from directories, archives and Stack-style Parquet/JSONL tables.

    Args:
        paths: directories, archives (.tar[.gz|.bz2|.xz|.zst], .zip), tables (.parquet, .jsonl[.gz|.zst])
            or single files; local paths or fsspec URLs.
        glob: optional pattern on the path relative to the tree/archive root (a name at any depth, or a
            path with ``/``).
        max_file_bytes: larger files are emitted with ``code_oversized`` (content not read).
        max_files: per input (tree/archive/table), further members yield one ``code_archive_too_many_files``.
        max_archive_bytes: uncompressed bytes read per archive before ``code_archive_too_large``.
        archives: ``read`` (default) reads an archive found inside a source folder member by member;
            ``skip`` gives it one ``code_archive_skipped`` document.
        repo: repository name override (default: directory name / archive stem / table column).
        license: licence override (default: table column, else root LICENSE file of a tree/zip/tar).
    """

    name = "📂 Code reader"
    family = "code"
    reason_unreadable = "code_unreadable"
    reason_special = "code_special_file"

    def __init__(
        self,
        paths: list[str] | str = (),
        *,
        glob: str | None = None,
        max_file_bytes: int = 1_000_000,
        max_files: int = 1_000_000,
        max_archive_bytes: int = 8 * 1024**3,
        archives: str = "read",
        repo: str | None = None,
        license: str | None = None,
        limit: int = -1,
        skip: int = 0,
        default_metadata: dict | None = None,
    ):
        super().__init__(paths, glob=glob, limit=limit, skip=skip, default_metadata=default_metadata)
        if archives not in ("read", "skip"):
            raise ValueError(f"archives must be 'read' or 'skip', not {archives!r}")
        self.max_file_bytes = int(max_file_bytes)
        self.max_files = int(max_files)
        self.max_archive_bytes = int(max_archive_bytes)
        self.archives = archives
        self.repo = repo
        self.license = license
        self._lic_cache: dict = {}

    # ---------------------------------------------------------------- listing
    def wanted(self, rel: str) -> bool:
        return not any(part in SKIP_DIRS for part in rel.split("/")[:-1])

    def _match(self, rel: str) -> bool:
        if not self.glob:
            return True
        import fnmatch

        return fnmatch.fnmatch(rel, self.glob) or fnmatch.fnmatch(posixpath.basename(rel), self.glob)

    # ---------------------------------------------------------------- document construction
    def _member_limits(self, key: str, rel: str, size: int, is_link: bool, n_files: int, total: int,
                       kw: dict) -> tuple[Document | None, bool, int]:
        """Limits shared by tar and zip members: (reject document or None, stop the archive, bytes so far)."""
        if n_files > self.max_files:
            return self._doc(doc_id=f"{key}#too_many_files", text="", path="",
                             reject="code_archive_too_many_files", **kw), True, total
        if is_link:
            return self._doc(doc_id=f"{key}/{rel}", text="", path=rel, reject="code_archive_link", **kw), False, total
        if size > self.max_file_bytes:
            return self._doc(doc_id=f"{key}/{rel}", text="", path=rel, reject="code_oversized",
                             extra={"n_bytes": size}, **kw), False, total
        total += size
        if total > self.max_archive_bytes:
            return self._doc(doc_id=f"{key}#too_large", text="", path="",
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
        return Document(text=text, id=doc_id, metadata=meta)

    def _from_bytes(self, content: bytes, *, doc_id: str, **kw) -> Document:
        extra: dict = dict(kw.pop("extra", None) or {})
        if kw.get("path", "").lower().endswith(".ipynb"):
            stripped = strip_notebook(content)
            if stripped is not None and len(stripped) < len(content):
                # outputs and attachments (base64 images) are no code: the cells are kept
                extra["code__notebook_stripped_bytes"] = len(content) - len(stripped)
                content = stripped
        text, reject, encoding = decode_bytes(content)
        # the encoding the text was decoded with (or the failed guess/declaration of an undecodable file)
        if encoding:
            extra["code__encoding"] = encoding
        return self._doc(doc_id=doc_id, text=text or "", reject=reject, extra=extra or None, **kw)

    def reject_doc(self, ref, reason: str, detail: str) -> Document:
        repo = posixpath.basename(ref.root) if ref.root_rel else None
        return self._doc(doc_id=ref.key, text="", repo=repo, path=ref.root_rel or ref.name, license=None,
                         source_file=ref.full, reject=reason, extra={"code__error": detail[:500]})

    # ---------------------------------------------------------------- readers
    def read_ref(self, ref) -> Iterator[Document]:
        low = ref.rel.lower()
        in_tree = bool(ref.root_rel)
        if low.endswith(ARCHIVE_SUFFIXES):
            if in_tree and self.archives == "skip":
                yield self.reject_doc(ref, "code_archive_skipped", "archive inside a source folder (archives=skip)")
                return
            if in_tree:
                self.stat_update("archives_in_tree")
            yield from self._read_archive(ref)
        elif low.endswith(TABLE_SUFFIXES) and not in_tree:
            yield from self._read_table(ref)
        else:
            yield from self._read_tree_file(ref)

    def _root_license(self, ref) -> str | None:
        if not ref.root_rel:
            return None
        if ref.root not in self._lic_cache:
            self._lic_cache[ref.root] = None
            tops = sorted(r.rel for r in self._list()[0].values() if r.root == ref.root and "/" not in r.root_rel
                          and _LICENSE_FILE.match(r.root_rel))
            for rel in tops:
                try:
                    with ref.folder.open(rel, "rb") as fh:
                        self._lic_cache[ref.root] = detect_license(fh.read(20000).decode("utf-8", "replace"))
                except Exception:  # noqa: BLE001
                    pass
                if self._lic_cache[ref.root]:
                    break
        return self._lic_cache[ref.root]

    def _read_tree_file(self, ref) -> Iterator[Document]:
        rel = ref.root_rel or ref.name
        if ref.root_rel and not self._match(rel):
            return
        repo = posixpath.basename(ref.root) if ref.root_rel else posixpath.basename(posixpath.dirname(ref.full))
        kw = dict(doc_id=ref.key, repo=repo, path=rel, license=self._root_license(ref), source_file=ref.full)
        local = ref.local_path
        if local is not None and ref.root_rel and os.path.islink(local):
            target = os.path.realpath(local)
            root = os.path.realpath(ref.root)
            if not (target == root or target.startswith(root + os.sep)):
                yield self._doc(text="", reject="code_archive_path_traversal", **kw)
                return
        # a notebook is mostly outputs (base64 images): it is read up to NOTEBOOK_FACTOR x the limit and the
        # limit applies to what is left once outputs and attachments are stripped
        limit = self.max_file_bytes * (NOTEBOOK_FACTOR if rel.lower().endswith(".ipynb") else 1)
        try:
            size = ref.size()
            if size is not None and size > limit:
                yield self._doc(text="", reject="code_oversized", extra={"n_bytes": size}, **kw)
                return
            with ref.open("rb") as fh:
                content = fh.read(limit + 1)
        except Exception:  # noqa: BLE001 - any I/O failure is a reject, not a crash
            yield self._doc(text="", reject="code_unreadable", **kw)
            return
        if len(content) > limit:
            yield self._doc(text="", reject="code_oversized", extra={"n_bytes": len(content)}, **kw)
            return
        if limit > self.max_file_bytes:
            stripped = strip_notebook(content)
            if stripped is None or len(stripped) > self.max_file_bytes:
                yield self._doc(text="", reject="code_oversized", extra={"n_bytes": len(content)}, **kw)
                return
        yield self._from_bytes(content, **kw)

    def _open_tar(self, ref):
        fh = ref.open("rb")
        if ref.rel.lower().endswith((".tar.zst", ".tzst")):
            import zstandard

            stream = zstandard.ZstdDecompressor().stream_reader(fh)
            return tarfile.open(fileobj=stream, mode="r|"), fh
        return tarfile.open(fileobj=fh, mode="r:*"), fh

    def _read_archive(self, ref) -> Iterator[Document]:
        stem = _archive_stem(ref.name)
        if ref.rel.lower().endswith(".zip"):
            yield from self._read_zip(ref, stem)
        else:
            yield from self._read_tar(ref, stem)

    def _member_doc(self, ref, stem: str, name: str, lic: str | None):
        rel = safe_member_path(name)
        kw = dict(repo=stem, license=lic, source_file=ref.full)
        if rel is None:
            return None, self._doc(doc_id=f"{ref.key}/{name}", text="", path=name,
                                   reject="code_archive_path_traversal", **kw)
        return rel, kw

    def _read_tar(self, ref, stem: str) -> Iterator[Document]:
        try:
            tf, fh = self._open_tar(ref)
        except Exception:  # noqa: BLE001 - any open failure is a corrupt archive
            yield self._doc(doc_id=ref.key, text="", repo=stem, path="", license=None, source_file=ref.full,
                            reject="code_corrupt_archive")
            return
        n_files = 0
        total = 0
        lic = self._tar_license_prepass(ref)
        try:
            for m in tf:
                if m.isdir():
                    continue
                rel, kw = self._member_doc(ref, stem, m.name, lic)
                if rel is None:
                    yield kw
                    continue
                is_licence = bool(rel) and "/" not in rel and _LICENSE_FILE.match(rel) and m.isfile() and m.size < 200_000
                if not is_licence and not self._match(rel):
                    continue
                is_link = m.issym() or m.islnk()
                if not is_link and not m.isfile():
                    # FIFO, character/block device or another special member: a reject row, never read
                    what = "fifo" if m.isfifo() else "device" if m.isdev() else f"type {m.type!r}"
                    yield self._doc(doc_id=f"{ref.key}/{rel}", text="", path=rel, reject="code_special_file",
                                    extra={"code__error": f"special tar member: {what}"}, **kw)
                    continue
                n_files += 1
                doc_id = f"{ref.key}/{rel}"
                reject, stop, total = self._member_limits(ref.key, rel, m.size, is_link, n_files, total, kw)
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
            yield self._doc(doc_id=f"{ref.key}#corrupt", text="", repo=stem, path="", license=lic,
                            source_file=ref.full, reject="code_corrupt_archive")
        finally:
            tf.close()
            fh.close()

    def _tar_license_prepass(self, ref) -> str | None:
        """Root LICENSE of a (small) tar archive, found by a header pass before reading members."""
        try:
            size = ref.size()
            if size is None or size > 64 * 1024**2:
                return None
            tf, fh = self._open_tar(ref)
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
            fh.close()
        return None

    def _read_zip(self, ref, stem: str) -> Iterator[Document]:
        fh = None
        try:
            fh = ref.open("rb")
            zf = zipfile.ZipFile(fh)
            infos = zf.infolist()
        except Exception:  # noqa: BLE001
            if fh is not None:
                fh.close()
            yield self._doc(doc_id=ref.key, text="", repo=stem, path="", license=None, source_file=ref.full,
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
        with fh, zf:
            for info in infos:
                if info.is_dir():
                    continue
                rel, kw = self._member_doc(ref, stem, info.filename, lic)
                if rel is None:
                    yield kw
                    continue
                if not self._match(rel):
                    continue
                n_files += 1
                doc_id = f"{ref.key}/{rel}"
                # a unix symlink is stored in the external attributes
                is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
                reject, stop, total = self._member_limits(ref.key, rel, info.file_size, is_link, n_files, total, kw)
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
    def _table_rows(self, ref) -> Iterator[dict | Exception]:
        low = ref.rel.lower()
        with ref.open("rb") as raw:
            if low.endswith(".parquet"):
                import pyarrow.parquet as pq

                pf = pq.ParquetFile(raw)
                for batch in pf.iter_batches(batch_size=256):
                    yield from batch.to_pylist()
                return
            if low.endswith(".gz"):
                import gzip

                fh = gzip.GzipFile(fileobj=raw, mode="rb")
            elif low.endswith(".zst"):
                import zstandard

                fh = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw))
            else:
                fh = raw
            for line in fh:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    yield row if isinstance(row, dict) else ValueError("not an object")
                except ValueError as e:
                    yield e

    def _read_table(self, ref) -> Iterator[Document]:
        stem = _archive_stem(ref.name)
        i = -1
        try:
            for i, row in enumerate(self._table_rows(ref)):
                if i >= self.max_files:
                    yield self._doc(doc_id=f"{ref.key}#too_many_files", text="", repo=stem, path="", license=None,
                                    source_file=ref.full, reject="code_archive_too_many_files")
                    return
                if isinstance(row, Exception):
                    yield self._doc(doc_id=f"{ref.key}#{i}", text="", repo=stem, path="", license=None,
                                    source_file=ref.full, reject="code_broken_record")
                    continue
                yield self._table_doc(row, ref, stem, i)
        except Exception:  # noqa: BLE001 - unreadable parquet / truncated gzip
            yield self._doc(doc_id=f"{ref.key}#corrupt@{i + 1}", text="", repo=stem, path="", license=None,
                            source_file=ref.full, reject="code_corrupt_archive")

    def _table_doc(self, row: dict, ref, stem: str, i: int) -> Document:
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
        doc_id = f"{ref.key}#{rid}" if rid is not None else f"{ref.key}#{i}"
        kw = dict(repo=str(repo) if repo is not None else stem, path=rel, license=str(lic) if lic else None,
                  source_file=ref.full)
        extra = {"code__row_id": str(rid)} if rid is not None else None
        content = first(_CONTENT_KEYS)
        if content is None:
            return self._doc(doc_id=doc_id, text="", reject="code_broken_record", extra=extra, **kw)
        if isinstance(content, str):
            if len(content) > self.max_file_bytes and len(content.encode("utf-8", "surrogatepass")) > self.max_file_bytes:
                return self._doc(doc_id=doc_id, text="", reject="code_oversized", extra=extra, **kw)
            if "\x00" in content[:8192]:
                return self._doc(doc_id=doc_id, text="", reject="code_binary", extra=extra, **kw)
            try:
                content.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: no valid text
                return self._doc(doc_id=doc_id, text="", reject="code_undecodable", extra=extra, **kw)
            return self._doc(doc_id=doc_id, text=content, extra=extra, **kw)
        if isinstance(content, (bytes, bytearray)):
            if len(content) > self.max_file_bytes:
                return self._doc(doc_id=doc_id, text="", reject="code_oversized", extra=extra, **kw)
            return self._from_bytes(bytes(content), doc_id=doc_id, extra=extra, **kw)
        return self._doc(doc_id=doc_id, text="", reject="code_broken_record", extra=extra, **kw)
