"""Resynchronisation after damage in WARC files (stages/web/warc.py).

Real files from ../shared/data/warc are corrupted at test time (flipped bytes in a gzip member, junk
between members or records, broken record headers, uncompressed variants). Each test checks that every
intact record is still read (same documents as a file holding only the intact records), and that the
damage yields exactly one reject document per damaged region, with its reason code and offset.
"""

from __future__ import annotations

import gzip
import io
import random
import time
import zlib
from pathlib import Path

import pytest

from assay.stages.web.warc import WarcReader, find_gzip_member, is_record_start_line

CC2020 = "resiliparse/resiliparse_warcfile_cc2020.warc.gz"  # 50 records, one gzip member each
DOLMA = "dolma/sample-0000.warc.gz"  # 48 records, `<uri>` quirks
AUT = "aut/aut_example.warc.gz"  # 822 records, some members of 40-120 KB


# ------------------------------------------------------------------------------------------ helpers
def split_members(data: bytes) -> list[bytes]:
    """The gzip members of a multi-member gzip file, as raw bytes."""
    out, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[pos:])
        assert d.eof
        end = len(data) - len(d.unused_data)
        out.append(data[pos:end])
        pos = end
    return out


def offsets(parts: list[bytes]) -> list[int]:
    out, pos = [], 0
    for p in parts:
        out.append(pos)
        pos += len(p)
    return out


def flip(member: bytes, start: int, n: int = 32) -> bytes:
    b = bytearray(member)
    for k in range(start, start + n):
        b[k] ^= 0xA5
    return bytes(b)


def read(path: Path) -> tuple[list, dict[str, float]]:
    reader = WarcReader([str(path)])
    docs = list(reader.run())
    return docs, {k: v.total for k, v in reader.stats.stats.items()}


def is_region(d) -> bool:
    """A damaged-region (or whole-file) document: no record was parsed, so it has no WARC type."""
    return d.metadata.get("warc__type") is None


def region_id(path: Path, offset: int | None = None) -> str:
    """Ids are ``web:<file key>[#<offset>]``; a file given on its own is keyed by its name."""
    return f"web:{path.name}" + ("" if offset is None else f"#{offset}")


def good_docs(docs) -> list[tuple]:
    """Documents as comparable tuples (offsets in metadata and the file part of ids differ between files;
    record ids and text do not)."""
    return [(d.id.split("#", 1)[1], d.text, d.metadata["url"], d.metadata.get("reject_reason")) for d in docs
            if not is_region(d)]


def rejects(docs, path: Path) -> list:
    """The damaged-region documents (named after the file)."""
    return [d for d in docs if is_region(d) and d.id.split("#")[0] == region_id(path)]


def check_accounting(st: dict[str, float]) -> None:
    """Every record has one outcome; every region document is counted as a region."""
    outcomes = st.get("emitted", 0) + sum(v for k, v in st.items() if k.startswith(("skipped/", "reject/")))
    assert outcomes - st.get("damaged_regions", 0) == st.get("records", 0), st


def expected(tmp_path: Path, parts: list[bytes], name: str = "intact.warc.gz") -> tuple[list[tuple], dict]:
    """What the reader gives for a file made of the intact parts only."""
    p = tmp_path / name
    p.write_bytes(b"".join(parts))
    docs, st = read(p)
    assert not rejects(docs, p)
    return good_docs(docs), st


@pytest.fixture(scope="module")
def warc_dir(shared_data: Path) -> Path:
    return shared_data / "warc"


# ------------------------------------------------------------------------------------- gzip members
@pytest.mark.shared_data
@pytest.mark.parametrize("name", [CC2020, DOLMA])
def test_flipped_bytes_in_the_middle_member(warc_dir: Path, tmp_path: Path, name: str):
    members = split_members((warc_dir / name).read_bytes())
    k = len(members) // 2
    bad = members[:k] + [flip(members[k], 12)] + members[k + 1:]
    path = tmp_path / "flipped.warc.gz"
    path.write_bytes(b"".join(bad))
    docs, st = read(path)

    want, want_st = expected(tmp_path, members[:k] + members[k + 1:])
    assert good_docs(docs) == want  # every intact record, in order, same ids and text
    assert st["records"] == want_st["records"] == len(members) - 1
    (rej,) = rejects(docs, path)
    at = offsets(members)
    assert rej.id == region_id(path, at[k])
    assert rej.text == ""
    assert rej.metadata["reject_reason"] == "warc_corrupt_gzip"
    assert rej.metadata["warc__offset"] == at[k]
    assert rej.metadata["warc__resync_offset"] == at[k + 1]
    assert st["damaged_regions"] == 1 and st["resync/gzip_member"] == 1
    assert "files/aborted" not in st
    check_accounting(st)


@pytest.mark.shared_data
def test_two_separate_damaged_members_give_two_regions(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    k1, k2 = 10, 30
    bad = list(members)
    bad[k1] = flip(bad[k1], 12)
    bad[k2] = flip(bad[k2], 12)
    path = tmp_path / "two.warc.gz"
    path.write_bytes(b"".join(bad))
    docs, st = read(path)

    want, _ = expected(tmp_path, [m for i, m in enumerate(members) if i not in (k1, k2)])
    assert good_docs(docs) == want
    at = offsets(members)
    assert [d.id for d in rejects(docs, path)] == [region_id(path, at[k1]), region_id(path, at[k2])]
    assert {d.metadata["reject_reason"] for d in rejects(docs, path)} == {"warc_corrupt_gzip"}
    check_accounting(st)


@pytest.mark.shared_data
def test_adjacent_damaged_members_are_one_region(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    k = 20
    bad = list(members)
    bad[k] = flip(bad[k], 12)
    bad[k + 1] = flip(bad[k + 1], 12)
    path = tmp_path / "adjacent.warc.gz"
    path.write_bytes(b"".join(bad))
    docs, st = read(path)

    want, _ = expected(tmp_path, members[:k] + members[k + 2:])
    assert good_docs(docs) == want
    at = offsets(members)
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, at[k]) and rej.metadata["warc__resync_offset"] == at[k + 2]
    check_accounting(st)


@pytest.mark.shared_data
def test_first_member_damaged_the_rest_is_read(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    path = tmp_path / "first.warc.gz"
    path.write_bytes(flip(members[0], 12) + b"".join(members[1:]))
    docs, st = read(path)
    want, _ = expected(tmp_path, members[1:])
    assert good_docs(docs) == want
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, 0) and rej.metadata["reject_reason"] == "warc_corrupt_gzip"
    check_accounting(st)


@pytest.mark.shared_data
def test_damage_inside_a_big_payload_gives_one_reject_and_reading_goes_on(warc_dir: Path, tmp_path: Path):
    """The record header decompresses, its payload does not: that record's reject document is the one
    document of the damaged region; the members after it are read."""
    members = split_members((warc_dir / AUT).read_bytes())[:200]
    k = 150  # a 43 KB HTML response member
    assert len(members[k]) > 40_000
    bad = members[:k] + [flip(members[k], len(members[k]) * 3 // 4)] + members[k + 1:]
    path = tmp_path / "payload.warc.gz"
    path.write_bytes(b"".join(bad))
    docs, st = read(path)

    want, _ = expected(tmp_path, members[:k] + members[k + 1:])
    damaged = [d for d in docs if d.metadata.get("reject_reason")]
    assert len(damaged) == 1
    assert damaged[0].metadata["reject_reason"] == "warc_corrupt_gzip"
    assert damaged[0].metadata["warc__offset"] == offsets(members)[k]
    assert [t for t in good_docs(docs) if t[3] is None] == want
    assert st["records"] == len(members)  # the damaged record's header was read
    assert st["resync/gzip_member"] == 1
    check_accounting(st)


@pytest.mark.shared_data
def test_junk_between_gzip_members(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    k = 25
    rng = random.Random(7)
    # random bytes with fake gzip headers in them (one followed by a real-looking deflate start)
    junk = rng.randbytes(3000) + b"\x1f\x8b\x08\x00" + rng.randbytes(500) + b"\x1f\x8b\x08" + b"WARC/1.0\r\n" * 3
    path = tmp_path / "junk.warc.gz"
    path.write_bytes(b"".join(members[:k]) + junk + b"".join(members[k:]))
    docs, st = read(path)

    want, _ = expected(tmp_path, members)
    assert good_docs(docs) == want  # nothing lost
    at = offsets(members)
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, at[k])
    assert rej.metadata["reject_reason"] == "warc_corrupt_gzip"
    assert rej.metadata["warc__resync_offset"] == at[k] + len(junk)
    check_accounting(st)


@pytest.mark.shared_data
def test_padding_between_and_after_gzip_members_is_not_damage(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    path = tmp_path / "padded.warc.gz"
    path.write_bytes(b"".join(members[:10]) + b"\r\n\r\n" + b"".join(members[10:]) + b"\n\x00\x00\n")
    docs, st = read(path)
    want, _ = expected(tmp_path, members)
    assert good_docs(docs) == want
    assert not rejects(docs, path)
    assert st["gzip_padding"] == 2
    check_accounting(st)


@pytest.mark.shared_data
def test_junk_up_to_the_end_of_the_file(warc_dir: Path, tmp_path: Path):
    members = split_members((warc_dir / CC2020).read_bytes())
    path = tmp_path / "tail.warc.gz"
    path.write_bytes(b"".join(members) + random.Random(3).randbytes(5000))
    docs, st = read(path)
    want, _ = expected(tmp_path, members)
    assert good_docs(docs) == want
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, sum(map(len, members)))
    assert rej.metadata["warc__resync_offset"] is None
    assert st["files/aborted"] == 1
    check_accounting(st)


@pytest.mark.shared_data
def test_broken_header_inside_one_gzip_member_of_a_whole_file_gzip(warc_dir: Path, tmp_path: Path):
    """One gzip member for the whole file (gzip of a plain WARC) with junk between two records: the reader
    scans on inside the member for the next `WARC/1.x` line."""
    plain = [zlib.decompress(m, 16 + zlib.MAX_WBITS) for m in split_members((warc_dir / CC2020).read_bytes())]
    k = 15
    junk = b"this is not a record header\r\nContent-Length: 12\r\n\r\nmore junk\r\n\r\n"
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(gzip.compress(b"".join(plain[:k]) + junk + b"".join(plain[k:])))
    docs, st = read(path)
    want, want_st = expected(tmp_path, [gzip.compress(b"".join(plain))], "whole_intact.warc.gz")
    assert want_st["records"] == len(plain)  # several records in one gzip member are all read
    assert good_docs(docs) == want
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, 0)  # the damage lies in the member that starts at 0
    assert rej.metadata["reject_reason"] == "warc_invalid_record"
    assert st["resync/line"] == 1
    check_accounting(st)


# ---------------------------------------------------------------------------------- uncompressed WARC
@pytest.fixture(scope="module")
def plain_records(warc_dir: Path) -> list[bytes]:
    return [zlib.decompress(m, 16 + zlib.MAX_WBITS) for m in split_members((warc_dir / CC2020).read_bytes())]


@pytest.mark.shared_data
def test_uncompressed_junk_between_records(plain_records: list[bytes], tmp_path: Path):
    k = 30
    junk = b"garbage line one\r\nWARC/1.0 is not at a line start here\r\n\x00\x01\x02binary\r\n\r\n"
    path = tmp_path / "junk.warc"
    path.write_bytes(b"".join(plain_records[:k]) + junk + b"".join(plain_records[k:]))
    docs, st = read(path)
    want, _ = expected(tmp_path, plain_records, "intact.warc")
    assert good_docs(docs) == want
    at = offsets(plain_records)
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, at[k])  # exact byte offset of the junk
    assert rej.metadata["reject_reason"] == "warc_invalid_record"
    assert rej.metadata["warc__resync_offset"] == at[k] + len(junk)
    assert st["resync/line"] == 1
    check_accounting(st)


@pytest.mark.shared_data
def test_uncompressed_broken_record_header(plain_records: list[bytes], tmp_path: Path):
    """A record whose version line is damaged is lost (one region); the records after it are read."""
    k = 12
    bad = list(plain_records)
    assert bad[k].startswith(b"WARC/1.0\r\n")
    bad[k] = b"WXRC/1.\x00\r\n" + bad[k][10:]  # same length
    path = tmp_path / "hdr.warc"
    path.write_bytes(b"".join(bad))
    docs, st = read(path)
    want, _ = expected(tmp_path, plain_records[:k] + plain_records[k + 1:], "intact.warc")
    assert good_docs(docs) == want
    at = offsets(plain_records)
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, at[k]) and rej.metadata["warc__resync_offset"] == at[k + 1]
    check_accounting(st)


@pytest.mark.shared_data
def test_uncompressed_giant_junk_line_is_scanned_with_bounded_memory(plain_records: list[bytes], tmp_path: Path):
    import tracemalloc

    k = 5
    junk = b"x" * 24_000_000 + b"\r\n"  # one 24 MB line between two records
    path = tmp_path / "giant.warc"
    with open(path, "wb") as fh:
        fh.write(b"".join(plain_records[:k]))
        fh.write(junk)
        fh.write(b"".join(plain_records[k:]))
    tracemalloc.start()
    try:
        docs, st = read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12_000_000, peak  # well under the junk's size
    want, _ = expected(tmp_path, plain_records, "intact.warc")
    assert good_docs(docs) == want
    assert len(rejects(docs, path)) == 1
    check_accounting(st)


@pytest.mark.shared_data
@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
def test_arc_file_with_junk_before_a_record(warc_dir: Path, tmp_path: Path, compressed: bool):
    """ARC files resync too (on ARC header lines / members that decompress into one); ids stay offset-based."""
    members = split_members((warc_dir / "warcio/example.arc.gz").read_bytes())
    assert len(members) == 2  # filedesc header + one response
    junk = random.Random(2).randbytes(700).replace(b"\n", b" ") + b"\n"
    parts = members if compressed else [zlib.decompress(m, 16 + zlib.MAX_WBITS) for m in members]
    path = tmp_path / ("junk.arc.gz" if compressed else "junk.arc")
    path.write_bytes(parts[0] + junk + parts[1])
    docs, st = read(path)
    at = len(parts[0])
    (rej,) = rejects(docs, path)
    assert rej.id == region_id(path, at) and rej.metadata["warc__resync_offset"] == at + len(junk)
    assert rej.metadata["reject_reason"] == ("warc_corrupt_gzip" if compressed else "warc_invalid_record")
    (doc,) = [d for d in docs if d is not rej]
    assert doc.metadata["url"] == "http://example.com/" and "Example Domain" in doc.text
    assert doc.id == region_id(path, at + len(junk))  # ARC records: offset-based
    check_accounting(st)


# ------------------------------------------------------------------------------- termination, helpers
def test_adversarial_inputs_terminate(tmp_path: Path):
    """Fake gzip headers and record-start lines everywhere: the reader ends, quickly, with bounded output."""
    one = gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
    cases = {
        "fake_members.warc.gz": one + (b"\x1f\x8b\x08" + b"\x00" * 7 + b"junk") * 2000,
        "fake_lines.warc": (b"WARC/1.0\r\n\x00\x00garbage\r\n\r\n") * 2000,
        "members_of_junk.warc.gz": one + gzip.compress(b"no record here\r\n") * 500,
        "all_magic.warc.gz": b"\x1f\x8b\x08" * 5000,
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        t0 = time.perf_counter()
        docs, st = read(path)
        assert time.perf_counter() - t0 < 20, name
        assert 1 <= len(docs) <= 2001, (name, len(docs))
        assert all(d.text == "" for d in docs)
        check_accounting(st)


def test_file_of_only_an_empty_member_and_padding_is_unreadable(tmp_path: Path):
    path = tmp_path / "nothing.warc.gz"
    path.write_bytes(gzip.compress(b"") + b"\n\n")
    docs, st = read(path)
    assert [(d.id, d.metadata["reject_reason"]) for d in docs] == [(region_id(path), "warc_unreadable_file")]
    check_accounting(st)


def test_find_gzip_member_streams_and_handles_chunk_boundaries(tmp_path: Path):
    member = gzip.compress(b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
    not_warc = gzip.compress(b"hello\r\n")
    junk = random.Random(1).randbytes(50_000).replace(b"\x1f\x8b", b"xx")
    data = junk + not_warc + b"\x1f\x8b\x08junk" + member + b"\r\n"

    class Counting(io.BytesIO):
        max_read = 0

        def read(self, n=-1):
            assert n is not None and n > 0  # never "read everything"
            Counting.max_read = max(Counting.max_read, n)
            return super().read(n)

    want = len(junk) + len(not_warc) + 7
    for chunk in (3, 4, 5, 7, 64, 4096, 1 << 20):
        Counting.max_read = 0
        assert find_gzip_member(Counting(data), 0, chunk_size=chunk) == (want, True), chunk
        assert Counting.max_read <= max(chunk, 4096)
    # a member exactly at start: accepted, unless skip_first
    assert find_gzip_member(io.BytesIO(data), want) == (want, False)
    assert find_gzip_member(io.BytesIO(data), want, skip_first=True) == (None, True)
    # only padding before the member
    assert find_gzip_member(io.BytesIO(b"\r\n\x00 " + member), 0, chunk_size=2) == (4, False)


def test_is_record_start_line():
    assert is_record_start_line(b"WARC/1.0\r\n") and is_record_start_line(b"WARC/1.1\n")
    assert is_record_start_line(b"WARC/0.18\r\n")
    assert not is_record_start_line(b"WARC/1.0 trailing words\r\n")
    assert not is_record_start_line(b"xWARC/1.0\r\n")
    arc_line = b"http://example.com/ 93.184.216.119 20140216050323 text/html 1591\n"
    assert is_record_start_line(arc_line, arc=True) and not is_record_start_line(arc_line)


@pytest.mark.shared_data
def test_real_files_need_no_resync(warc_dir: Path):
    """Intact real archives (WARC, WET, WAT, ARC, plain and gzip) never trigger a resync or a region."""
    from assay.stages.web.warc import expand_paths

    for f in expand_paths([str(warc_dir)]):
        docs, st = read(Path(f))
        assert not any(k.startswith(("resync/", "damaged_regions", "gzip_padding")) for k in st), (f, st)
