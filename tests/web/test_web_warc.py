from __future__ import annotations

import gzip
import os
from collections import Counter
from pathlib import Path

import pytest

from assay.stages.web.warc import (
    WARC_REASON_CODES,
    WarcReader,
    classify_payload,
    decode_html_bytes,
    expand_paths,
)

REQUIRED_META = ("source", "url", "date", "record_id", "content_type", "source_file")


def _stats(reader: WarcReader) -> dict[str, float]:
    return {k: v.total for k, v in reader.stats.stats.items()}


def _outcomes(stats: dict[str, float]) -> float:
    return sum(v for k, v in stats.items() if k == "emitted" or k.startswith("skipped/")) + sum(
        v for k, v in stats.items() if k.startswith("reject/")) - stats.get("files/aborted", 0)


def _independent_record_count(path: str) -> int:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as f:
        return sum(1 for _ in ArchiveIterator(f, arc2warc=True))


@pytest.fixture(scope="module")
def warc_dir(shared_data: Path) -> Path:
    return shared_data / "warc"


# ---------------------------------------------------------------------------------------------
# real files
# ---------------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_every_real_file_is_read_and_every_record_accounted(warc_dir: Path):
    files = expand_paths([str(warc_dir)])
    assert len(files) >= 20  # every archive in ../shared/data/warc (WARC, WET, WAT, ARC)
    assert not any(f.endswith("LICENSE") for f in files)
    for f in files:
        reader = WarcReader([f])
        docs = list(reader.run())
        st = _stats(reader)
        expected = _independent_record_count(f)
        assert st.get("records", 0) == expected, f
        # each record has exactly one outcome: emitted, skipped/<why> or reject/<reason>
        assert _outcomes(st) == expected, (f, st)
        # each emitted/rejected record is one document
        n_reject_docs = sum(1 for d in docs if d.metadata.get("reject_reason"))
        assert len(docs) == st.get("emitted", 0) + n_reject_docs
        for d in docs:
            for key in REQUIRED_META:
                assert key in d.metadata, (f, key)
            assert d.metadata["source"] == "web"
            assert d.metadata["source_file"] == f
            if not d.metadata.get("reject_reason"):
                assert d.text.strip()
                assert d.metadata["url"].startswith(("http://", "https://", "dns:", "ftp://")), d.metadata["url"]
            else:
                assert d.metadata["reject_reason"] in WARC_REASON_CODES


@pytest.mark.shared_data
def test_whole_folder_totals(warc_dir: Path):
    reader = WarcReader([str(warc_dir)])
    docs = list(reader.run())
    st = _stats(reader)
    assert st["records"] == sum(_independent_record_count(f) for f in expand_paths([str(warc_dir)]))
    assert st["emitted"] >= 150
    assert st.get("skipped/pdf", 0) >= 1  # PDFs inside aut_example.pdf.warc.gz are skipped and counted
    assert st.get("skipped/non_html", 0) > 0
    assert st.get("skipped/request", 0) > 0
    assert st["documents"] == len(docs)
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids))


@pytest.mark.shared_data
def test_clipped_record_gets_reason_and_run_goes_on(warc_dir: Path):
    reader = WarcReader([str(warc_dir / "resiliparse/clipped.warc.gz"), str(warc_dir / "warcio/example.warc.gz")])
    docs = list(reader.run())
    clipped = [d for d in docs if d.metadata.get("reject_reason") == "warc_truncated_record"]
    assert len(clipped) == 1
    assert clipped[0].metadata["warc__missing_bytes"] > 0
    assert clipped[0].metadata["url"].startswith("http://www.houstonpress.com/")
    assert any(d.metadata["source_file"].endswith("example.warc.gz") and not d.metadata.get("reject_reason")
               for d in docs)


@pytest.mark.shared_data
def test_uri_in_angle_brackets_is_stripped(warc_dir: Path):
    docs = list(WarcReader([str(warc_dir / "dolma/sample-0000.warc.gz")]).run())
    assert docs
    for d in docs:
        assert not d.metadata["url"].startswith("<") and not d.metadata["url"].endswith(">")
    assert any(d.metadata["url"] == "https://soldaini.net/" for d in docs)


@pytest.mark.shared_data
def test_arc_file_has_stable_ids_and_metadata(warc_dir: Path):
    p = str(warc_dir / "warcio/example.arc.gz")
    a = list(WarcReader([p]).run())
    b = list(WarcReader([p]).run())
    assert len(a) == 1
    assert a[0].id == b[0].id  # warcio invents random uuids for ARC; ours are stable
    assert a[0].metadata["url"] == "http://example.com/"
    assert a[0].metadata["date"].startswith("2014-02-16")
    assert "Example Domain" in a[0].text


@pytest.mark.shared_data
def test_chunked_transfer_encoding_is_decoded(warc_dir: Path):
    docs = list(WarcReader([str(warc_dir / "warcio/example-iana.org-chunked.warc")]).run())
    assert len(docs) == 1
    text = docs[0].text
    assert text.lstrip().lower().startswith("<!doctype html")
    assert text.rstrip().lower().endswith("</html>")
    # no chunk-size lines left inside the payload
    assert not any(line.strip() and all(c in "0123456789abcdefABCDEF" for c in line.strip()) and len(line.strip()) <= 4
                   for line in text.splitlines()[:3])


@pytest.mark.shared_data
def test_charset_from_http_header_euc_jp_and_gzip_content_encoding(warc_dir: Path):
    docs = list(WarcReader([str(warc_dir / "resiliparse/clueweb-quirk.warc.gz")]).run())
    assert len(docs) == 29
    d = docs[0]
    assert d.metadata["warc__charset"] == "euc_jp"
    assert "ヘッドポーター" in d.text


@pytest.mark.shared_data
def test_wet_records_are_plain_text_and_can_be_disabled(warc_dir: Path):
    p = str(warc_dir / "cc_whirlwind/whirlwind.warc.wet.gz")
    docs = list(WarcReader([p]).run())
    assert len(docs) == 1 and docs[0].metadata["content_type"] == "text/plain"
    assert "<html" not in docs[0].text.lower()
    r = WarcReader([p], include_wet=False)
    assert list(r.run()) == []
    assert _stats(r)["skipped/conversion"] == 1


@pytest.mark.shared_data
def test_sharding_is_a_partition(warc_dir: Path):
    world = 3
    all_ids = [d.id for d in WarcReader([str(warc_dir)]).run()]
    shard_ids = []
    for rank in range(world):
        shard_ids.extend(d.id for d in WarcReader([str(warc_dir)]).run(rank=rank, world_size=world))
    assert sorted(shard_ids) == sorted(all_ids)
    files = WarcReader([str(warc_dir)]).list_files()
    shards = [WarcReader([str(warc_dir)]).get_shard(r, world) for r in range(world)]
    assert sorted(sum(shards, [])) == files


@pytest.mark.shared_data
def test_glob_and_limit(warc_dir: Path):
    r = WarcReader([str(warc_dir)], glob="*.arc.gz")
    assert [os.path.basename(f) for f in r.list_files()] == ["example.arc.gz"]
    assert len(list(WarcReader([str(warc_dir)], limit=5).run())) == 5


@pytest.mark.shared_data
def test_html_only_false_emits_other_text(warc_dir: Path):
    p = str(warc_dir / "webarchive-commons/IAH-urls-wget.warc.gz")
    html_docs = list(WarcReader([p]).run())
    all_docs = list(WarcReader([p], html_only=False).run())
    assert len(all_docs) > len(html_docs)
    assert any(d.metadata["content_type"] == "text/plain" for d in all_docs)


# ---------------------------------------------------------------------------------------------
# broken input (made from real files in tmp_path)
# ---------------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_broken_files_never_crash(warc_dir: Path, tmp_path: Path):
    src = (warc_dir / "resiliparse/resiliparse_warcfile_cc2020.warc.gz").read_bytes()
    (tmp_path / "half.warc.gz").write_bytes(src[: len(src) // 2])
    garbled = bytearray(src)
    garbled[len(src) // 2: len(src) // 2 + 300] = bytes(range(256)) + bytes(44)
    (tmp_path / "garbled.warc.gz").write_bytes(bytes(garbled))
    import random

    (tmp_path / "random.warc.gz").write_bytes(random.Random(0).randbytes(4000))
    (tmp_path / "newline-random.warc").write_bytes(b"\n" + random.Random(1).randbytes(4000))
    (tmp_path / "empty.warc").write_bytes(b"")
    (tmp_path / "notawarc.warc").write_bytes(b"hello world\nthis is not a warc\n" * 20)
    (tmp_path / "gzipped-text.warc.gz").write_bytes(gzip.compress(b"just text, no records\n" * 50))
    plain = (warc_dir / "warcio/example-iana.org-chunked.warc").read_bytes()
    (tmp_path / "plaincut.warc").write_bytes(plain[: len(plain) - 3000])
    missing = str(tmp_path / "missing.warc.gz")

    def run(name):
        r = WarcReader([str(tmp_path / name) if name != "missing" else missing])
        docs = list(r.run())
        return docs, _stats(r)

    docs, st = run("half.warc.gz")
    reasons = Counter(d.metadata.get("reject_reason") for d in docs)
    assert reasons["warc_truncated_record"] + reasons["warc_corrupt_gzip"] >= 1
    assert st["emitted"] >= 3  # records before the cut are kept

    docs, st = run("garbled.warc.gz")
    assert any(d.metadata.get("reject_reason") == "warc_corrupt_gzip" for d in docs)
    assert st["emitted"] >= 3

    for name in ("random.warc.gz", "newline-random.warc", "empty.warc", "notawarc.warc", "gzipped-text.warc.gz",
                 "missing"):
        docs, st = run(name)
        assert len(docs) >= 1, name
        assert all(d.text == "" for d in docs)
        assert {d.metadata["reject_reason"] for d in docs} <= {
            "warc_unreadable_file", "warc_corrupt_gzip", "warc_invalid_record", "warc_not_an_archive"}, name
        assert _outcomes(st) == st.get("records", 0), name
        assert docs[-1].id.split("#")[0].endswith(name if name != "missing" else "missing.warc.gz")

    docs, st = run("plaincut.warc")
    assert [d.metadata["reject_reason"] for d in docs] == ["warc_truncated_record"]


def test_decode_html_bytes_order():
    html = "<html><head><meta charset='windows-1251'></head><body>Привет мир</body></html>"
    raw = html.encode("cp1251")
    text, codec, source = decode_html_bytes(raw)
    assert "Привет" in text and source == "meta"
    text, codec, source = decode_html_bytes("<p>héllo</p>".encode("utf-8"), "utf-8")
    assert text == "<p>héllo</p>" and source == "http"
    # declared charset that does not decode falls back to utf-8
    text, codec, source = decode_html_bytes("<p>日本語</p>".encode("utf-8"), "ascii")
    assert "日本語" in text and source == "utf8"
    text, codec, source = decode_html_bytes("<p>ok</p>".encode("utf-8"), "iso-8859-1")
    assert source == "utf8"
    with pytest.raises(UnicodeDecodeError):
        decode_html_bytes(bytes(range(256)) * 200)


def test_classify_payload():
    assert classify_payload("application/pdf", b"%PDF-1.4") == "pdf"
    assert classify_payload("application/octet-stream", b"%PDF-1.7 ...") == "pdf"
    assert classify_payload("text/html", b"<html>") == "html"
    assert classify_payload("", b"  <!DOCTYPE html><html>") == "html"
    assert classify_payload("text/plain", b"plain words") == "other"
    assert classify_payload("image/png", b"\x89PNG") == "other"
