"""WARC / ARC / WET ingestion as a datatrove reader.

The record-level parsing (resync after damage, charset decoding, payload checks) lives in
:mod:`assay.io.warc`, the project's one WARC parser (datatrove-free, shared with the PDF reader and the
classifiers' ``warc_html`` builder); this module turns its records and damage reports into documents.
Built on ``warcio`` (the only parser that reads every quirk in ``../shared/data/warc``: ARC files,
wget/Heritrix records, ``WARC-Target-URI: <...>``, gzip members holding several records, chunked
transfer encoding, ``Content-Encoding: gzip`` payloads, clipped records).

Every record read is accounted for in the step stats:

* ``records`` (and ``records/<warc-type>``): every record parsed from a file;
* exactly one outcome per record: ``emitted`` (a document was yielded), ``skipped/<why>`` (not an
  HTML response, e.g. ``skipped/request``, ``skipped/non_html``, ``skipped/pdf``,
  ``skipped/http_status``, ``skipped/revisit``) or ``reject/<reason>`` (a document with
  ``metadata["reject_reason"]`` was yielded);
* damage does not end a file: after a corrupt gzip member, junk between gzip members or bytes that are
  no record header, reading resumes at the next gzip member that decompresses into a record
  (:func:`find_gzip_member`) or, in uncompressed files and inside a member, at the next ``WARC/1.x``
  line at a line start (stats ``resync/gzip_member``, ``resync/line``);
* each damaged region (and an unreadable file) yields ONE document with ``text=""``, a
  ``reject_reason`` (``warc_corrupt_gzip``, ``warc_invalid_record``, ``warc_unreadable_file``), id
  ``web:<file key>#<offset of the damage>`` (just ``web:<file key>`` when nothing at all could be read),
  ``warc__offset``/``warc__resync_offset`` and stats ``reject/<reason>`` + ``damaged_regions``
  (+ ``files/aborted`` when the damage runs to the end of the file). When the damage sits in the
  payload of a record whose header was read, that record's reject document stands for the region.
  So ``records == emitted + skipped/* + reject/* - damaged_regions``. Padding (newlines, NULs) after or
  between gzip members is not damage (stat ``gzip_padding``).
* a file that holds no record at all (a text file named ``.warc.gz``) is one ``warc_not_an_archive``
  document (warcio would read lines with five fields as ARC headers); a FIFO / device is one
  ``warc_special_file`` document and is never opened; a record whose ``Content-Length`` is no usable length
  (``99999999999999999999``) is ``warc_invalid_record`` and reading resumes after it; a page whose
  ``Content-Encoding`` body stops before its compressed stream ends is ``warc_truncated_payload``
  (``warc__truncated = "content-encoding"``).

Ids: ``web:<file key>#<WARC-Record-ID>`` (ARC records: ``#<offset>``), the file key being the path relative
to the root given (``assay.stages.common.readers``); a key repeated in one file gets ``~2``, ``~3``.
Listing, sharding, ``limit``/``skip``, globs and fsspec paths come from datatrove's ``BaseDiskReader``.
"""

from __future__ import annotations

import re
from typing import Iterator

from datatrove.data import Document

from assay.io.warc import (  # noqa: F401 - the parser lives in assay.io.warc; names re-exported for users
    _HTML_TYPES,
    _MAX_CONTENT_LENGTH,
    _WARC_TYPES,
    REASON_CORRUPT_GZIP,
    REASON_DECODE,
    REASON_INVALID,
    REASON_NOT_AN_ARCHIVE,
    REASON_SPECIAL,
    REASON_TRUNCATED,
    REASON_TRUNCATED_PAYLOAD,
    REASON_UNREADABLE,
    WARC_REASON_CODES,
    WarcDamage,
    WarcFileIterator,
    WarcRecordError,
    _charset_from_content_type,
    _mime,
    _strip_uri,
    classify_payload,
    decode_html_bytes,
    find_gzip_member,
    is_record_start_line,
    payload_truncated,
    read_payload,
    record_content_type,
    sniff_archive,
)
from assay.stages.common.readers import PathsReader

# file names picked up when a directory is given and no glob is set
_ARCHIVE_NAME_RE = re.compile(r"\.(warc|arc|wet|wat)(\.(warc|wet|wat))*(\.gz)?$", re.IGNORECASE)


def expand_paths(paths: list[str] | str, glob: str | None = None) -> list[str]:
    """The files a :class:`WarcReader` reads for these paths (datatrove listing; directories keep files
    matching ``glob`` or, without a glob, files named like archives: ``*.warc[.gz]``, ``*.arc[.gz]``,
    ``*.wet[.gz]``, ``*.wat[.gz]``). Explicit file paths are always kept."""
    return WarcReader(paths, glob=glob).list_files()


class WarcRecordIterator:
    """Reads every record of one WARC/ARC file through warcio with resync after damage; the callback
    turns a record into a document (or None). Used by :class:`WarcReader` (HTML pages) and by
    ``assay.stages.pdf.reader.PdfReader`` (PDF payloads): one parser, one accounting, one id scheme
    (``<source>:<file key>#<record id>``; a damaged region ``<source>:<file key>#<offset>``; a whole file
    ``<source>:<file key>``).

    The host class provides ``stat_update``, ``default_metadata`` and ``family``."""

    family = "web"

    def _reject_file_doc(self, ref, reason: str, detail: str, offset: int | None = None,
                         *, resync_offset: int | None = None, to_eof: bool = True) -> Document:
        """One document for a damaged region (or a whole unreadable file when ``offset`` is None).

        Stats: ``reject/<reason>`` and ``damaged_regions``; ``files/aborted`` when nothing after the damage
        could be read (the region runs to the end of the file)."""
        self.stat_update(f"reject/{reason}", "damaged_regions")
        if to_eof:
            self.stat_update("files/aborted")
        doc_id = ref.key if offset is None else f"{ref.key}#{offset}"
        meta = {
            "source": self.family,
            "source_file": ref.full,
            "url": None,
            "date": None,
            "record_id": None,
            "content_type": None,
            "reject_reason": reason,
            "warc__error": detail[:500],
        }
        if offset is not None:
            meta["warc__offset"] = offset
            meta["warc__resync_offset"] = resync_offset
        if self.default_metadata:
            meta = self.default_metadata | meta
        return Document(text="", id=doc_id, metadata=meta)


    def iter_warc(self, ref, process) -> Iterator[Document]:
        """Yield documents for one archive; never raises on bad input. ``process(record, it, ref, offset)``
        returns the record's document or None (skipped, counted by the callback).

        The parsing (resync after damage, one event per damaged region) is :class:`assay.io.warc.WarcFileIterator`;
        this turns its events into documents: each damaged region is ONE document (``id = <key>#<offset of the
        damage>``, ``text = ""``, a reason code, ``warc__offset`` and ``warc__resync_offset``), or the record's
        own reject document when the damage sits in the payload of a record already parsed. A file that holds
        no record at all (a text file named ``.warc.gz``) is one ``warc_not_an_archive`` document."""
        try:
            fh = ref.open("rb")
        except Exception as e:  # noqa: BLE001 - any open failure is a reject, not a crash
            yield self._reject_file_doc(ref, REASON_UNREADABLE, repr(e))
            return
        walker = WarcFileIterator(fh, self.stat_update)

        def run(record, offset):
            self._arc = walker.arc
            return process(record, walker.it, ref, offset)

        try:
            for ev in walker.events(run, reason_of=lambda d: d.metadata.get("reject_reason")):
                if isinstance(ev, WarcDamage):
                    doc = self._reject_file_doc(ref, ev.reason, ev.detail, ev.offset,
                                                resync_offset=ev.resync_offset, to_eof=ev.to_eof)
                    if ev.repeated:  # two regions inside one gzip member
                        doc.id = f"{doc.id}-{ev.index}"
                    yield doc
                elif isinstance(ev, WarcRecordError):
                    self._arc = walker.arc
                    yield self._record_reject(ev.record, ref, ev.offset, ev.reason, ev.detail)
                else:
                    yield ev
        finally:
            try:
                fh.close()
            except Exception:  # noqa: BLE001
                pass

    def _base_metadata(self, record, ref, offset: int | None) -> tuple[str, dict]:
        """``(id, metadata)`` of a record: id ``<file key>#<WARC-Record-ID>`` (ARC records and records without
        an id: ``<file key>#<offset>``, as warcio invents random ids for them)."""
        h = record.rec_headers
        url = _strip_uri(h.get_header("WARC-Target-URI"))
        date = h.get_header("WARC-Date")
        record_id = _strip_uri(h.get_header("WARC-Record-ID"))
        if getattr(self, "_arc", False) or not record_id:
            # warcio invents a random uuid for ARC records: use a stable id instead
            record_id = f"{ref.name}#{offset}"
            doc_id = f"{ref.key}#{offset}"
        else:
            doc_id = f"{ref.key}#{record_id}"
        ct = record_content_type(record)
        meta = {
            "source": self.family,
            "url": url,
            "date": date,
            "record_id": record_id,
            "content_type": _mime(ct) or None,
            "source_file": ref.full,
            "warc__type": record.rec_type,
            "warc__offset": offset,
        }
        return doc_id, meta

    def _record_reject(self, record, ref, offset, reason, detail, text: str = "") -> Document:
        try:
            doc_id, meta = self._base_metadata(record, ref, offset)
        except Exception:  # noqa: BLE001
            doc_id, meta = f"{ref.key}#{offset}", {"source": self.family, "source_file": ref.full, "url": None,
                                                    "date": None, "record_id": None, "content_type": None}
        meta["reject_reason"] = reason
        meta["warc__error"] = detail[:500]
        self.stat_update(f"reject/{reason}")
        if self.default_metadata:
            meta = self.default_metadata | meta
        return Document(text=text, id=doc_id, metadata=meta)


# ----------------------------------------------------------------------------------------------
# reader step
# ----------------------------------------------------------------------------------------------
class WarcReader(WarcRecordIterator, PathsReader):
    """Read WARC/ARC/WET files (gzip or plain) into one document per HTML response.

    Listing, sharding, ``limit``/``skip``, globs and fsspec paths come from datatrove's ``BaseDiskReader``
    (through :class:`assay.stages.common.readers.PathsReader`).

    Args:
        paths: files and/or directories (searched recursively), local paths or fsspec URLs.
        glob: pattern for files inside directories (a file name at any depth, or a path with ``/``;
            default: archive-looking names, and a folder without any is reported).
        html_only: emit only HTML responses (and WET ``conversion`` plain text); everything else is
            skipped and counted. With ``False`` other textual payloads (``text/*``, json, xml) are
            emitted too; binary payloads are still skipped.
        ok_status_only: skip HTTP responses whose status is not 2xx (redirect stubs, errors).
        include_wet: emit WET ``conversion`` records (already plain text; ``content_type=text/plain``).
        max_payload_bytes: payloads larger than this are cut to this size before decoding and get
            ``warc__payload_cut=True`` (protects memory on giant records).
        limit / skip / default_metadata: as in datatrove readers.
    """

    name = "🕷 assay WARC"
    family = "web"
    reason_unreadable = REASON_UNREADABLE
    reason_special = REASON_SPECIAL
    _requires_dependencies = ["warcio"]

    def __init__(
        self,
        paths: list[str] | str = (),
        glob: str | None = None,
        html_only: bool = True,
        ok_status_only: bool = True,
        include_wet: bool = True,
        max_payload_bytes: int = 10_000_000,
        limit: int = -1,
        skip: int = 0,
        default_metadata: dict | None = None,
    ):
        super().__init__(paths, glob=glob, limit=limit, skip=skip, default_metadata=default_metadata)
        self.html_only = html_only
        self.ok_status_only = ok_status_only
        self.include_wet = include_wet
        self.max_payload_bytes = max_payload_bytes

    def wanted(self, rel: str) -> bool:
        return bool(_ARCHIVE_NAME_RE.search(rel))

    def reject_doc(self, ref, reason: str, detail: str) -> Document:
        return self._reject_file_doc(ref, reason, detail)

    def read_ref(self, ref) -> Iterator[Document]:
        yield from self.iter_warc(ref, self._process_record)

    def _process_record(self, record, it, ref, offset: int | None) -> Document | None:
        rec_type = record.rec_type
        if rec_type not in _WARC_TYPES:
            # no/unknown WARC-Type: garbage that happened to parse as a header block
            return self._record_reject(record, ref, offset, REASON_INVALID,
                                       f"unknown record type {rec_type!r}")
        is_wet = rec_type == "conversion"
        if rec_type not in ("response", "resource") and not (is_wet and self.include_wet):
            self.stat_update(f"skipped/{rec_type}")
            return None
        status = None
        if record.http_headers is not None and rec_type == "response":
            try:
                status = int(record.http_headers.get_statuscode() or 0) or None
            except ValueError:
                status = None
            if self.ok_status_only and status is not None and not (200 <= status < 300):
                self.stat_update("skipped/http_status")
                return None

        record_id, meta = self._base_metadata(record, ref, offset)
        mime = meta["content_type"] or ""

        # read the (de-chunked, content-decoded) payload, bounded; a clipped record has fewer bytes in the file
        # than Content-Length announced; a Content-Encoding body whose compressed stream stops early was cut
        p = read_payload(record, self.max_payload_bytes)
        data, payload_cut, remaining, body_cut = p.data, p.cut, p.missing_bytes, p.body_cut
        truncated = remaining > 0

        if is_wet:
            kind = "text"
            mime = mime or "text/plain"
        else:
            kind = classify_payload(mime, data[:2048])
        if kind == "pdf":
            self.stat_update("skipped/pdf")
            return None
        if kind != "html" and not is_wet:
            textual = mime.startswith("text/") or mime.endswith(("json", "xml")) or mime == "application/javascript"
            if self.html_only or not textual:
                self.stat_update("skipped/non_html")
                return None
        if not data.strip():
            self.stat_update("skipped/empty_payload")
            return None

        meta["content_type"] = "text/html" if kind == "html" and mime not in _HTML_TYPES else (mime or None)
        meta["warc__http_status"] = status
        meta["warc__payload_cut"] = payload_cut
        meta["warc__truncated"] = record.rec_headers.get_header("WARC-Truncated")  # crawler-side cut (e.g. length)
        if self.default_metadata:
            meta = self.default_metadata | meta

        http_charset = _charset_from_content_type(
            record.http_headers.get_header("Content-Type") if record.http_headers else
            record.rec_headers.get_header("Content-Type"))
        try:
            text, codec, source = decode_html_bytes(data, http_charset)
        except UnicodeDecodeError as e:
            if truncated:
                text, codec, source = data.decode("utf-8", errors="replace"), "utf-8", "fallback"
            else:
                meta["reject_reason"] = REASON_DECODE
                meta["warc__error"] = str(e)[:500]
                self.stat_update(f"reject/{REASON_DECODE}")
                return Document(text="", id=record_id, metadata=meta)
        meta["warc__charset"] = codec
        meta["warc__charset_source"] = source
        if truncated:
            meta["reject_reason"] = REASON_TRUNCATED
            meta["warc__missing_bytes"] = remaining
            self.stat_update(f"reject/{REASON_TRUNCATED}")
            return Document(text=text, id=record_id, metadata=meta)
        if body_cut:
            meta["reject_reason"] = REASON_TRUNCATED_PAYLOAD
            meta["warc__truncated"] = meta["warc__truncated"] or "content-encoding"
            self.stat_update(f"reject/{REASON_TRUNCATED_PAYLOAD}")
            return Document(text=text, id=record_id, metadata=meta)
        self.stat_update("emitted")
        return Document(text=text, id=record_id, metadata=meta)
