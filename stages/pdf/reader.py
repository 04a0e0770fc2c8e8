"""PDF ingestion: files, directories and WARC records carrying PDFs.

Each PDF becomes one ``Document`` (``text=""`` until ``PdfTextLayer`` fills it) whose bytes or path
travel in ``doc.media[0]`` (``Media(type=MediaType.DOCUMENT)``). Every PDF is validated in a
forked child with a wall-clock and address-space limit (``assay.stages.pdf._isolate``), so an
encrypted, corrupt, bomb-like or endless file yields a document with a ``reject_reason``
instead of stalling or killing the worker:

``pdf_encrypted``  a password is needed to open it
``pdf_corrupt``    MuPDF cannot open it / not a PDF / the parser crashed / truncated WARC payload /
                   truncated file: MuPDF had to repair it (``pdf__repaired``) AND it lost its tail
                   (``pdf__trailer_lost``: no ``startxref`` after the last object) or its page tree
                   names pages / content streams that do not exist (``pdf__missing_pages`` > 0).
                   A repaired file with its trailer and every page present is kept (MuPDF repairs
                   many real-world files harmlessly, e.g. wrong xref offsets).
``pdf_zero_pages`` opens but has no page
``pdf_oversized``  more than ``max_bytes`` bytes or ``max_pages`` pages, or the parse exceeded
                   ``max_memory_mb``
``pdf_timeout``    the parse took longer than ``timeout_s``
``pdf_unreadable`` the file (or WARC) could not be read from disk at all

Signals (for every PDF the probe could open): ``pdf__n_pages``, ``pdf__repaired`` (bool,
``pymupdf.Document.is_repaired``), ``pdf__missing_pages`` (int), ``pdf__trailer_lost`` (bool).
"""

from __future__ import annotations

import fnmatch
import os
from typing import Iterator

from datatrove.data import Document, DocumentsPipeline, Media, MediaType
from datatrove.pipeline.base import PipelineStep

from assay.stages.pdf import _isolate
from assay.stages.pdf._pdfdoc import open_pdf, structure_signals

REASON_ENCRYPTED = "pdf_encrypted"
REASON_CORRUPT = "pdf_corrupt"
REASON_ZERO_PAGES = "pdf_zero_pages"
REASON_OVERSIZED = "pdf_oversized"
REASON_TIMEOUT = "pdf_timeout"
REASON_UNREADABLE = "pdf_unreadable"
PDF_READER_REASON_CODES = (
    REASON_ENCRYPTED, REASON_CORRUPT, REASON_ZERO_PAGES, REASON_OVERSIZED, REASON_TIMEOUT, REASON_UNREADABLE,
)

_WARC_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")


def _probe(src: bytes | str) -> dict:
    """Open the PDF and report what the reader needs (runs in the isolated child)."""
    d = open_pdf(src)
    try:
        if d.needs_pass:
            return {"encrypted": True}
        if not d.is_pdf:
            return {"not_pdf": True}
        n = d.page_count
        if n > 0:
            d.load_page(0)  # a page tree that cannot even load its first page is corrupt
        return {"n_pages": n, "encrypted": False, **structure_signals(d, src)}
    finally:
        d.close()


def is_truncated(info: dict) -> bool:
    """The truncation rule: repaired by MuPDF AND (trailer lost OR pages missing)."""
    return bool(info.get("repaired") and (info.get("trailer_lost") or info.get("missing_pages", 0) > 0))


def probe_pdf(
    src: bytes | str, *, max_pages: int = 2000, timeout_s: float = 30.0, max_memory_mb: int = 2048, isolate: bool = True
) -> tuple[str | None, dict]:
    """Return ``(reject_reason or None, signals)``; signals holds ``pdf__n_pages``, ``pdf__repaired``,
    ``pdf__missing_pages`` and ``pdf__trailer_lost`` when the probe got that far."""
    import pymupdf  # noqa: F401 - imported in the parent so forked children do not pay the import

    status, value = _isolate.run_isolated(_probe, src, timeout_s=timeout_s, max_memory_mb=max_memory_mb, isolate=isolate)
    if status == _isolate.TIMEOUT:
        return REASON_TIMEOUT, {}
    if status == _isolate.MEMORY:
        return REASON_OVERSIZED, {}
    if status != _isolate.OK:
        return REASON_CORRUPT, {}
    if value.get("encrypted"):
        return REASON_ENCRYPTED, {}
    if value.get("not_pdf"):
        return REASON_CORRUPT, {}
    n = value["n_pages"]
    sig = {"pdf__n_pages": n, "pdf__repaired": value["repaired"], "pdf__missing_pages": value["missing_pages"],
           "pdf__trailer_lost": value["trailer_lost"]}
    if n == 0:
        return REASON_ZERO_PAGES, sig
    if is_truncated(value):
        return REASON_CORRUPT, sig
    if max_pages and n > max_pages:
        return REASON_OVERSIZED, sig
    return None, sig


def validate_pdf(
    src: bytes | str, *, max_pages: int = 2000, timeout_s: float = 30.0, max_memory_mb: int = 2048, isolate: bool = True
) -> tuple[str | None, int | None]:
    """Return ``(reject_reason or None, n_pages or None)`` for a PDF path or bytes."""
    reason, sig = probe_pdf(src, max_pages=max_pages, timeout_s=timeout_s, max_memory_mb=max_memory_mb, isolate=isolate)
    return reason, sig.get("pdf__n_pages")


def _is_warc(path: str) -> bool:
    return path.lower().endswith(_WARC_SUFFIXES)


class PdfReader(PipelineStep):
    """Read PDFs from files, directories (recursive) and WARC/ARC files (``application/pdf`` records).

    Args:
        paths: files or directories; WARC/ARC files are scanned for PDF responses.
        glob: file-name pattern for directories (default: ``*.pdf`` plus WARC/ARC files).
        max_bytes: larger PDFs get ``pdf_oversized`` without being parsed.
        max_pages: PDFs with more pages get ``pdf_oversized``.
        timeout_s / max_memory_mb: per-document limits of the isolated validation parse.
        isolate: run the validation in a forked child (default True; False only for debugging).
        limit: stop after this many documents per rank (-1: no limit).
    """

    name = "📄 PDF reader"
    type = "📖 - READER"

    def __init__(
        self,
        paths: list[str] | str = (),
        glob: str | None = None,
        max_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 2000,
        timeout_s: float = 30.0,
        max_memory_mb: int = 2048,
        isolate: bool = True,
        limit: int = -1,
    ):
        super().__init__()
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.glob = glob
        self.max_bytes = int(max_bytes)
        self.max_pages = int(max_pages)
        self.timeout_s = float(timeout_s)
        self.max_memory_mb = int(max_memory_mb)
        self.isolate = bool(isolate)
        self.limit = int(limit)

    # -- file listing ---------------------------------------------------------------------------
    def _wanted(self, name: str) -> bool:
        if self.glob:
            return fnmatch.fnmatch(name, self.glob)
        low = name.lower()
        return low.endswith(".pdf") or _is_warc(low)

    def list_files(self) -> list[str]:
        out: list[str] = []
        for p in self.paths:
            if os.path.isdir(p):
                for root, dirs, files in os.walk(p):
                    dirs.sort()
                    out.extend(os.path.join(root, f) for f in sorted(files) if self._wanted(f))
            else:
                out.append(p)
        return sorted(dict.fromkeys(out))

    # -- documents ------------------------------------------------------------------------------
    def _make_doc(self, *, doc_id: str, data: bytes | None, path: str | None, size: int, meta: dict) -> Document:
        media = Media(id=doc_id, type=MediaType.DOCUMENT, url=meta.get("url") or path or doc_id, path=path,
                      media_bytes=data, length=size)
        doc = Document(text="", id=doc_id, media=[media], metadata={"source": "pdf", **meta, "pdf__bytes": size})
        sig: dict = {}
        if size > self.max_bytes:
            reason = REASON_OVERSIZED
        else:
            src = data if data is not None else path
            if data is not None and not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF" not in data[:1024]:
                reason = REASON_CORRUPT
            else:
                reason, sig = probe_pdf(src, max_pages=self.max_pages, timeout_s=self.timeout_s,
                                        max_memory_mb=self.max_memory_mb, isolate=self.isolate)
        doc.metadata.update(sig)
        if sig.get("pdf__repaired"):
            self.stat_update("repaired")
        if reason:
            doc.metadata["reject_reason"] = reason
            self.stat_update(f"reject/{reason}")
        return doc

    def _read_file(self, path: str) -> Iterator[Document]:
        try:
            size = os.path.getsize(path)
            if not os.access(path, os.R_OK):
                raise PermissionError(path)
        except OSError:
            doc = Document(text="", id=path, metadata={"source": "pdf", "path": path, "source_file": path,
                                                       "reject_reason": REASON_UNREADABLE})
            self.stat_update(f"reject/{REASON_UNREADABLE}")
            yield doc
            return
        yield self._make_doc(doc_id=path, data=None, path=path, size=size,
                             meta={"path": path, "source_file": path, "content_type": "application/pdf"})

    def _read_warc(self, path: str) -> Iterator[Document]:
        from warcio.archiveiterator import ArchiveIterator

        try:
            fh = open(path, "rb")
        except OSError:
            self.stat_update(f"reject/{REASON_UNREADABLE}")
            yield Document(text="", id=path, metadata={"source": "pdf", "path": path, "source_file": path,
                                                       "reject_reason": REASON_UNREADABLE})
            return
        with fh:
            try:
                for rec in ArchiveIterator(fh, arc2warc=True):
                    if rec.rec_type not in ("response", "resource"):
                        continue
                    ctype = ""
                    if rec.http_headers is not None:
                        ctype = (rec.http_headers.get_header("Content-Type") or "").lower()
                    else:
                        ctype = (rec.rec_headers.get_header("Content-Type") or "").lower()
                    url = rec.rec_headers.get_header("WARC-Target-URI") or ""
                    if "pdf" not in ctype and not url.lower().split("?")[0].endswith(".pdf"):
                        continue
                    status = rec.http_headers.get_statuscode() if rec.http_headers is not None else "200"
                    if status and not str(status).startswith("2"):
                        self.stat_update("skipped/http_status")
                        continue
                    record_id = rec.rec_headers.get_header("WARC-Record-ID") or url
                    meta = {
                        "url": url,
                        "record_id": record_id,
                        "date": rec.rec_headers.get_header("WARC-Date"),
                        "source_file": path,
                        "content_type": ctype.split(";")[0].strip() or "application/pdf",
                    }
                    try:
                        data = rec.content_stream().read(self.max_bytes + 1)
                    except Exception:  # noqa: BLE001 - truncated / broken record payload
                        self.stat_update(f"reject/{REASON_CORRUPT}")
                        yield Document(text="", id=record_id, metadata={"source": "pdf", **meta,
                                                                         "reject_reason": REASON_CORRUPT})
                        continue
                    size = len(data)
                    if size > self.max_bytes:
                        data = b""
                    yield self._make_doc(doc_id=record_id, data=data, path=None, size=size, meta=meta)
            except Exception:  # noqa: BLE001 - corrupt gzip / garbage between records: stop this file
                self.stat_update(f"reject/{REASON_UNREADABLE}")
                self.stat_update("files/aborted")
                yield Document(text="", id=path, metadata={"source": "pdf", "path": path, "source_file": path,
                                                           "reject_reason": REASON_UNREADABLE})

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        files = self.list_files()[rank::world_size]
        n = 0
        for path in files:
            reader = self._read_warc if _is_warc(path) else self._read_file
            for doc in reader(path):
                self.stat_update("documents")
                self.update_doc_stats(doc)
                yield doc
                n += 1
                if 0 <= self.limit <= n:
                    return
