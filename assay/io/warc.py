"""Record-level WARC / ARC / WET parsing, free of datatrove (the one WARC parser of the project).

Used by ``assay.stages.web.warc`` (web pages), ``assay.stages.pdf.reader`` (PDFs in WARCs; both build datatrove
documents on top of :class:`WarcFileIterator`) and ``assay.classifiers.data`` (the ``warc_html`` training-data
builder, through :func:`iter_records`). The import contract keeps this package free of datatrove and of every
other part of the project.

Built on ``warcio`` (the only parser that reads every quirk in ``../shared/data/warc``: ARC files,
wget/Heritrix records, ``WARC-Target-URI: <...>``, gzip members holding several records, chunked
transfer encoding, ``Content-Encoding: gzip`` payloads, clipped records). Damage does not end a file: after a
corrupt gzip member, junk between gzip members or bytes that are no record header, reading resumes at the next
gzip member that decompresses into a record (:func:`find_gzip_member`) or, in uncompressed files and inside a
member, at the next ``WARC/1.x`` line at a line start. Each damaged region is reported once
(:class:`WarcDamage`); a record whose payload cannot be read is reported as :class:`WarcRecordError`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

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
# the one WARC record iterator
# ----------------------------------------------------------------------------------------------
@dataclass
class WarcDamage:
    """A damaged region of a file (or the whole file when ``offset`` is None).

    ``resync_offset``: where intact records resume (None: nothing did); ``to_eof``: the damage runs to the end
    of the file; ``index``: how many regions were reported before this one; ``repeated``: another region of the
    same file was already reported at this offset (two regions inside one gzip member)."""

    reason: str
    detail: str
    offset: int | None = None
    resync_offset: int | None = None
    to_eof: bool = True
    index: int = 0
    repeated: bool = False


@dataclass
class WarcRecordError:
    """A record whose header was read but whose payload (or declared length) is broken: the record stands for
    the damaged region. ``record`` is the warcio record."""

    record: Any
    offset: int | None
    reason: str
    detail: str


def _no_stat(*_keys: str) -> None:
    return None


class WarcFileIterator:
    """Reads every record of one open (binary, seekable for resync) WARC/ARC file through warcio, resyncing
    after damage.

    :meth:`events` calls ``process(record, offset)`` for each record and yields what it returns (None is not
    yielded), plus a :class:`WarcDamage` for each damaged region and a :class:`WarcRecordError` for each record
    whose payload breaks (``process`` may raise; a gzip member that breaks inside the payload resyncs at the
    next intact member). ``stat(*keys)`` is called for counters: ``records``, ``records/<type>``,
    ``gzip_padding``, ``resync/line``, ``resync/gzip_member``, ``files/incomplete_gzip``.

    Attributes readable from ``process``: ``arc`` (the file is an ARC file: warcio invents record ids there),
    ``it`` (the current warcio iterator)."""

    def __init__(self, fh, stat: Callable[..., None] | None = None):
        self.fh = fh
        self.stat = stat or _no_stat
        self.arc = False
        self.it = None

    def _open_at(self, pos: int):
        """A fresh (iterator, strict reader) reading the file from offset ``pos``."""
        strict_cls, iter_cls = _warcio_classes()
        if pos:
            self.fh.seek(pos)
        it = iter_cls(self.fh, arc2warc=True)
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
            if at_line_start and is_record_start_line(line, self.arc):
                return line, (strict.buff_member_start if offset is None else offset)
            at_line_start = line.endswith(b"\n")

    def _resync(self, it, strict, kind: str, damage_start: int):
        """Find where intact records resume after damage.

        ``kind="gzip"`` (a gzip member does not decompress, or junk sits between members): the next gzip
        member after ``damage_start`` that decompresses into a record. ``kind="parse"`` (bytes that are no
        record header): the next ``WARC/1.x`` line at a line start, read through the same reader (within
        the current gzip member and on into the next ones; a damaged member on the way switches to the
        member scan).

        Returns ``(iterator, reader, resume_offset, junk)``; iterator is None when nothing follows. ``junk``
        is False only when a gzip-level problem turned out to be padding (spaces/newlines/NULs).
        """
        if kind == "parse":
            try:
                line, offset = self._scan_lines(strict)
            except _GzipError:
                damage_start = strict.member_start
            else:
                self.stat("resync/line")
                if line is None:
                    return None, strict, None, True
                return self._continue_at_line(it, strict, line, offset), strict, offset, True
        pos, junk = find_gzip_member(self.fh, damage_start, arc=self.arc, skip_first=True)
        if kind == "parse":
            junk = True
        self.stat("resync/gzip_member")
        if pos is None:
            return None, strict, None, junk
        new_it, new_strict = self._open_at(pos)
        return new_it, new_strict, pos, junk

    def _resync_or_none(self, it, strict, kind: str, damage_start: int):
        try:
            new_it, strict, _, _ = self._resync(it, strict, kind, damage_start)
        except Exception:  # noqa: BLE001 - unseekable or unreadable: stop here
            new_it = None
        return new_it, strict

    def events(self, process: Callable[[Any, int | None], Any],
               reason_of: Callable[[Any], str | None] = lambda _r: None) -> Iterator[Any]:
        """Yield ``process``'s results, :class:`WarcDamage` and :class:`WarcRecordError` for the file; never
        raises on bad input. ``reason_of(result)`` tells the reject reason of a result (a clipped last record
        already stands for a gzip stream that ends early). The file is streamed (memory stays bounded)."""
        import zlib

        from warcio.exceptions import ArchiveLoadFailed

        fh = self.fh
        n_records = 0
        n_regions = 0
        region_offsets: set[int | None] = set()
        last_reason = None
        if sniff_archive(fh) == "other":
            yield WarcDamage(REASON_NOT_AN_ARCHIVE, "no WARC/ARC record header in the first 64 KiB: not an archive")
            return
        self.arc = _is_arc_file(fh)
        it, strict = self._open_at(0)
        while True:
            self.it = it
            offset = it.offset
            kind = reason = err = None
            try:
                record = next(it)
                offset = it.offset
            except StopIteration:
                if strict.incomplete_gzip and last_reason == REASON_TRUNCATED:
                    # the clipped last record already carries the reason
                    self.stat("files/incomplete_gzip")
                elif strict.incomplete_gzip:
                    yield WarcDamage(REASON_CORRUPT_GZIP, "gzip stream ends inside a member (file cut short)",
                                     strict.member_start if n_records else None, index=n_regions)
                    n_regions += 1
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
                        new_it, strict, resume, junk = self._resync(it, strict, kind, damage_start)
                    except Exception:  # noqa: BLE001 - unseekable or unreadable: stop here
                        new_it, junk, resume = None, True, None
                if junk:
                    whole = new_it is None and n_records == 0 and n_regions == 0
                    if whole and reason == REASON_INVALID:
                        reason = REASON_UNREADABLE
                    at = None if whole else damage_start
                    yield WarcDamage(reason, repr(err), at, resync_offset=resume, to_eof=new_it is None,
                                     index=n_regions, repeated=at in region_offsets)
                    region_offsets.add(at)
                    n_regions += 1
                else:
                    self.stat("gzip_padding")
                if new_it is None:
                    break
                it = new_it
                continue
            n_records += 1
            self.stat("records", f"records/{getattr(record, 'rec_type', 'unknown')}")
            bad_length = _declared_length_error(record)
            if bad_length:
                # warcio would read (and overflow on) a length no file has: the record is invalid and
                # reading resumes at the next record header
                yield WarcRecordError(record, offset, REASON_INVALID, bad_length)
                last_reason = REASON_INVALID
                new_it, strict = self._resync_or_none(it, strict, "parse", offset or 0)
                if new_it is None:
                    break
                it = new_it
                continue
            try:
                result = process(record, offset)
            except _GzipError as e:
                # the record's gzip member breaks inside its payload: the record stands for the damaged
                # region; resume at the next intact member
                yield WarcRecordError(record, offset, REASON_CORRUPT_GZIP, repr(e))
                last_reason = REASON_CORRUPT_GZIP
                new_it, strict = self._resync_or_none(it, strict, "gzip", strict.member_start)
                if new_it is None:
                    break
                it = new_it
                continue
            except (zlib.error, EOFError, OSError) as e:
                # payload could not be decoded (broken Content-Encoding); the file stream is intact
                yield WarcRecordError(record, offset, REASON_CORRUPT_GZIP, repr(e))
                last_reason = REASON_CORRUPT_GZIP
                continue
            except Exception as e:  # noqa: BLE001
                yield WarcRecordError(record, offset, REASON_INVALID, repr(e))
                continue
            last_reason = None
            if result is not None:
                last_reason = reason_of(result)
                yield result
        if n_records == 0 and n_regions == 0:
            # empty file, only padding, or bytes warcio skips without finding a record header
            yield WarcDamage(REASON_UNREADABLE, "no WARC/ARC record found")


@dataclass
class Payload:
    """A record's (de-chunked, content-decoded) payload, read with a size bound."""

    data: bytes
    cut: bool  # longer than the bound: ``data`` holds the first ``max_bytes``
    missing_bytes: int  # clipped record: bytes the file lacks against ``Content-Length`` (0: complete)
    body_cut: bool  # a ``Content-Encoding`` body whose compressed stream stops early


def read_payload(record, max_bytes: int) -> Payload:
    """Read a warcio record's payload, keeping at most ``max_bytes`` (the rest is read and dropped)."""
    stream = record.content_stream()
    chunks, size = [], 0
    while size <= max_bytes:
        piece = stream.read(min(1 << 20, max_bytes + 1 - size))
        if not piece:
            break
        chunks.append(piece)
        size += len(piece)
    data = b"".join(chunks)
    cut = len(data) > max_bytes
    if cut:
        data = data[:max_bytes]
        while stream.read(1 << 20):
            pass
    remaining = getattr(record.raw_stream, "limit", 0) or 0
    return Payload(data, cut, min(remaining, _MAX_CONTENT_LENGTH), payload_truncated(stream))


def record_content_type(record) -> str | None:
    """The payload's declared type: HTTP ``Content-Type``, else ``WARC-Identified-Payload-Type``, else (for
    conversion/resource records) the record's own ``Content-Type``."""
    h = record.rec_headers
    http_ct = record.http_headers.get_header("Content-Type") if record.http_headers else None
    return http_ct or h.get_header("WARC-Identified-Payload-Type") or (
        h.get_header("Content-Type") if record.rec_type in ("conversion", "resource") else None)


@dataclass
class WarcRecord:
    """A plain record (or, with ``reason`` set and ``rec_type`` None, a damaged region) from :func:`iter_records`.

    ``payload`` is the de-chunked, content-decoded payload (at most ``max_payload_bytes``); ``truncated``: the
    record or its ``Content-Encoding`` body was cut; ``reason``/``error``: why the record (or region) is
    unusable (a ``warc_*`` reason code)."""

    rec_type: str | None
    offset: int | None
    uri: str | None = None
    record_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    http_headers: dict[str, str] | None = None
    http_status: int | None = None
    content_type: str = ""
    payload: bytes = b""
    payload_cut: bool = False
    truncated: bool = False
    reason: str | None = None
    error: str | None = None
    resync_offset: int | None = None


def _headers(h) -> dict[str, str]:
    return {k: v for k, v in (h.headers if h is not None else [])}


def _status(record) -> int | None:
    if record.http_headers is None or record.rec_type != "response":
        return None
    try:
        return int(record.http_headers.get_statuscode() or 0) or None
    except ValueError:
        return None


def iter_records(source, *, types: tuple[str, ...] | None = ("response", "resource", "conversion"),
                 max_payload_bytes: int = 10_000_000, stat: Callable[..., None] | None = None
                 ) -> Iterator[WarcRecord]:
    """Every record of one WARC/ARC file (a path or an open binary file) as :class:`WarcRecord`; records whose
    type is not in ``types`` are passed over without reading their payload (``types=None``: all). Damaged
    regions and unreadable payloads come as records with ``reason`` set; an unreadable file is one such
    record. Never raises on bad input."""
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        try:
            fh = open(source, "rb")
        except OSError as e:
            yield WarcRecord(None, None, reason=REASON_UNREADABLE, error=repr(e))
            return
    else:
        fh = source
    walker = WarcFileIterator(fh, stat)

    def process(record, offset):
        if types is not None and record.rec_type not in types:
            return None
        p = read_payload(record, max_payload_bytes)
        return _plain(record, offset, walker.arc, payload=p.data, payload_cut=p.cut,
                      truncated=p.missing_bytes > 0 or p.body_cut,
                      reason=REASON_TRUNCATED if p.missing_bytes > 0 else
                      (REASON_TRUNCATED_PAYLOAD if p.body_cut else None))

    try:
        for ev in walker.events(process, reason_of=lambda r: r.reason):
            if isinstance(ev, WarcDamage):
                yield WarcRecord(None, ev.offset, reason=ev.reason, error=ev.detail, resync_offset=ev.resync_offset)
            elif isinstance(ev, WarcRecordError):
                yield _plain(ev.record, ev.offset, walker.arc, reason=ev.reason, error=ev.detail)
            else:
                yield ev
    finally:
        if fh is not source:
            fh.close()


def _plain(record, offset, arc: bool, **kw) -> WarcRecord:
    h = record.rec_headers
    record_id = _strip_uri(h.get_header("WARC-Record-ID"))
    return WarcRecord(
        record.rec_type, offset, uri=_strip_uri(h.get_header("WARC-Target-URI")),
        record_id=None if arc else record_id, headers=_headers(h),
        http_headers=_headers(record.http_headers) if record.http_headers is not None else None,
        http_status=_status(record), content_type=_mime(record_content_type(record)), **kw)
