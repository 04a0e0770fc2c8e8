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

import functools
import re
from typing import Iterator

from datatrove.data import Document

from assay.stages.common.readers import PathsReader

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
REASON_NOT_AN_ARCHIVE = "warc_not_an_archive"  # readable bytes without a single record (a text file named .warc.gz)
REASON_SPECIAL = "warc_special_file"  # a FIFO / device / socket where a WARC was expected: never opened
REASON_TRUNCATED_PAYLOAD = "warc_truncated_payload"  # the Content-Encoding (gzip) body ends before its stream

WARC_REASON_CODES = (REASON_TRUNCATED, REASON_CORRUPT_GZIP, REASON_DECODE, REASON_INVALID, REASON_UNREADABLE,
                     REASON_NOT_AN_ARCHIVE, REASON_SPECIAL, REASON_TRUNCATED_PAYLOAD)


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


def _looks_wide(data: bytes) -> bool:
    """Bytes that can be UTF-16/32: a BOM, or NUL in at least a fifth of the first 4 KiB (ASCII as UTF-16)."""
    head = data[:4096]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
        return True
    return bool(head) and head.count(0) * 5 >= len(head)


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
        if codec.startswith(("utf-16", "utf-32")) and not _looks_wide(data):
            # WHATWG: a UTF-16 label on bytes that parsed as ASCII (the <meta> was readable) means no UTF-16;
            # trusting it turns a cp1252 page into CJK-looking garbage. The page is single-byte: WHATWG's
            # default for such pages is windows-1252
            declared.append(("cp1252", f"{source}_utf16_ignored"))
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
    """The files a :class:`WarcReader` reads for these paths (datatrove listing; directories keep files
    matching ``glob`` or, without a glob, files named like archives: ``*.warc[.gz]``, ``*.arc[.gz]``,
    ``*.wet[.gz]``, ``*.wat[.gz]``). Explicit file paths are always kept."""
    return WarcReader(paths, glob=glob).list_files()


class _GzipError(OSError):
    """Raised by the strict reader when a gzip member is corrupt (warcio only prints these)."""


_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_MEMBER_MAGIC = b"\x1f\x8b\x08"  # magic + deflate: what a gzip member of a WARC starts with
_PADDING = b" \t\r\n\x00"  # bytes that may pad a file between/after gzip members without damaging anything
_WARC_VERSION_LINES = frozenset({b"WARC/1.0", b"WARC/1.1", b"WARC/0.17", b"WARC/0.18"})  # as warcio accepts
_ARC_HEADER_RE = re.compile(rb"(?:filedesc://|[A-Za-z][A-Za-z0-9+.\-]*:)\S* \S+ \d{14}\S* \S+ \d+\r?\n?$")
_SCAN_LINE_CAP = 1 << 16  # line-scan reads long lines in pieces of this size (bounded memory)
_SCAN_CHUNK = 1 << 20  # raw gzip-member scan reads the file in chunks of this size
_MAX_LINE = 1 << 20  # longest line the reader returns in one piece (a longer one is no header line)


def is_record_start_line(line: bytes, arc: bool = False) -> bool:
    """True for a line that starts a WARC record (``WARC/1.0``, ``WARC/1.1``, ``WARC/0.17|18``) or, with
    ``arc``, an ARC record header line (``<url> <ip> <14-digit date> <mime> <length>``)."""
    if line.rstrip() in _WARC_VERSION_LINES:
        return True
    return arc and _ARC_HEADER_RE.match(line) is not None


def _looks_like_record_start(head: bytes, arc: bool) -> bool:
    head = head.lstrip(b"\r\n")
    if head.startswith(b"WARC/"):
        return True
    return arc and _ARC_HEADER_RE.match(head.split(b"\n", 1)[0] + b"\n") is not None


def _verify_gzip_member(fh, offset: int, arc: bool = False) -> bool:
    """Does a gzip member start at ``offset`` and decompress into the start of a WARC (or ARC) record?
    Reads at most 64 KiB of the file."""
    import zlib

    fh.seek(offset)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = b""
    for _ in range(16):
        data = fh.read(4096)
        if not data:
            break
        try:
            out += d.decompress(data, 256 - len(out))
        except zlib.error:
            return False
        if len(out) >= 256 or d.eof:
            break
    return _looks_like_record_start(out, arc)


def _has_junk(data: bytes) -> bool:
    return bool(data.translate(None, _PADDING))


def find_gzip_member(fh, start: int, *, arc: bool = False, skip_first: bool = False,
                     chunk_size: int = _SCAN_CHUNK) -> tuple[int | None, bool]:
    """Scan a seekable binary file from ``start`` for the next gzip member (``1f 8b 08``) that decompresses
    into the start of a WARC record (``WARC/``; with ``arc`` also an ARC header line).

    Streams the file in ``chunk_size`` pieces (bounded memory). With ``skip_first`` a member starting exactly
    at ``start`` is not accepted (resync after a damaged member that starts there).

    Returns ``(offset or None at end of file, junk)`` where ``junk`` tells whether the skipped bytes
    ``[start, offset)`` hold anything but padding (spaces, newlines, NULs).
    """
    pos = start
    checked = start  # bytes before this offset were looked at for junk
    junk = False
    tail = b""
    while True:
        fh.seek(pos)
        chunk = fh.read(chunk_size)
        if not chunk:
            if not junk and checked < pos:
                junk = _has_junk(tail[len(tail) - (pos - checked):])
            return None, junk
        buf = tail + chunk
        base = pos - len(tail)
        i = buf.find(_GZIP_MEMBER_MAGIC)
        while i != -1:
            cand = base + i
            if (cand > start or not skip_first) and _verify_gzip_member(fh, cand, arc):
                if not junk and cand > checked:
                    junk = _has_junk(buf[checked - base: i])
                return cand, junk
            i = buf.find(_GZIP_MEMBER_MAGIC, i + 1)
        pos += len(chunk)
        upto = max(checked, pos - 2)  # the last 2 bytes may start a magic split over two chunks
        if not junk and upto > checked:
            junk = _has_junk(buf[checked - base: upto - base])
        checked = upto
        tail = buf[-2:]


@functools.lru_cache(maxsize=None)
def _warcio_classes():
    """(StrictDecompressingReader, LenientArchiveIterator): warcio subclasses used by the reader.

    warcio's DecompressingBufferedReader writes gzip errors to stderr and silently drops the rest of
    the file, and when a gzip member's first block does not decompress it falls back to reading the raw
    (compressed) bytes as if they were records. The strict reader raises :class:`_GzipError` instead,
    remembers where the current gzip member starts (``member_start``) and which member the buffered
    bytes come from (``buff_member_start``), returns long lines in bounded pieces, and tells whether
    the last gzip member was complete. The lenient iterator reads gzip members that hold several
    records (whole-file gzip) instead of raising warcio's "non-chunked gzip" error.
    """
    from warcio.archiveiterator import ArchiveIterator
    from warcio.bufferedreaders import DecompressingBufferedReader

    class StrictDecompressingReader(DecompressingBufferedReader):
        incomplete_gzip = False
        gzip_stream = None  # None: undecided, True: gzip members, False: plain (uncompressed) file
        member_start = 0  # file offset of the gzip member being decompressed
        buff_member_start = 0  # file offset of the gzip member the buffered bytes come from
        _fed = 0
        _head = b""

        def start_at(self, pos: int) -> None:
            """Tell the reader that its stream is positioned at file offset ``pos``."""
            self.member_start = self.buff_member_start = pos

        def raw_offset(self) -> int:
            """File offset of the next byte to be read (exact in plain files)."""
            return self.stream.tell() - self.rem_length()

        def _init_decomp(self, decomp_type):
            super()._init_decomp(decomp_type)
            self._fed = 0
            self._head = b""

        def _decompress(self, data):
            d = self.decompressor
            if d is None or not data or self.decomp_type != "gzip":
                return super()._decompress(data)
            if self._fed < 2:
                self._head = (self._head + data[:2])[:2]
                if not _GZIP_MAGIC.startswith(self._head):
                    if self.gzip_stream:
                        raise _GzipError(f"bytes at a gzip member boundary are not a gzip member: {data[:16]!r}")
                    # not gzip at all: a plain WARC/ARC, read the bytes as they are
                    self.gzip_stream = False
                    self.decompressor = None
                    return data
            self._fed += len(data)
            try:
                out = d.decompress(data)
            except Exception as e:  # noqa: BLE001 - zlib errors
                raise _GzipError(f"corrupt gzip member: {e}") from e
            self.gzip_stream = True
            return out

        def _process_read(self, data):
            super()._process_read(data)
            self.buff_member_start = self.member_start

        def read_next_member(self):
            d = self.decompressor
            if not d or not d.unused_data:
                return False
            start = self.stream.tell() - len(d.unused_data)
            super().read_next_member()
            self.member_start = start
            return True

        def readline(self, length=None, _readline=DecompressingBufferedReader.readline):
            # bounded lines: warcio reads header lines (and junk between records) with unbounded readline
            return _readline(self, _MAX_LINE if length is None or length > _MAX_LINE else length)

        def close_decompressor(self):
            d = self.decompressor
            if d is not None and self.decomp_type == "gzip" and self.num_read > 0 and not getattr(d, "eof", True):
                self.incomplete_gzip = True
            super().close_decompressor()

    class LenientArchiveIterator(ArchiveIterator):
        def _raise_invalid_gzip_err(self):
            return None  # several records in one gzip member: read them (warcio raises here)

    return StrictDecompressingReader, LenientArchiveIterator


def _strict_reader_class():
    """The strict warcio reader (see :func:`_warcio_classes`)."""
    return _warcio_classes()[0]


# ----------------------------------------------------------------------------------------------
# reader step
# ----------------------------------------------------------------------------------------------
# ----------------------------------------------------------------------------------------------
# the one WARC record iterator (web pages and PDFs in WARCs)
# ----------------------------------------------------------------------------------------------
_MAX_CONTENT_LENGTH = (1 << 62)  # a declared Content-Length beyond this is no length (stored ints are int64)
_SNIFF_BYTES = 1 << 16


def sniff_archive(fh) -> str:
    """``warc`` (a record header within the first 64 KiB, or an ARC ``filedesc://`` start), ``empty``
    (nothing but padding), ``damaged`` (gzip that does not decompress: left to resync) or ``other`` (readable
    bytes that hold no record: a text file named ``.warc.gz``). The file position is restored to 0."""
    import zlib

    try:
        raw = fh.read(_SNIFF_BYTES)
        fh.seek(0)
    except Exception:  # noqa: BLE001 - unseekable: let the iterator decide
        return "warc"
    data = raw
    if raw[:2] == _GZIP_MAGIC:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = d.decompress(raw, _SNIFF_BYTES)
            while d.eof and d.unused_data and len(data) < _SNIFF_BYTES and d.unused_data[:2] == _GZIP_MAGIC:
                rest = d.unused_data
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                data += d.decompress(rest, _SNIFF_BYTES - len(data))
        except zlib.error:
            return "damaged"
    body = data.lstrip(_PADDING)
    if not body:
        return "empty" if raw[:2] != _GZIP_MAGIC or len(raw) < _SNIFF_BYTES else "warc"
    if body[:5] == b"WARC/" or body[:11].lower() == b"filedesc://":
        return "warc"
    if any(is_record_start_line(line) for line in data.splitlines(keepends=True)):
        return "warc"  # junk before the first record: resync finds it
    if raw[:2] == _GZIP_MAGIC:
        # the first member is no record: a later member may still be one (damage at the start)
        pos, _ = find_gzip_member(fh, 0, skip_first=True)
        fh.seek(0)
        if pos is not None:
            return "warc"
    return "other"


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


    def _open_at(self, fh, pos: int):
        """A fresh (iterator, strict reader) reading ``fh`` from file offset ``pos``."""
        strict_cls, iter_cls = _warcio_classes()
        if pos:
            fh.seek(pos)
        it = iter_cls(fh, arc2warc=True)
        strict = strict_cls(it.fh, block_size=it.reader.block_size)
        strict.start_at(pos)
        it.reader = strict
        it.offset = pos
        return it, strict

    def _continue_at_line(self, it, strict, line: bytes, offset: int):
        """A fresh iterator over the same reader whose first record starts with ``line`` (already read)."""
        _, iter_cls = _warcio_classes()
        new = iter_cls(it.fh, arc2warc=True)
        new.reader = strict
        new.next_line = line
        new.offset = offset
        return new

    def _scan_lines(self, strict) -> tuple[bytes | None, int | None]:
        """Read lines (bounded pieces) until one at a line start begins a record: ``(line, offset)`` with
        the line's file offset (in gzip files: its member's offset); ``(None, None)`` at end of file.
        Crosses gzip member boundaries; raises :class:`_GzipError` on a damaged member."""
        arc = getattr(self, "_arc", False)
        at_line_start = True
        empty = 0
        while True:
            offset = None if strict.gzip_stream else strict.raw_offset()
            line = strict.readline(_SCAN_LINE_CAP)
            if not line:
                if strict.decompressor is not None and strict.read_next_member():
                    at_line_start = True
                    continue
                empty += 1  # a member may end exactly at a block boundary: look once more
                if empty > 1:
                    return None, None
                continue
            empty = 0
            if at_line_start and is_record_start_line(line, arc):
                return line, (strict.buff_member_start if offset is None else offset)
            at_line_start = line.endswith(b"\n")

    def _resync(self, fh, it, strict, kind: str, damage_start: int):
        """Find where intact records resume after damage.

        ``kind="gzip"`` (a gzip member does not decompress, or junk sits between members): the next gzip
        member after ``damage_start`` that decompresses into a record. ``kind="parse"`` (bytes that are no
        record header): the next ``WARC/1.x`` line at a line start, read through the same reader (within
        the current gzip member and on into the next ones; a damaged member on the way switches to the
        member scan).

        Returns ``(iterator, reader, resume_offset, junk)``; iterator is None when nothing follows. ``junk``
        is False only when a gzip-level problem turned out to be padding (spaces/newlines/NULs).
        """
        arc = getattr(self, "_arc", False)
        if kind == "parse":
            try:
                line, offset = self._scan_lines(strict)
            except _GzipError:
                damage_start = strict.member_start
            else:
                self.stat_update("resync/line")
                if line is None:
                    return None, strict, None, True
                return self._continue_at_line(it, strict, line, offset), strict, offset, True
        pos, junk = find_gzip_member(fh, damage_start, arc=arc, skip_first=True)
        if kind == "parse":
            junk = True
        self.stat_update("resync/gzip_member")
        if pos is None:
            return None, strict, None, junk
        new_it, new_strict = self._open_at(fh, pos)
        return new_it, new_strict, pos, junk

    def iter_warc(self, ref, process) -> Iterator[Document]:
        """Yield documents for one archive; never raises on bad input. ``process(record, it, ref, offset)``
        returns the record's document or None (skipped, counted by the callback).

        Damage does not end the file: after a corrupt gzip member, junk between members, or bytes that are
        no record header, reading resumes at the next intact gzip member / ``WARC/1.x`` line. Each damaged
        region yields ONE document (``id = <key>#<offset of the damage>``, ``text = ""``, a reason code,
        ``warc__offset`` and ``warc__resync_offset``), or the record's own reject document when the damage
        sits in the payload of a record already parsed. A file that holds no record at all (a text file
        named ``.warc.gz``) is one ``warc_not_an_archive`` document. The file is streamed (memory stays
        bounded)."""
        import zlib

        from warcio.exceptions import ArchiveLoadFailed

        try:
            fh = ref.open("rb")
        except Exception as e:  # noqa: BLE001 - any open failure is a reject, not a crash
            yield self._reject_file_doc(ref, REASON_UNREADABLE, repr(e))
            return
        n_records = 0
        n_regions = 0
        region_ids: set[str] = set()
        last_reason = None
        try:
            if sniff_archive(fh) == "other":
                yield self._reject_file_doc(ref, REASON_NOT_AN_ARCHIVE,
                                            "no WARC/ARC record header in the first 64 KiB: not an archive")
                return
            self._arc = _is_arc_file(fh)
            it, strict = self._open_at(fh, 0)
            while True:
                offset = it.offset
                kind = reason = err = None
                try:
                    record = next(it)
                    offset = it.offset
                except StopIteration:
                    if strict.incomplete_gzip and last_reason == REASON_TRUNCATED:
                        # the clipped last record already carries the reason
                        self.stat_update("files/incomplete_gzip")
                    elif strict.incomplete_gzip:
                        n_regions += 1
                        yield self._reject_file_doc(ref, REASON_CORRUPT_GZIP,
                                                    "gzip stream ends inside a member (file cut short)",
                                                    strict.member_start if n_records else None)
                    break
                except (_GzipError, zlib.error) as e:
                    kind, reason, err = "gzip", REASON_CORRUPT_GZIP, e
                except OSError as e:  # I/O error on the file itself: nothing more can be read
                    kind, reason, err = "io", REASON_UNREADABLE, e
                except ArchiveLoadFailed as e:
                    msg = str(e)
                    gz = "gzip" in msg.lower() or "\\x1f\\x8b" in msg
                    kind, reason, err = "parse", (REASON_CORRUPT_GZIP if gz else REASON_INVALID), e
                except Exception as e:  # noqa: BLE001 - warcio raises assorted errors on garbage
                    kind, reason, err = "parse", REASON_INVALID, e
                if err is not None:
                    if kind == "gzip":
                        damage_start = strict.member_start
                    elif strict.gzip_stream:
                        damage_start = strict.buff_member_start  # the member the bad bytes came from
                    else:
                        damage_start = it.offset  # exact: where the bad line / record starts
                    if kind == "io":
                        new_it, junk, resume = None, True, None
                    else:
                        try:
                            new_it, strict, resume, junk = self._resync(fh, it, strict, kind, damage_start)
                        except Exception:  # noqa: BLE001 - unseekable or unreadable: stop here
                            new_it, junk, resume = None, True, None
                    if junk:
                        whole = new_it is None and n_records == 0 and n_regions == 0
                        if whole and reason == REASON_INVALID:
                            reason = REASON_UNREADABLE
                        doc = self._reject_file_doc(ref, reason, repr(err), None if whole else damage_start,
                                                    resync_offset=resume, to_eof=new_it is None)
                        if doc.id in region_ids:  # two regions inside one gzip member
                            doc.id = f"{doc.id}-{n_regions}"
                        region_ids.add(doc.id)
                        n_regions += 1
                        yield doc
                    else:
                        self.stat_update("gzip_padding")
                    if new_it is None:
                        break
                    it = new_it
                    continue
                n_records += 1
                self.stat_update("records", f"records/{getattr(record, 'rec_type', 'unknown')}")
                bad_length = _declared_length_error(record)
                if bad_length:
                    # warcio would read (and overflow on) a length no file has: the record is invalid and
                    # reading resumes at the next record header
                    yield self._record_reject(record, ref, offset, REASON_INVALID, bad_length)
                    last_reason = REASON_INVALID
                    try:
                        new_it, strict, _, _ = self._resync(fh, it, strict, "parse", offset or 0)
                    except Exception:  # noqa: BLE001
                        new_it = None
                    if new_it is None:
                        break
                    it = new_it
                    continue
                try:
                    doc = process(record, it, ref, offset)
                except _GzipError as e:
                    # the record's gzip member breaks inside its payload: the record's reject document
                    # stands for the damaged region; resume at the next intact member
                    yield self._record_reject(record, ref, offset, REASON_CORRUPT_GZIP, repr(e))
                    last_reason = REASON_CORRUPT_GZIP
                    try:
                        new_it, strict, _, _ = self._resync(fh, it, strict, "gzip", strict.member_start)
                    except Exception:  # noqa: BLE001
                        new_it = None
                    if new_it is None:
                        break
                    it = new_it
                    continue
                except (zlib.error, EOFError, OSError) as e:
                    # payload could not be decoded (broken Content-Encoding); the file stream is intact
                    yield self._record_reject(record, ref, offset, REASON_CORRUPT_GZIP, repr(e))
                    last_reason = REASON_CORRUPT_GZIP
                    continue
                except Exception as e:  # noqa: BLE001
                    yield self._record_reject(record, ref, offset, REASON_INVALID, repr(e))
                    continue
                last_reason = None
                if doc is not None:
                    last_reason = doc.metadata.get("reject_reason")
                    yield doc
            if n_records == 0 and n_regions == 0:
                # empty file, only padding, or bytes warcio skips without finding a record header
                yield self._reject_file_doc(ref, REASON_UNREADABLE, "no WARC/ARC record found")
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
        http_ct = record.http_headers.get_header("Content-Type") if record.http_headers else None
        ct = http_ct or h.get_header("WARC-Identified-Payload-Type") or (
            h.get_header("Content-Type") if record.rec_type in ("conversion", "resource") else None)
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


def _declared_length_error(record) -> str | None:
    """A reason text when the record's declared Content-Length is no usable length."""
    raw = record.rec_headers.get_header("Content-Length")
    if raw is None:
        return None
    try:
        n = int(str(raw).strip())
    except ValueError:
        return None  # warcio already handled (or rejected) it
    if n < 0 or n > _MAX_CONTENT_LENGTH:
        return f"Content-Length {str(raw)[:40]} out of range"
    return None


def payload_truncated(stream) -> bool:
    """After reading a record's content stream to its end: did a ``Content-Encoding`` (gzip/deflate) body end
    before its compressed stream did (a body cut by the crawler)?"""
    d = getattr(stream, "decompressor", None)
    return bool(getattr(stream, "decomp_type", None) and d is not None and getattr(d, "eof", True) is False)


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

        # read the (de-chunked, content-decoded) payload, bounded
        stream = record.content_stream()
        chunks, size = [], 0
        while size <= self.max_payload_bytes:
            piece = stream.read(min(1 << 20, self.max_payload_bytes + 1 - size))
            if not piece:
                break
            chunks.append(piece)
            size += len(piece)
        data = b"".join(chunks)
        payload_cut = len(data) > self.max_payload_bytes
        if payload_cut:
            data = data[: self.max_payload_bytes]
            while stream.read(1 << 20):
                pass
        # clipped record: fewer bytes in the file than Content-Length announced
        remaining = getattr(record.raw_stream, "limit", 0) or 0
        truncated = remaining > 0
        # a Content-Encoding body whose compressed stream stops early (the crawler kept a cut body)
        body_cut = payload_truncated(stream)

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
            meta["warc__missing_bytes"] = min(remaining, _MAX_CONTENT_LENGTH)
            self.stat_update(f"reject/{REASON_TRUNCATED}")
            return Document(text=text, id=record_id, metadata=meta)
        if body_cut:
            meta["reject_reason"] = REASON_TRUNCATED_PAYLOAD
            meta["warc__truncated"] = meta["warc__truncated"] or "content-encoding"
            self.stat_update(f"reject/{REASON_TRUNCATED_PAYLOAD}")
            return Document(text=text, id=record_id, metadata=meta)
        self.stat_update("emitted")
        return Document(text=text, id=record_id, metadata=meta)
