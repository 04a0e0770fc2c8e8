"""Generators for the fault suite: good and bad inputs written at test time, a tiny recipe writer,
run helpers that read back a run directory, and fake OpenAI-compatible OCR servers.

Loaded by file location from ``conftest.py`` (no ``sys.path`` changes)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def words(seed: str, n: int = 300) -> str:
    """Unique English-looking prose (no near duplicates between seeds)."""
    vocab = ("river stone garden window market teacher letter morning village harbor engine pattern "
             "question answer music silver forest number theory bridge winter summer planet signal").split()
    out = []
    for j in range(n):
        h = hashlib.sha256(f"{seed}-{j}".encode()).digest()
        out.append(vocab[h[0] % len(vocab)] + h[1:3].hex())
    return " ".join(out)


# ------------------------------------------------------------------------------------------- web
def _html(i: str) -> bytes:
    paras = "".join(f"<p>{words(f'{i}-{k}', 60)}.</p>" for k in range(5))
    return f"<html><head><title>page {i}</title></head><body><h1>Page {i}</h1>{paras}</body></html>".encode()


def warc_records(urls_and_payloads: list[tuple[str, bytes]], *, gz: bool = True) -> list[bytes]:
    """Each record serialized on its own (one gzip member per record when gz)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = []
    for url, payload in urls_and_payloads:
        buf = io.BytesIO()
        w = WARCWriter(buf, gzip=gz)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(payload), http_headers=headers))
        out.append(buf.getvalue())
    return out


def good_warc(path: Path, prefix: str, n: int = 3) -> list[str]:
    urls = [f"http://{prefix}.example/{i}" for i in range(n)]
    path.write_bytes(b"".join(warc_records([(u, _html(u)) for u in urls])))
    return urls


def corrupt_gzip_warc(path: Path) -> tuple[list[str], list[str]]:
    """Five gzip members; bytes flipped in the middle of the third member's deflate stream.
    Returns (urls before the damage, which must survive; urls at/after it)."""
    urls = [f"http://corrupt.example/{i}" for i in range(5)]
    recs = warc_records([(u, _html(u)) for u in urls])
    bad = bytearray(recs[2])
    mid = len(bad) // 2
    for k in range(mid, mid + 64):
        bad[k] ^= 0xA5
    recs[2] = bytes(bad)
    path.write_bytes(b"".join(recs))
    return urls[:2], urls[2:]


def truncated_warc(path: Path) -> tuple[list[str], str]:
    """Three records, the file cut in the middle of the last record's payload (uncompressed WARC so the
    cut is inside the record, not inside a gzip trailer). Returns (complete urls, cut url)."""
    urls = [f"http://truncated.example/{i}" for i in range(3)]
    recs = warc_records([(u, _html(u)) for u in urls], gz=False)
    last = recs[-1]
    path.write_bytes(b"".join(recs[:-1]) + last[: len(last) // 2])
    return urls[:-1], urls[-1]


def broken_header_warc(path: Path) -> tuple[list[str], list[str]]:
    """good, good, <a record whose WARC header block is garbage>, good, good (gzip member per record).
    Returns (urls before, urls after the broken record)."""
    urls = [f"http://brokenhdr.example/{i}" for i in range(4)]
    recs = warc_records([(u, _html(u)) for u in urls])
    garbage = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI http://brokenhdr.example/bad\r\n"
               b"Content-Length: not-a-number\r\n\r\nHTTP/1.1 200 OK\r\n\r\n<html>x</html>\r\n\r\n")
    broken = gzip.compress(garbage)
    path.write_bytes(b"".join(recs[:2]) + broken + b"".join(recs[2:]))
    return urls[:2], urls[2:]


def giant_html_warc(path: Path, n_bytes: int = 20_000_000) -> str:
    """One HTML page that is a single ~20 MB line (no newline at all)."""
    url = "http://giant.example/oneline"
    body = b"<html><body><p>" + (b"lorem ipsum dolor sit amet " * (n_bytes // 27)) + b"</p></body></html>"
    path.write_bytes(b"".join(warc_records([(url, body)])))
    return url


# ------------------------------------------------------------------------------- hostile web inputs
def raw_warc_record(url: str, http: bytes, *, record_id: str | None = None, content_length: int | str | None = None,
                    gz: bool = True) -> bytes:
    """One WARC response record written by hand (to lie about its length or reuse a record id)."""
    rid = record_id or f"<urn:uuid:{hashlib.sha256(url.encode()).hexdigest()[:32]}>"
    n = len(http) if content_length is None else content_length
    rec = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: {rid}\r\nWARC-Target-URI: {url}\r\n"
           f"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
           f"Content-Length: {n}\r\n\r\n").encode() + http + b"\r\n\r\n"
    return gzip.compress(rec) if gz else rec


def http_page(body: bytes, *, headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)) -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers) + b"\r\n" + body


def not_a_warc(path: Path, n_lines: int = 50) -> None:
    """A plain-text file named like a WARC whose lines have five fields (warcio reads them as ARC headers)."""
    path.write_bytes(b"".join(b"field%d alpha beta 20240101000000 %d\n" % (i, i) for i in range(n_lines)))


def gzip_body_cut_warc(path: Path, frac: float = 0.6) -> tuple[list[str], str]:
    """Three pages; the middle one's ``Content-Encoding: gzip`` body is cut at ``frac`` (the WARC record itself
    is complete and its length right). Returns (intact urls, cut url)."""
    urls = [f"http://gzcut.example/{i}" for i in range(3)]
    recs = []
    for i, u in enumerate(urls):
        if i == 1:
            body = gzip.compress(_html(u))
            body = body[: int(len(body) * frac)]
            http = http_page(body, headers=(("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")))
        else:
            http = http_page(_html(u))
        recs.append(raw_warc_record(u, http))
    path.write_bytes(b"".join(recs))
    return [urls[0], urls[2]], urls[1]


def huge_length_warc(path: Path, *, gz: bool = True) -> tuple[list[str], str]:
    """Three pages; the middle record declares ``Content-Length: 99999999999999999999``."""
    urls = [f"http://hugelen.example/{i}" for i in range(3)]
    recs = [raw_warc_record(u, http_page(_html(u)), content_length=(99999999999999999999 if i == 1 else None), gz=gz)
            for i, u in enumerate(urls)]
    path.write_bytes(b"".join(recs))
    return [urls[0], urls[2]], urls[1]


def shared_record_id_warc(path: Path, n: int = 3) -> list[str]:
    """``n`` different pages that all carry the same ``WARC-Record-ID``."""
    urls = [f"http://sameid.example/{i}" for i in range(n)]
    path.write_bytes(b"".join(raw_warc_record(u, http_page(_html(u)), record_id="<urn:uuid:same>") for u in urls))
    return urls


def utf16_meta_cp1252_warc(path: Path) -> tuple[str, str]:
    """A cp1252 page that declares ``<meta charset=utf-16>`` (and no HTTP charset). Returns (url, a phrase)."""
    url = "http://charset.example/cp1252"
    phrase = "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e \u2013 na\u00efve fa\u00e7ade"
    body = (f"<html><head><meta charset=\"utf-16\"><title>menu</title></head><body><p>{phrase}. "
            f"{words('cp1252', 80)}</p></body></html>").encode("cp1252")
    path.write_bytes(raw_warc_record(url, http_page(body, headers=(("Content-Type", "text/html"),))))
    return url, phrase


def fifo(path: Path) -> None:
    os.mkfifo(path)


def bytes_name(folder: Path, raw_name: bytes, data: bytes) -> bytes:
    """Write ``data`` to a file whose name is ``raw_name`` (bytes that need not be UTF-8); return the raw path."""
    full = os.path.join(os.fsencode(folder), raw_name)
    with open(full, "wb") as fh:
        fh.write(data)
    return full


# ------------------------------------------------------------------------------ hostile code inputs
def tar_with(path: Path, members: list[tuple[str, bytes | None, bytes]], *, encoding: str = "utf-8") -> None:
    """A tar of (name, type or None for a regular file, content) members, names written with ``encoding``."""
    import tarfile

    with tarfile.open(path, "w", encoding=encoding, format=tarfile.GNU_FORMAT) as tf:
        for name, typ, content in members:
            info = tarfile.TarInfo(name)
            if typ is None:
                info.size = len(content)
                tf.addfile(info, io.BytesIO(content))
            else:
                info.type = typ
                info.devmajor, info.devminor = 1, 3
                tf.addfile(info)


def zip_with(path: Path, members: list[tuple[str, bytes]]) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point
        with zipfile.ZipFile(path, "w") as zf:
            for name, content in members:
                zf.writestr(name, content)


def notebook_with_image(path: Path, image_bytes: int = 400_000) -> list[str]:
    """A notebook with two code cells and one output holding a large base64 PNG. Returns the code lines."""
    import base64

    code = [good_module("nb1", 3), good_module("nb2", 3)]
    png = base64.b64encode(hashlib.sha256(b"x").digest() * (image_bytes // 32)).decode()
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
          "cells": [{"cell_type": "code", "metadata": {}, "execution_count": i + 1, "source": c,
                     "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png}}]}
                    for i, c in enumerate(code)]}
    path.write_text(json.dumps(nb))
    return code


# ------------------------------------------------------------------------------------------ code
def good_module(seed: str, n_funcs: int = 12) -> str:
    """Plain, distinct Python source."""
    return "\n".join(
        f"def function_{k}_{seed}(value):\n    \"\"\"{words(f'code{seed}{k}', 8)}\"\"\"\n    return value * {k + 3} + {k}\n"
        for k in range(n_funcs)
    )


def good_code(root: Path, n: int = 3, n_funcs: int = 12) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(n):
        name = f"good_module_{i}.py"
        (root / name).write_text(good_module(str(i), n_funcs))
        names.append(name)
    return names


def binary_file(path: Path) -> None:
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64)


def invalid_utf8_file(path: Path) -> None:
    """Python-looking text with UTF-8 that is broken (lone continuation bytes, truncated sequences,
    overlongs) all over, so no charset explains it."""
    junk = b"\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc\xc0\xaf\xed\xa0\x80\xff\xfe"
    lines = [b"def broken_%d():\n    return '%s'\n" % (i, junk) for i in range(200)]
    path.write_bytes(b"".join(lines))


def giant_line_file(path: Path, n_bytes: int = 20_000_000) -> None:
    """Minified-looking JavaScript: `n_bytes` on ONE line (no newline anywhere)."""
    with open(path, "wb") as fh:
        written, i = 0, 0
        while written < n_bytes:
            chunk = "".join(f"function fn{j}(alpha,beta){{return alpha*beta+{j}}};" for j in range(i, i + 5000)).encode()
            fh.write(chunk)
            written += len(chunk)
            i += 5000


def traversal_zip(path: Path) -> tuple[str, str]:
    """A zip with one good member and one `../../etc/x` member. Returns (good member, evil member)."""
    good = "pkg/inside_ok.py"
    evil = "../../etc/x"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(good, good_module("zipgood"))
        zf.writestr(evil, "print('escaped the archive')\n")
    return good, evil


def bomb_zip(path: Path, member_mb: int = 200) -> tuple[str, str]:
    """A ~200 KB zip whose one member inflates to `member_mb` MB of zeros, next to a good member."""
    good = "pkg/bomb_neighbour.py"
    big = "bomb/zeros.txt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr(good, good_module("bombgood"))
        with zf.open(big, "w", force_zip64=True) as fh:
            block = b"0" * (1 << 20)
            for _ in range(member_mb):
                fh.write(block)
    return good, big


def lying_zip(path: Path) -> str:
    """A zip member whose central directory claims 10 bytes but whose deflate stream inflates to
    50 MB (a size-forging bomb). Returns the member name."""
    name = "forged/size.txt"
    payload = b"A" * (50 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, payload)
    data = bytearray(path.read_bytes())
    # patch the uncompressed size (offset 22 in the local header, 24 in the central directory entry)
    real = len(payload).to_bytes(4, "little")
    fake = (10).to_bytes(4, "little")
    lh = data.find(b"PK\x03\x04")
    cd = data.find(b"PK\x01\x02")
    assert data[lh + 22: lh + 26] == real and data[cd + 24: cd + 28] == real
    data[lh + 22: lh + 26] = fake
    data[cd + 24: cd + 28] = fake
    path.write_bytes(bytes(data))
    return name


# ------------------------------------------------------------------------------------------- pdf
_SENTENCES = [
    "The committee reviewed the annual report on water quality in the northern district.",
    "Measurements were taken every morning at the same three stations along the river.",
    "Most samples met the national standard, although two sites showed elevated nitrate levels.",
    "The authors recommend a second survey during the dry season to confirm these results.",
    "Local farmers agreed to share fertilizer records for the period under study.",
    "A simple regression model explains most of the variation between the stations.",
    "Further work should compare these findings with the historical data from earlier decades.",
    "The appendix lists every instrument, its calibration date and the person responsible.",
]


def prose(seed: str, n_sentences: int = 30) -> str:
    """Readable English sentences, unique per seed (a numbered sentence starts each paragraph)."""
    out = []
    for j in range(n_sentences):
        h = hashlib.sha256(f"{seed}-{j}".encode()).digest()
        s = _SENTENCES[h[0] % len(_SENTENCES)]
        if j % 4 == 0:
            s = f"Observation {int.from_bytes(h[1:4], 'big')} from series {seed} was recorded. " + s
        out.append(s)
    return " ".join(out)


def text_pdf(path: Path, seed: str, pages: int = 2) -> None:
    import pymupdf

    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        text = prose(f"{seed}-{p}", 24)
        page.insert_textbox(pymupdf.Rect(50, 50, 560, 780), text, fontsize=10)
    doc.save(path)
    doc.close()


def encrypted_pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 50, 560, 780), words("secret", 200), fontsize=10)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")
    doc.close()


def corrupt_pdf(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7\n" + os.urandom(20_000))


def truncated_pdf(path: Path, tmp: Path) -> None:
    text_pdf(tmp, "truncated-src", pages=3)
    data = tmp.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    tmp.unlink()


def scanned_pdf(path: Path, seed: str) -> None:
    """A one-page PDF that is only an image of text (no text layer): the router sends it to OCR."""
    import pymupdf

    src = pymupdf.open()
    page = src.new_page()
    page.insert_textbox(pymupdf.Rect(40, 40, 570, 800), words(seed, 250), fontsize=11)
    pix = page.get_pixmap(dpi=110, colorspace=pymupdf.csGRAY)
    src.close()
    out = pymupdf.open()
    p = out.new_page()
    p.insert_image(p.rect, stream=pix.tobytes("png"))
    out.save(path)
    out.close()


def billion_laughs_pdf(path: Path, fanout: int = 1000, *, paint: bytes = b"BT /F1 1 Tf 10 10 Td (x) Tj ET\n") -> None:
    """A ~10 KB valid one-page PDF whose content draws form X1 `fanout` times, X1 draws X0 `fanout`
    times, X0 runs `paint` `fanout` times: fanout**3 operations, so parsing the page runs for hours
    while opening the file is instant. With the default `paint` (show a string) text extraction also
    accumulates fanout**3 characters, i.e. memory explodes; with `paint=b"0 0 1 1 re f\n"` (fill a
    rectangle) memory stays flat and the parse only hangs."""
    def stream(body: bytes, extra: bytes = b"") -> bytes:
        data = zlib.compress(body, 9)
        return b"<< /Length %d /Filter /FlateDecode %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"

    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> /XObject << /X1 7 0 R >> >> >>",
        stream(b"/X1 Do\n" * fanout),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        stream(paint * fanout, form + b"/Resources << /Font << /F1 5 0 R >> >> "),
        stream(b"/X0 Do\n" * fanout, form + b"/Resources << /XObject << /X0 6 0 R >> >> "),
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    path.write_bytes(out.getvalue())


# ---------------------------------------------------------------------------------------- recipe
def write_recipe(path: Path, sources: list[dict], *, tasks: int = 1, dedup: bool = False, rules: list | None = None,
                 ensemble: dict | None = None) -> Path:
    """A tiny recipe: the given sources, text normalization only, no decision rules unless given (so
    only a stage's reject_reason can exclude a document), dedup off unless asked for."""
    import yaml

    recipe = {
        "name": path.stem,
        "sources": sources,
        "common_steps": [{"kind": "normalize_v1"}],
        "dedup": {"enabled": dedup, "exact": True, "near": True},
        "decisions": {"rules": rules or [], "ensemble": ensemble or {}},
        "executor": {"kind": "local", "tasks": tasks, "workers": tasks},
    }
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def assay(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.pipeline.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


# ----------------------------------------------------------------------------------- run results
def run_tables(run_dir: Path):
    """(signal store, kept, excluded) polars frames of a finished run."""
    import polars as pl

    def cat(files, columns=None):
        files = sorted(files)
        if not files:
            return pl.DataFrame()
        return pl.concat([pl.read_parquet(f, columns=columns) for f in files], how="diagonal_relaxed")

    store = cat((run_dir / "signals").glob("part-*.parquet"))
    kept = cat((run_dir / "output").rglob("*.parquet"))
    excluded = cat((run_dir / "excluded").rglob("*.parquet"))
    return store, kept, excluded


# --------------------------------------------------------------------------------- OCR servers
class FakeOcrServer:
    """OpenAI-compatible endpoint on 127.0.0.1. /v1/models answers; chat completions either answer
    HTTP 500 (mode="500") or hang for `hang_s` seconds before answering (mode="hang")."""

    def __init__(self, mode: str, hang_s: float = 30.0) -> None:
        assert mode in ("500", "hang")
        self.mode, self.hang_s = mode, hang_s
        self.chat_requests = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout)
                    pass

            def do_GET(self):
                self._json(200, {"object": "list", "data": [{"id": "x", "object": "model"}]})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.chat_requests += 1
                if server.mode == "hang":
                    server.stop.wait(server.hang_s)
                    self._json(200, {"id": "c", "object": "chat.completion", "model": "x", "choices": [
                        {"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "too late"}}]})
                else:
                    self._json(500, {"error": {"message": "internal error", "type": "server_error"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
