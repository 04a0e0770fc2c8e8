"""Shared helpers: where a PDF document's bytes live, opening it, page text/feature extraction.

A PDF ``Document`` carries its source in ``doc.media[0]`` (``datatrove.data.Media`` of type
``MediaType.DOCUMENT``): ``path`` for files on disk, ``media_bytes`` for PDFs cut out of WARC
records. Per-page text layer strings travel in ``doc.media[0].metadata["page_texts"]`` between the
PDF steps of one pipeline (they are not signals; the document text is assembled from them).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from datatrove.data import Document, Media, MediaType

PAGE_TEXTS = "page_texts"
PAGE_SEP = "\n\n"

# producer/creator strings of scanners, scan-to-PDF and OCR tools
SCANNER_RE = re.compile(
    r"img2pdf|tiff2pdf|libtiff|ocrmypdf|tesseract|omnipage|abbyy|finereader|readiris|"
    r"scansnap|paperport|epson|canon|xerox|ricoh|kyocera|konica|sharp mx|brother|fujitsu|"
    r"\bhp\b.*scan|scan|imagemagick|capture|kofax|nuance|photoshop|pdfium.*ocr|clearscan",
    re.IGNORECASE,
)

INK_MAX_CHARS = 200  # pages with fewer text characters (or large images) get the ink probe
_VOWELS = set("aeiouyAEIOUYäöüéèêáàíóúåæøœ")


def pdf_media(doc: Document) -> Media | None:
    for m in doc.media:
        if m.type == MediaType.DOCUMENT:
            return m
    return None


def pdf_source(doc: Document) -> bytes | str | None:
    """Bytes (WARC record) or path (file) of the PDF behind ``doc``."""
    m = pdf_media(doc)
    if m is None:
        return doc.metadata.get("path")
    if m.media_bytes is not None:
        return m.media_bytes
    return m.path


def open_pdf(src: bytes | str):
    import pymupdf

    if isinstance(src, (bytes, bytearray, memoryview)):
        return pymupdf.open(stream=bytes(src), filetype="pdf")
    return pymupdf.open(src, filetype="pdf")


_REF = re.compile(rb"(\d+)\s+\d+\s+R")


def trailer_lost(src: bytes | str) -> bool:
    """True when no ``startxref`` follows the last ``endobj`` of the file: the tail that holds the
    cross-reference section / trailer was cut off (truncated download, cut WARC payload).

    A file with junk appended after ``%%EOF`` still has its ``startxref`` after the last object."""
    import mmap

    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        return data.rfind(b"startxref") < data.rfind(b"endobj")
    with open(src, "rb") as fh:
        try:
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return mm.rfind(b"startxref") < mm.rfind(b"endobj")
        except ValueError:  # empty file
            return True


def missing_pages(d) -> int:
    """Pages whose page object, or a content stream the page references, does not exist in the
    (possibly repaired) cross-reference table: the page tree declares more than is readable."""
    n_xref = d.xref_length()
    missing = 0
    for i in range(d.page_count):
        try:
            x = d.page_xref(i)
            if x <= 0 or x >= n_xref:
                missing += 1
                continue
            kind, val = d.xref_get_key(x, "Contents")
            refs = [int(r) for r in _REF.findall(val.encode())] if kind in ("xref", "array") else []
            if any(r <= 0 or r >= n_xref or not d.xref_is_stream(r) for r in refs):
                missing += 1
        except Exception:  # noqa: BLE001 - an unresolvable page counts as missing
            missing += 1
    return missing


def structure_signals(d, src: bytes | str) -> dict:
    """``repaired`` (MuPDF rebuilt the xref), ``missing_pages`` and, for repaired files only,
    ``trailer_lost`` (see ``trailer_lost``; False for files MuPDF opened without repair)."""
    repaired = bool(getattr(d, "is_repaired", False))
    return {"repaired": repaired, "missing_pages": missing_pages(d),
            "trailer_lost": bool(repaired and trailer_lost(src))}


def page_texts(doc: Document) -> list[str] | None:
    m = pdf_media(doc)
    if m is None:
        return None
    return m.metadata.get(PAGE_TEXTS)


# ----------------------------------------------------------------------------------------------
# text helpers
# ----------------------------------------------------------------------------------------------
_STRIP = ".,;:!?()[]{}\"'`«»“”‘’-–—"
_ALNUM_MIX_OK = re.compile(r"\d+[a-zA-Z]{1,3}|[a-zA-Z]{1,3}\d+|[A-Z]+\d+[A-Z\d]*")
_ODD_CASE = re.compile(r"[a-z][A-Z][a-z]")
_CAMEL = re.compile(r"^[A-Z]?[a-z]+[A-Z][a-z]+")
_SAMPLE_WORDS = 400


def _is_latin_letter(c: str) -> bool:
    return c.isascii() or ("LATIN" in unicodedata.name(c, ""))


def _is_garbled_word(w: str) -> bool:
    """Shape test for OCR-layer garbage: mixed scripts/digits inside a word, no vowels, odd case."""
    core = w.strip(_STRIP)
    if len(core) < 2:
        return False
    if core.isalpha():
        n_alpha, n_digit = len(core), 0
    else:
        n_alpha = sum(c.isalpha() for c in core)
        n_digit = sum(c.isdigit() for c in core)
        if len(core) - n_alpha - n_digit > len(core) / 2:
            return True
        if n_alpha and n_digit and not _ALNUM_MIX_OK.fullmatch(core):
            return True
    if n_alpha >= 5 and n_alpha == len(core) and not any(c in _VOWELS for c in core) \
            and all(_is_latin_letter(c) for c in core):
        return True
    if n_alpha >= 3 and _ODD_CASE.search(core) and not _CAMEL.search(core):
        return True
    return False


def text_stats(text: str) -> dict[str, float]:
    """Character/word statistics; the garbled-word share is estimated on <= 400 evenly spaced words."""
    words = text.split()
    n_chars = sum(not c.isspace() for c in text)
    n_alpha = sum(c.isalpha() for c in text)
    sample = words[:: max(1, len(words) // _SAMPLE_WORDS)] if words else []
    garb = sum(_is_garbled_word(w) for w in sample) / len(sample) if sample else 0.0
    low = text.lower()
    n_latin = sum(low.count(c) for c in "abcdefghijklmnopqrstuvwxyz")
    vowel = round(sum(low.count(c) for c in "aeiouy") / n_latin, 4) if n_latin >= 30 else None
    return {
        "chars": n_chars,
        "words": len(words),
        "alpha": round(n_alpha / n_chars, 4) if n_chars else 0.0,
        "garb": round(garb, 4),
        "mwl": round(sum(len(w) for w in words) / len(words), 3) if words else 0.0,
        "vowel": vowel,
    }


def _order_blocks(blocks: list, width: float) -> list:
    """Reading order for text blocks: one column, or two columns split at the page middle with
    full-width blocks (titles, figures, footers) acting as separators."""
    tb = [b for b in blocks if b[6] == 0 and b[4].strip()]
    if not tb:
        return []
    mid = width / 2.0
    slack = 0.02 * width
    left = [b for b in tb if b[2] <= mid + slack]
    right = [b for b in tb if b[0] >= mid - slack and b not in left]
    if len(left) < 2 or len(right) < 2:
        return sorted(tb, key=lambda b: (round(b[1] / 3), b[0]))
    span = sorted((b for b in tb if b not in left and b not in right), key=lambda b: b[1])
    out: list = []
    top = -math.inf
    for sep in span + [None]:
        bottom = sep[1] if sep is not None else math.inf
        seg_l = sorted((b for b in left if top <= b[1] < bottom), key=lambda b: b[1])
        seg_r = sorted((b for b in right if top <= b[1] < bottom), key=lambda b: b[1])
        out.extend(seg_l)
        out.extend(seg_r)
        if sep is not None:
            out.append(sep)
            top = sep[1]
    # anything not placed (numerical edge cases) goes last in y order
    placed = {id(b) for b in out}
    out.extend(sorted((b for b in tb if id(b) not in placed), key=lambda b: b[1]))
    return out


def _ink_fraction(page, dpi: int = 24) -> float:
    """Share of dark pixels on a low-resolution grayscale render (0 = blank page)."""
    import numpy as np
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    a = np.frombuffer(pix.samples, dtype=np.uint8)
    if a.size == 0:
        return 0.0
    return float((a < 200).mean())


def extract_page(page, *, tables: bool = False, ink_dpi: int = 24) -> tuple[str, dict[str, Any]]:
    """Text (reading order) and features of one pymupdf page."""
    rect = page.rect
    area = max(rect.width * rect.height, 1.0)
    # character-level trace: visible vs invisible (render mode 3) text, replacement/PUA/control chars
    n_vis = n_inv = n_repl = n_pua = n_ctrl = 0
    text_area = 0.0
    type3 = 0
    for span in page.get_texttrace():
        chars = span.get("chars", ())
        n = len(chars)
        if not n:
            continue
        invisible = span.get("type") == 3 or (span.get("opacity") is not None and span.get("opacity") == 0)
        if invisible:
            n_inv += n
        else:
            n_vis += n
        x0, y0, x1, y1 = span.get("bbox", (0, 0, 0, 0))
        text_area += max(0.0, min(x1, rect.x1) - max(x0, rect.x0)) * max(0.0, min(y1, rect.y1) - max(y0, rect.y0))
        for ch in chars:
            u = ch[0]
            if u == 0xFFFD or u <= 0:
                n_repl += 1
            elif 0xE000 <= u <= 0xF8FF:
                n_pua += 1
            elif u < 32 and u not in (9, 10, 13):
                n_ctrl += 1
    for f in page.get_fonts():
        if f[2] == "Type3":
            type3 += 1
    img_area = 0.0
    n_images = 0
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        w = max(0.0, min(x1, rect.x1) - max(x0, rect.x0))
        h = max(0.0, min(y1, rect.y1) - max(y0, rect.y0))
        if w * h > 0:
            n_images += 1
            img_area += w * h
    blocks = page.get_text("blocks")
    table_md: list[tuple[Any, str]] = []
    if tables:
        try:
            found = page.find_tables()
            for t in found.tables:
                md = t.to_markdown().strip()
                if md:
                    table_md.append((t.bbox, md))
        except Exception:  # noqa: BLE001 - table finder is best effort
            table_md = []
    if table_md:
        import pymupdf

        trects = [pymupdf.Rect(bb) for bb, _ in table_md]
        blocks = [b for b in blocks if not any(pymupdf.Rect(b[:4]).intersects(r) for r in trects)]
        blocks = blocks + [(bb[0], bb[1], bb[2], bb[3], md, -1, 0) for bb, md in table_md]
    ordered = _order_blocks(blocks, rect.width)
    text = "\n\n".join(b[4].strip() for b in ordered)
    stats = text_stats(text)
    # the ink probe renders the page (the costliest feature): only where text is scarce or images
    # are large, i.e. where "is there anything to OCR?" is a real question
    need_ink = stats["chars"] < INK_MAX_CHARS or img_area / area > 0.3
    ink = _ink_fraction(page, ink_dpi) if (ink_dpi and need_ink) else None
    n_all = n_vis + n_inv
    feats = {
        "chars": stats["chars"],
        "words": stats["words"],
        "vis": n_vis,
        "inv": n_inv,
        "inv_ratio": round(n_inv / n_all, 4) if n_all else 0.0,
        "repl": n_repl,
        "pua": n_pua,
        "ctrl": n_ctrl,
        "type3": type3,
        "tcov": round(min(1.0, text_area / area), 4),
        "icov": round(min(1.0, img_area / area), 4),
        "imgs": n_images,
        "alpha": stats["alpha"],
        "garb": stats["garb"],
        "mwl": stats["mwl"],
        "vowel": stats["vowel"],
        "ink": round(ink, 4) if ink is not None else None,
        "rot": int(page.rotation),
        "w": round(rect.width, 1),
        "h": round(rect.height, 1),
        "tables": len(table_md),
    }
    return text, feats


def extract_document(src: bytes | str, *, tables: bool = False, ink_dpi: int = 24, max_pages: int | None = None) -> dict:
    """Per-page texts and features plus document metadata. Runs inside ``run_isolated``."""
    d = open_pdf(src)
    try:
        if d.needs_pass:
            return {"error": "encrypted"}
        meta = d.metadata or {}
        texts, feats = [], []
        n = d.page_count if max_pages is None else min(d.page_count, max_pages)
        for i in range(n):
            try:
                page = d.load_page(i)
                t, f = extract_page(page, tables=tables, ink_dpi=ink_dpi)
            except Exception as e:  # noqa: BLE001 - one broken page does not sink the document
                t, f = "", {"error": f"{type(e).__name__}"[:80]}
            texts.append(t)
            feats.append(f)
        return {
            "texts": texts,
            "features": feats,
            "producer": (meta.get("producer") or "")[:200],
            "creator": (meta.get("creator") or "")[:200],
            "n_pages": d.page_count,
        }
    finally:
        d.close()


def scanner_hint(producer: str, creator: str = "") -> bool:
    return bool(SCANNER_RE.search(f"{producer} {creator}"))


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


# per-page OCR results travel in media metadata too: {page_index: {...}}
OCR_PAGES = "ocr_pages"
