"""assay.io.warc: the one WARC parser, free of datatrove, shared by the web/PDF readers and the classifiers'
``warc_html`` training-data builder (issue 13: one implementation of WARC parsing)."""

from __future__ import annotations

import ast
import gzip
from pathlib import Path

from assay.io.warc import REASON_CORRUPT_GZIP, WarcFileIterator, iter_records

REPO = Path(__file__).resolve().parents[2]


def _record(uri: str, body: str, rid: int) -> bytes:
    http = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n").encode() + body.encode()
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0000000{rid}>\r\n"
            f"WARC-Target-URI: {uri}\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def _page(n: int) -> str:
    words = " ".join(f"word{n}x{i}" for i in range(60))
    return f"<html><head><title>Page {n}</title></head><body><article><p>{words}.</p></article></body></html>"


def _damaged_warc(path: Path) -> Path:
    """Three gzip members, one record each; the middle member's deflate data is overwritten with junk."""
    members = [gzip.compress(_record(f"http://site{n}.example/p", _page(n), n)) for n in range(3)]
    bad = bytearray(members[1])
    bad[12:40] = b"\xff" * 28
    path.write_bytes(members[0] + bytes(bad) + members[2])
    return path


def test_iter_records_resyncs_after_a_damaged_member(tmp_path):
    recs = list(iter_records(_damaged_warc(tmp_path / "d.warc.gz")))
    good = [r for r in recs if r.reason is None]
    assert [r.uri for r in good] == ["http://site0.example/p", "http://site2.example/p"]
    assert all(b"<article>" in r.payload and r.content_type == "text/html" for r in good)
    damaged = [r for r in recs if r.reason is not None]
    assert len(damaged) == 1 and damaged[0].reason == REASON_CORRUPT_GZIP and damaged[0].offset > 0
    assert damaged[0].resync_offset is not None and damaged[0].resync_offset > damaged[0].offset


def test_iterator_reports_counters_through_a_plain_callback(tmp_path):
    seen: list[str] = []
    with open(_damaged_warc(tmp_path / "d.warc.gz"), "rb") as fh:
        out = list(WarcFileIterator(fh, lambda *k: seen.extend(k)).events(lambda rec, off: rec.rec_type))
    assert out.count("response") == 2
    assert seen.count("records") == 2 and "resync/gzip_member" in seen


def test_warc_html_builder_keeps_records_after_damage(tmp_path):
    """The training-data builder reads through the same parser: a damaged member loses only itself (the old
    fastwarc loop stopped at the first damaged member and dropped every later record)."""
    from assay.classifiers.data import SourceLog, build_warc_html

    _damaged_warc(tmp_path / "d.warc.gz")
    log = SourceLog()
    ex = list(build_warc_html({"path": "*.warc.gz"}, tmp_path, log))
    assert sorted(e.group for e in ex) == ["warc:http://site0.example/p", "warc:http://site2.example/p"]
    assert all("word2x5" in e.text or "word0x5" in e.text for e in ex)
    assert log.skipped == 1


def test_one_warc_parser_in_the_project():
    """Only assay/io parses WARCs: no other module imports warcio, fastwarc or resiliparse's WARC reader."""
    offenders = []
    for top in ("pipeline", "stages", "classifiers", "assay"):
        for py in (REPO / top).rglob("*.py"):
            if py.is_relative_to(REPO / "assay" / "io"):
                continue
            for node in ast.walk(ast.parse(py.read_text(), str(py))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] in ("warcio", "fastwarc") for n in names):
                    offenders.append(str(py.relative_to(REPO)))
    assert offenders == []
