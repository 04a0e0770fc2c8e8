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
``pdf_special_file`` a FIFO / device / socket named like a PDF: never opened
``warc_*``         damage in a WARC carrying PDFs (the web reader's reason codes, one document per region)

Signals (for every PDF the probe could open): ``pdf__n_pages``, ``pdf__repaired`` (bool,
``pymupdf.Document.is_repaired``), ``pdf__missing_pages`` (int), ``pdf__trailer_lost`` (bool).
"""

from __future__ import annotations

import os
from typing import Iterator

from datatrove.data import Document, Media, MediaType

from assay.stages.common.readers import PathsReader, escape_text
from assay.stages.pdf import _isolate
from assay.stages.pdf._pdfdoc import open_pdf, structure_signals
from assay.stages.web.warc import WarcRecordIterator, _strip_uri, payload_truncated

REASON_ENCRYPTED = "pdf_encrypted"
REASON_CORRUPT = "pdf_corrupt"
REASON_ZERO_PAGES = "pdf_zero_pages"
REASON_OVERSIZED = "pdf_oversized"
REASON_TIMEOUT = "pdf_timeout"
REASON_UNREADABLE = "pdf_unreadable"
REASON_SPECIAL = "pdf_special_file"
PDF_READER_REASON_CODES = (
    REASON_ENCRYPTED, REASON_CORRUPT, REASON_ZERO_PAGES, REASON_OVERSIZED, REASON_TIMEOUT, REASON_UNREADABLE,
    REASON_SPECIAL,
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


class PdfReader(WarcRecordIterator, PathsReader):
    """Read PDFs from files, directories (recursive) and WARC/ARC files (``application/pdf`` records).

    Listing, sharding, ``limit``/``skip``, globs and fsspec paths come from datatrove's ``BaseDiskReader``
    (:class:`assay.stages.common.readers.PathsReader`); WARC files go through the same record iterator as
    web pages (:class:`assay.stages.web.warc.WarcRecordIterator`: resync after damage, one document per
    damaged region with its ``warc_*`` reason). Ids: ``pdf:<path relative to the given root>`` and
    ``pdf:<warc key>#<WARC-Record-ID>``; the absolute path stays in ``source_file`` / ``path``.

    Args:
        paths: files or directories (local or fsspec URLs); WARC/ARC files are scanned for PDF responses.
        glob: file-name pattern for directories (default: ``*.pdf`` plus WARC/ARC files).
        max_bytes: larger PDFs get ``pdf_oversized`` without being parsed.
        max_pages: PDFs with more pages get ``pdf_oversized``.
        timeout_s / max_memory_mb: per-document limits of the isolated validation parse.
        isolate: run the validation in a forked child (default True; False only for debugging).
        limit / skip: documents per rank, as in datatrove readers (-1: no limit).
    """

    name = "📄 PDF reader"
    type = "📖 - READER"
    family = "pdf"
    reason_unreadable = REASON_UNREADABLE
    reason_special = REASON_SPECIAL

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
        skip: int = 0,
        default_metadata: dict | None = None,
    ):
        super().__init__(paths, glob=glob, limit=int(limit), skip=skip, default_metadata=default_metadata)
        self.max_bytes = int(max_bytes)
        self.max_pages = int(max_pages)
        self.timeout_s = float(timeout_s)
        self.max_memory_mb = int(max_memory_mb)
        self.isolate = bool(isolate)

    # -- file listing ---------------------------------------------------------------------------
    def wanted(self, rel: str) -> bool:
        low = rel.lower()
        return low.endswith(".pdf") or _is_warc(low)

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

    def reject_doc(self, ref, reason: str, detail: str) -> Document:
        self.stat_update(f"reject/{reason}")
        meta = {"source": "pdf", "path": ref.full, "source_file": ref.full, "reject_reason": reason,
                "pdf__error": detail[:500]}
        if self.default_metadata:
            meta = self.default_metadata | meta
        return Document(text="", id=ref.key, metadata=meta)

    def read_ref(self, ref) -> Iterator[Document]:
        if _is_warc(ref.rel):
            yield from self.iter_warc(ref, self._process_record)
            return
        size = ref.size()
        local = ref.local_path
        data = None
        if local is not None and escape_text(local)[1] is None:
            if not os.access(local, os.R_OK):
                yield self.reject_doc(ref, REASON_UNREADABLE, "permission denied")
                return
        elif size is None or size <= self.max_bytes:
            # remote file, or a local name MuPDF cannot be handed: the bytes travel instead of the path
            try:
                with ref.open("rb") as fh:
                    data = fh.read(self.max_bytes + 1)
            except Exception as e:  # noqa: BLE001
                yield self.reject_doc(ref, REASON_UNREADABLE, repr(e))
                return
            size = len(data)
            local = None
        if size is None:
            yield self.reject_doc(ref, REASON_UNREADABLE, "size unknown")
            return
        yield self._make_doc(doc_id=ref.key, data=data, path=local, size=size,
                             meta={"path": ref.full, "source_file": ref.full, "content_type": "application/pdf"})

    def _process_record(self, record, it, ref, offset) -> Document | None:
        """A PDF response/resource record -> a PDF document; every other record is skipped (counted)."""
        if record.rec_type not in ("response", "resource"):
            self.stat_update(f"skipped/{record.rec_type}")
            return None
        if record.http_headers is not None:
            ctype = (record.http_headers.get_header("Content-Type") or "").lower()
        else:
            ctype = (record.rec_headers.get_header("Content-Type") or "").lower()
        url = _strip_uri(record.rec_headers.get_header("WARC-Target-URI")) or ""
        if "pdf" not in ctype and not url.lower().split("?")[0].endswith(".pdf"):
            self.stat_update("skipped/not_pdf")
            return None
        status = record.http_headers.get_statuscode() if record.http_headers is not None else "200"
        if status and not str(status).startswith("2"):
            self.stat_update("skipped/http_status")
            return None
        doc_id, meta = self._base_metadata(record, ref, offset)
        meta["record_id"] = record.rec_headers.get_header("WARC-Record-ID") or meta["record_id"]
        meta["content_type"] = ctype.split(";")[0].strip() or "application/pdf"
        stream = record.content_stream()
        data = stream.read(self.max_bytes + 1)
        size = len(data)
        if size > self.max_bytes:
            data = b""
            while stream.read(1 << 20):
                pass
        elif (getattr(record.raw_stream, "limit", 0) or 0) > 0 or payload_truncated(stream):
            # a clipped payload is no whole PDF
            self.stat_update(f"reject/{REASON_CORRUPT}")
            meta["reject_reason"] = REASON_CORRUPT
            return Document(text="", id=doc_id, metadata=meta)
        self.stat_update("emitted")
        return self._make_doc(doc_id=doc_id, data=data, path=None, size=size, meta=meta)
