"""WARC / ARC / WET ingestion as a datatrove reader.

Built on ``warcio`` (the only parser that reads every quirk in ``../shared/data/warc``: ARC files,
wget/Heritrix records, ``WARC-Target-URI: <...>``, gzip members holding several records, chunked
transfer encoding, ``Content-Encoding: gzip`` payloads, clipped records).

Every record read is accounted for in the step stats:

* ``records`` (and ``records/<warc-type>``): every record parsed from a file;
* exactly one outcome per record: ``emitted`` (a document was yielded), ``skipped/<why>`` (not an
  HTML response, e.g. ``skipped/request``, ``skipped/non_html``, ``skipped/pdf``,
  ``skipped/http_status``, ``skipped/revisit``) or ``reject/<reason>`` (a document with
  ``metadata["reject_reason"]`` was yielded);
* file level problems (unreadable file, corrupt gzip, garbage between records) yield one document
  with a ``reject_reason`` and stat ``reject/<reason>`` plus ``files/aborted``; the run goes on.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.readers.base import BaseReader

# file names picked up when a directory is given and no glob is set
_ARCHIVE_NAME_RE = re.compile(r"\.(warc|arc|wet|wat)(\.(warc|wet|wat))*(\.gz)?$", re.IGNORECASE)

_HTML_TYPES = ("text/html", "application/xhtml+xml", "application/xhtml", "text/xhtml")
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)""", re.IGNORECASE)
_HTML_SNIFF_RE = re.compile(rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|meta|title)\b",
                            re.IGNORECASE | re.DOTALL)

_WARC_TYPES = frozenset({"warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion",
                         "continuation"})

# reason codes (CONTRACT: <family>_<what>)
REASON_TRUNCATED = "warc_truncated_record"
REASON_CORRUPT_GZIP = "warc_corrupt_gzip"
REASON_DECODE = "warc_decode_error"
REASON_INVALID = "warc_invalid_record"
REASON_UNREADABLE = "warc_unreadable_file"

WARC_REASON_CODES = (REASON_TRUNCATED, REASON_CORRUPT_GZIP, REASON_DECODE, REASON_INVALID, REASON_UNREADABLE)


# ----------------------------------------------------------------------------------------------
# plain helpers (usable from notebooks)
# ----------------------------------------------------------------------------------------------
def _normalize_charset(name: str | None) -> str | None:
    """Return a Python codec name for a declared charset or None when unknown/unusable."""
    import codecs

    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    if not name:
        return None
    # WHATWG: latin-1/ascii labels really mean windows-1252
    if name in ("iso-8859-1", "latin1", "latin-1", "us-ascii", "ascii", "iso8859-1"):
        name = "cp1252"
    if name in ("x-sjis", "shift-jis", "sjis"):
        name = "shift_jis"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _charset_from_content_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = re.search(r"charset\s*=\s*([^\s;]+)", content_type, re.IGNORECASE)
    return m.group(1) if m else None


def decode_html_bytes(data: bytes, http_charset: str | None = None) -> tuple[str, str, str]:
    """Decode an HTML payload.

    Order: BOM; strict UTF-8 (valid UTF-8 wins over a declared single-byte charset, a common server
    misconfiguration); the charset from the HTTP header, then ``<meta charset>`` in the first 4 KiB
    (each only if it decodes strictly); then charset-normalizer detection.

    Returns ``(text, codec, source)`` with source in ``http|meta|utf8|detected``.
    Raises ``UnicodeDecodeError`` when nothing decodes the payload as text (binary data).
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), "utf-8", "bom"
    declared: list[tuple[str | None, str]] = [(_normalize_charset(http_charset), "http")]
    m = _META_CHARSET_RE.search(data[:4096])
    if m:
        declared.append((_normalize_charset(m.group(1).decode("ascii", "ignore")), "meta"))
    # valid UTF-8 with non-ASCII bytes is practically never another encoding: servers that declare
    # latin-1/ascii for UTF-8 pages are common, the reverse is not
    try:
        text = data.decode("utf-8")
        src = next((s for c, s in declared if c == "utf-8"), "utf8")
        return text, "utf-8", src
    except UnicodeDecodeError:
        pass
    for codec, source in declared:
        if not codec or codec == "utf-8":
            continue
        try:
            return data.decode(codec), codec, source
        except (UnicodeDecodeError, LookupError):
            continue
    from charset_normalizer import from_bytes

    best = from_bytes(data[:65536]).best()
    if best is None or best.encoding is None:
        raise UnicodeDecodeError("unknown", data[:1], 0, 1, "no charset decodes this payload")
    codec = best.encoding
    text = data.decode(codec, errors="replace")
    # a "text" with many replacement characters or NULs is binary garbage
    bad = text.count("\ufffd") + text.count("\x00")
    if text and bad / len(text) > 0.05:
        raise UnicodeDecodeError(codec, data[:1], 0, 1, "payload decodes to mostly replacement characters")
    return text, codec, "detected"


def _mime(content_type: str | None) -> str:
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _strip_uri(uri: str | None) -> str | None:
    """WARC 1.0 spec examples wrap the target URI in angle brackets; wget/dolma copy that."""
    if uri is None:
        return None
    uri = uri.strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1].strip()
    return uri


def classify_payload(mime: str, head: bytes) -> str:
    """Return ``html``, ``pdf``, ``text`` or ``other`` from the declared mime type and the first bytes."""
    if head.lstrip()[:5] == b"%PDF-" or mime == "application/pdf":
        return "pdf"
    if mime in _HTML_TYPES:
        return "html"
    if not mime or mime in ("text/plain", "application/octet-stream", "unk", "unknown", "text/unknown"):
        if _HTML_SNIFF_RE.match(head[:2048]):
            return "html"
    return "other"


def _is_arc_file(fh) -> bool:
    """ARC files start with a ``filedesc://`` record (after gzip decompression)."""
    import zlib

    try:
        head = fh.read(4096)
        fh.seek(0)
    except Exception:  # noqa: BLE001 - unseekable: assume WARC
        return False
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 256)
        except zlib.error:
            return False
    return head.lstrip()[:11].lower() == b"filedesc://"


def expand_paths(paths: list[str] | str, glob: str | None = None) -> list[str]:
    """Expand files and directories (recursively) into a sorted, de-duplicated list of files.

    Directories keep files matching ``glob`` (fnmatch on the path relative to the directory, or on the
    file name) or, without a glob, files named like archives (``*.warc[.gz]``, ``*.arc[.gz]``,
    ``*.wet[.gz]``, ``*.wat[.gz]``). Explicit file paths are always kept.
    """
    if isinstance(paths, str):
        paths = [paths]
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(root, name)
                    rel = os.path.relpath(full, p)
                    if glob is not None:
                        if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(name, glob):
                            out.append(full)
                    elif _ARCHIVE_NAME_RE.search(name):
                        out.append(full)
        else:
            out.append(p)
    return sorted(dict.fromkeys(out))


class _GzipError(OSError):
    """Raised by the strict reader when a gzip member is corrupt (warcio only prints these)."""


def _strict_reader_class():
    """warcio's DecompressingBufferedReader writes gzip errors to stderr and silently drops the rest of
    the file; this subclass raises instead and remembers whether the last gzip member was complete."""
    from warcio.bufferedreaders import DecompressingBufferedReader

    class StrictDecompressingReader(DecompressingBufferedReader):
        incomplete_gzip = False

        def _decompress(self, data):
            if self.decompressor and data and self.num_block_read > 0:
                try:
                    return self.decompressor.decompress(data)
                except Exception as e:  # noqa: BLE001 - zlib/brotli errors
                    raise _GzipError(f"corrupt compressed stream: {e}") from e
            return super()._decompress(data)

        def close_decompressor(self):
            d = self.decompressor
            if d is not None and self.decomp_type == "gzip" and self.num_read > 0 and not getattr(d, "eof", True):
                self.incomplete_gzip = True
            super().close_decompressor()

    return StrictDecompressingReader


# ----------------------------------------------------------------------------------------------
# reader step
# ----------------------------------------------------------------------------------------------
class WarcReader(BaseReader):
    """Read WARC/ARC/WET files (gzip or plain) into one document per HTML response.

    Args:
        paths: files and/or directories (searched recursively).
        glob: fnmatch pattern for files inside directories (default: archive-looking names).
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
        super().__init__(limit=limit, skip=skip, default_metadata=default_metadata)
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.glob = glob
        self.html_only = html_only
        self.ok_status_only = ok_status_only
        self.include_wet = include_wet
        self.max_payload_bytes = max_payload_bytes

    # -- sharding ------------------------------------------------------------------------------
    def list_files(self) -> list[str]:
        return expand_paths(self.paths, self.glob)

    def get_shard(self, rank: int = 0, world_size: int = 1) -> list[str]:
        return self.list_files()[rank::world_size]

    # -- documents -----------------------------------------------------------------------------
    def _reject_file_doc(self, filepath: str, reason: str, detail: str, offset: int | None = None) -> Document:
        self.stat_update(f"reject/{reason}", "files/aborted")
        doc_id = filepath if offset is None else f"{filepath}#{offset}"
        meta = {
            "source": "web",
            "source_file": filepath,
            "url": None,
            "date": None,
            "record_id": None,
            "content_type": None,
            "reject_reason": reason,
            "warc__error": detail[:500],
        }
        if offset is not None:
            meta["warc__offset"] = offset
        return Document(text="", id=doc_id, metadata=meta)

    def read_file(self, filepath: str) -> Iterator[Document]:
        """Yield documents for one archive; never raises on bad input."""
        import zlib

        import fsspec
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed

        self.stat_update("input_files")
        try:
            fh = fsspec.open(filepath, "rb").open()
        except Exception as e:  # noqa: BLE001 - any open failure is a reject, not a crash
            yield self._reject_file_doc(filepath, REASON_UNREADABLE, repr(e))
            return
        n_records = 0
        last_reason = None
        try:
            self._arc = _is_arc_file(fh)
            it = ArchiveIterator(fh, arc2warc=True)
            strict = _strict_reader_class()(it.fh, block_size=it.reader.block_size)
            it.reader = strict
            while True:
                offset = getattr(it, "offset", None)  # best guess for errors before the next record
                try:
                    record = next(it)
                    offset = getattr(it, "offset", offset)
                except StopIteration:
                    if strict.incomplete_gzip and last_reason == REASON_TRUNCATED:
                        # the clipped last record already carries the reason
                        self.stat_update("files/incomplete_gzip")
                    elif strict.incomplete_gzip:
                        yield self._reject_file_doc(filepath, REASON_CORRUPT_GZIP,
                                                    "gzip stream ends inside a member (file cut short)",
                                                    offset if n_records else None)
                    elif n_records == 0:
                        # empty file, or bytes warcio skips without finding a record header
                        yield self._reject_file_doc(filepath, REASON_UNREADABLE, "no WARC/ARC record found")
                    break
                except (zlib.error, EOFError, OSError) as e:
                    reason = REASON_CORRUPT_GZIP if ("gzip" in repr(e).lower() or isinstance(e, (zlib.error, EOFError))) else REASON_UNREADABLE
                    if n_records == 0 and reason == REASON_UNREADABLE:
                        reason = REASON_UNREADABLE
                    yield self._reject_file_doc(filepath, reason, repr(e), offset if n_records else None)
                    return
                except ArchiveLoadFailed as e:
                    msg = str(e).lower()
                    reason = REASON_CORRUPT_GZIP if "gzip" in msg else (REASON_UNREADABLE if n_records == 0 else REASON_INVALID)
                    yield self._reject_file_doc(filepath, reason, repr(e), offset if n_records else None)
                    return
                except Exception as e:  # noqa: BLE001 - warcio raises assorted errors on garbage
                    reason = REASON_UNREADABLE if n_records == 0 else REASON_INVALID
                    yield self._reject_file_doc(filepath, reason, repr(e), offset if n_records else None)
                    return
                n_records += 1
                self.stat_update("records", f"records/{getattr(record, 'rec_type', 'unknown')}")
                try:
                    doc = self._process_record(record, it, filepath, offset)
                except (zlib.error, EOFError, OSError) as e:
                    # payload could not be read (broken gzip member / content encoding)
                    yield self._record_reject(record, filepath, offset, REASON_CORRUPT_GZIP, repr(e))
                    return
                except Exception as e:  # noqa: BLE001
                    yield self._record_reject(record, filepath, offset, REASON_INVALID, repr(e))
                    continue
                last_reason = None
                if doc is not None:
                    last_reason = doc.metadata.get("reject_reason")
                    yield doc
        finally:
            try:
                fh.close()
            except Exception:  # noqa: BLE001
                pass

    def _base_metadata(self, record, filepath: str, offset: int | None) -> tuple[str, dict]:
        h = record.rec_headers
        url = _strip_uri(h.get_header("WARC-Target-URI"))
        date = h.get_header("WARC-Date")
        record_id = _strip_uri(h.get_header("WARC-Record-ID"))
        if getattr(self, "_arc", False) or not record_id:
            # warcio invents a random uuid for ARC records: use a stable id instead
            record_id = f"{os.path.basename(filepath)}#{offset}"
        http_ct = record.http_headers.get_header("Content-Type") if record.http_headers else None
        ct = http_ct or h.get_header("WARC-Identified-Payload-Type") or (
            h.get_header("Content-Type") if record.rec_type in ("conversion", "resource") else None)
        meta = {
            "source": "web",
            "url": url,
            "date": date,
            "record_id": record_id,
            "content_type": _mime(ct) or None,
            "source_file": filepath,
            "warc__type": record.rec_type,
            "warc__offset": offset,
        }
        return record_id, meta

    def _record_reject(self, record, filepath, offset, reason, detail, text: str = "") -> Document:
        try:
            record_id, meta = self._base_metadata(record, filepath, offset)
        except Exception:  # noqa: BLE001
            record_id, meta = f"{filepath}#{offset}", {"source": "web", "source_file": filepath, "url": None,
                                                        "date": None, "record_id": None, "content_type": None}
        meta["reject_reason"] = reason
        meta["warc__error"] = detail[:500]
        self.stat_update(f"reject/{reason}")
        if self.default_metadata:
            meta = self.default_metadata | meta
        return Document(text=text, id=record_id, metadata=meta)

    def _process_record(self, record, it, filepath: str, offset: int | None) -> Document | None:
        rec_type = record.rec_type
        if rec_type not in _WARC_TYPES:
            # no/unknown WARC-Type: garbage that happened to parse as a header block
            return self._record_reject(record, filepath, offset, REASON_INVALID,
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

        record_id, meta = self._base_metadata(record, filepath, offset)
        mime = meta["content_type"] or ""

        # read the (de-chunked, content-decoded) payload, bounded
        stream = record.content_stream()
        data = stream.read(self.max_payload_bytes + 1)
        payload_cut = len(data) > self.max_payload_bytes
        if payload_cut:
            data = data[: self.max_payload_bytes]
            while stream.read(1 << 20):
                pass
        # clipped record: fewer bytes in the file than Content-Length announced
        remaining = getattr(record.raw_stream, "limit", 0) or 0
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
        self.stat_update("emitted")
        return Document(text=text, id=record_id, metadata=meta)

    # -- step ----------------------------------------------------------------------------------
    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        shard = self.get_shard(rank, world_size)
        self._log_limit_scope(rank, world_size)
        emitted = 0
        skipped = 0
        for filepath in shard:
            for doc in self.read_file(filepath):
                if skipped < self.skip:
                    skipped += 1
                    continue
                if self.limit != -1 and emitted >= self.limit:
                    break
                with self.track_time():
                    self.update_doc_stats(doc)
                self.stat_update("documents")
                emitted += 1
                yield doc
            if self.limit != -1 and emitted >= self.limit:
                break
