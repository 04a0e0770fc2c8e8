from __future__ import annotations

import gzip
import os
import time

import pytest

from assay.stages.pdf import _isolate
from assay.stages.pdf.reader import PdfReader, validate_pdf


def _read(paths, **kw):
    return list(PdfReader(paths, **kw).run())


def _sleep_forever():
    time.sleep(60)


def _allocate_a_lot():
    return bytearray(1024 * 1024 * 1024)  # 1 GiB under a 256 MiB address-space limit


def _boom():
    raise RuntimeError("boom")


def test_isolation_timeout_memory_error_and_ok():
    t0 = time.monotonic()
    assert _isolate.run_isolated(_sleep_forever, timeout_s=0.5)[0] == _isolate.TIMEOUT
    assert time.monotonic() - t0 < 5
    assert _isolate.run_isolated(_allocate_a_lot, timeout_s=20, max_memory_mb=256)[0] == _isolate.MEMORY
    status, msg = _isolate.run_isolated(_boom, timeout_s=20)
    assert status == _isolate.ERROR and "boom" in msg
    assert _isolate.run_isolated(sum, [1, 2, 3], timeout_s=20) == (_isolate.OK, 6)
    # large results travel through the pipe without deadlock
    status, val = _isolate.run_isolated(lambda: "x" * 5_000_000, timeout_s=20)
    assert status == _isolate.OK and len(val) == 5_000_000


def test_reject_reasons(tmp_path, pf):
    good = pf.text_pdf(tmp_path / "good.pdf", [pf.page_text(0), pf.page_text(1)])
    enc = pf.encrypted_pdf(tmp_path / "enc.pdf")
    (tmp_path / "zero.pdf").write_bytes(pf.ZERO_PAGE_PDF)
    (tmp_path / "garbage.pdf").write_bytes(b"%PDF-1.4\n" + os.urandom(3000))
    (tmp_path / "notpdf.pdf").write_bytes(b"<html>not a pdf</html>")
    docs = {os.path.basename(d.id.removeprefix("pdf:")): d for d in _read([str(tmp_path)])}
    assert set(docs) == {"good.pdf", "enc.pdf", "zero.pdf", "garbage.pdf", "notpdf.pdf"}
    assert "reject_reason" not in docs["good.pdf"].metadata
    assert docs["good.pdf"].metadata["pdf__n_pages"] == 2
    assert docs["good.pdf"].metadata["source"] == "pdf"
    assert docs["good.pdf"].metadata["path"] == good
    assert docs["good.pdf"].media[0].path == good
    assert docs["enc.pdf"].metadata["reject_reason"] == "pdf_encrypted" and enc
    assert docs["zero.pdf"].metadata["reject_reason"] == "pdf_zero_pages"
    assert docs["garbage.pdf"].metadata["reject_reason"] == "pdf_corrupt"
    assert docs["notpdf.pdf"].metadata["reject_reason"] == "pdf_corrupt"


def test_oversized_and_timeout(tmp_path, pf):
    p = pf.text_pdf(tmp_path / "three.pdf", [pf.page_text(i) for i in range(3)])
    assert _read([p], max_pages=2)[0].metadata["reject_reason"] == "pdf_oversized"
    assert _read([p], max_bytes=100)[0].metadata["reject_reason"] == "pdf_oversized"
    assert validate_pdf(p, timeout_s=1e-6)[0] == "pdf_timeout"
    r = PdfReader([p], timeout_s=1e-6)
    docs = list(r.run())
    assert docs[0].metadata["reject_reason"] == "pdf_timeout"
    assert r.stats["reject/pdf_timeout"].total == 1


def test_unreadable_path_yields_one_document(tmp_path):
    missing = str(tmp_path / "missing.pdf")
    docs = _read([missing])
    assert len(docs) == 1 and docs[0].id == "pdf:missing.pdf"  # ids: relative to the root given
    assert docs[0].metadata["reject_reason"] == "pdf_unreadable" and docs[0].text == ""


def test_corrupt_warc_does_not_crash(tmp_path):
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n") + b"\x00garbage" * 100)
    docs = _read([str(bad)])
    assert docs and all(d.metadata.get("reject_reason", "").startswith(("pdf_", "warc_")) for d in docs)


def test_rank_sharding(tmp_path, pf):
    for i in range(4):
        pf.text_pdf(tmp_path / f"f{i}.pdf", [pf.page_text(i)])
    r = PdfReader([str(tmp_path)])
    a = [d.id for d in r.run(rank=0, world_size=2)]
    b = [d.id for d in r.run(rank=1, world_size=2)]
    assert len(a) == len(b) == 2 and not set(a) & set(b)


@pytest.mark.shared_data
def test_warc_pdfs_and_shared_files(shared_data):
    warc = shared_data / "warc" / "aut" / "aut_example.pdf.warc.gz"
    docs = _read([str(warc)])
    assert len(docs) == 2
    for d in docs:
        assert d.metadata["url"].startswith("https://yorkspace.library.yorku.ca/")
        assert d.metadata["source_file"] == str(warc)
        assert d.metadata["record_id"].startswith("<urn:uuid:")
        assert d.media[0].media_bytes[:5] == b"%PDF-"
        assert "reject_reason" not in d.metadata and d.metadata["pdf__n_pages"] > 0
    enc = shared_data / "pdf" / "pypdf_sample_files" / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
    assert _read([str(enc)])[0].metadata["reject_reason"] == "pdf_encrypted"


def _pdf_warc_members(pf, tmp_path, n: int = 4) -> list[bytes]:
    """One gzip member per record: ``n`` PDF responses (distinct PDFs), then one HTML page."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = []
    for i in range(n + 1):
        buf = io.BytesIO()
        w = WARCWriter(buf, gzip=True)
        if i < n:
            body = open(pf.text_pdf(tmp_path / f"src{i}.pdf", [pf.page_text(i)]), "rb").read()
            ctype, url = "application/pdf", f"http://pdfs.example/{i}.pdf"
        else:
            body, ctype, url = b"<html><body><p>page</p></body></html>", "text/html", "http://pdfs.example/page"
        hh = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=hh))
        out.append(buf.getvalue())
    return out


def test_pdfs_in_a_damaged_warc_after_the_damage_are_read(pf, tmp_path):
    """The PDF reader shares the web reader's WARC iterator: a damaged gzip member is one region document
    (a `warc_*` reason) and the PDFs after it are still read; ids are shaped like web ids."""
    members = _pdf_warc_members(pf, tmp_path)
    bad = bytearray(members[1])
    for k in range(len(bad) // 2, len(bad) // 2 + 32):
        bad[k] ^= 0xA5
    members[1] = bytes(bad)
    (tmp_path / "crawl").mkdir()
    path = tmp_path / "crawl" / "pdfs.warc.gz"
    path.write_bytes(b"".join(members))
    r = PdfReader([str(tmp_path / "crawl")])
    docs = list(r.run())
    good = [d for d in docs if not d.metadata.get("reject_reason")]
    assert sorted(d.metadata["url"] for d in good) == ["http://pdfs.example/0.pdf", "http://pdfs.example/2.pdf",
                                                      "http://pdfs.example/3.pdf"]
    assert all(d.id.startswith("pdf:crawl/pdfs.warc.gz#urn:uuid:") for d in good)
    damaged = [d for d in docs if d.metadata.get("reject_reason")]
    assert [d.metadata["reject_reason"] for d in damaged] == ["warc_corrupt_gzip"]
    st = {k: v.total for k, v in r.stats.stats.items()}
    assert st["skipped/not_pdf"] == 1 and st["input_files"] == 1


def test_pdf_reader_lists_through_fsspec_memory(pf, tmp_path):
    import fsspec

    mem = fsspec.filesystem("memory")
    base = f"memory://pdf-reader-{os.getpid()}"
    mem.pipe(f"{base}/docs/a.pdf", open(pf.text_pdf(tmp_path / "a.pdf", [pf.page_text(0)]), "rb").read())
    mem.pipe(f"{base}/docs/notes.txt", b"x")
    docs = list(PdfReader([f"{base}/docs"]).run())
    assert [d.id for d in docs] == ["pdf:docs/a.pdf"] and docs[0].metadata["pdf__n_pages"] == 1
    assert docs[0].media[0].media_bytes[:5] == b"%PDF-"  # not a local file: the bytes travel
