from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.stages.code.reader import CodeReader, safe_member_path
from assay.stages.code.signals import CodeSignals

MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def _by_path(docs):
    return {d.metadata["path"]: d for d in docs}


def test_safe_member_path():
    assert safe_member_path("./a/b.py") == "a/b.py"
    assert safe_member_path(".github/x.yml") == ".github/x.yml"
    for bad in ("../etc/passwd", "/etc/passwd", "a/../../x", "C:\\win\\x", "..\\x"):
        assert safe_member_path(bad) is None


def test_directory_tree(tmp_path):
    root = tmp_path / "myrepo"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: x")
    (root / "LICENSE").write_text(MIT)
    (root / "src" / "a.py").write_text("print('hello')\n")
    (root / "src" / "latin.py").write_bytes("# caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, d\u00e9j\u00e0 vu\nx = 'na\u00efve'\n".encode("cp1252") * 5)
    (root / "src" / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (root / "big.txt").write_text("x" * 5000)
    docs = list(CodeReader([str(root)], max_file_bytes=4096).run())
    by = _by_path(docs)
    assert ".git/HEAD" not in by
    assert by["src/a.py"].text == "print('hello')\n"
    m = by["src/a.py"].metadata
    assert m["source"] == "code" and m["repo"] == "myrepo" and m["license"] == "MIT" and m["source_file"].endswith("a.py")
    assert "caf\u00e9" in by["src/latin.py"].text and "reject_reason" not in by["src/latin.py"].metadata
    assert by["src/blob.bin"].metadata["reject_reason"] == "code_binary" and by["src/blob.bin"].text == ""
    assert by["big.txt"].metadata["reject_reason"] == "code_oversized"
    # sharding by rank covers every file exactly once
    parts = [list(CodeReader([str(root)], max_file_bytes=4096).run(rank=r, world_size=3)) for r in range(3)]
    ids = [d.id for p in parts for d in p]
    assert sorted(ids) == sorted(d.id for d in docs) and len(set(ids)) == len(ids)


def test_tar_traversal_links_and_limits(tmp_path):
    arch = tmp_path / "evil.tar.gz"
    with tarfile.open(arch, "w:gz") as tf:
        for name, data in [("ok.py", b"x = 1\n"), ("../escape.py", b"y = 2\n"), ("/abs.py", b"z = 3\n"),
                           ("big.py", b"#" * 3000), ("ok2.py", b"w = 4\n")]:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        link = tarfile.TarInfo("link.py")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    reasons = Counter(d.metadata.get("reject_reason") for d in CodeReader([str(arch)], max_file_bytes=1000).run())
    assert reasons == Counter({None: 2, "code_archive_path_traversal": 2, "code_oversized": 1, "code_archive_link": 1})
    docs = list(CodeReader([str(arch)], max_files=2).run())
    assert docs[-1].metadata["reject_reason"] == "code_archive_too_many_files"


def test_zip_and_corrupt_archives(tmp_path):
    z = tmp_path / "r.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("LICENSE", MIT)
        zf.writestr("pkg/m.go", "package main\nfunc main() {}\n")
        zf.writestr("../../evil.sh", "rm -rf /\n")
    docs = list(CodeReader([str(z)]).run())
    by = _by_path(docs)
    assert by["pkg/m.go"].metadata["license"] == "MIT" and by["pkg/m.go"].metadata["repo"] == "r"
    assert by["../../evil.sh"].metadata["reject_reason"] == "code_archive_path_traversal"
    bad = tmp_path / "broken.tar.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(200))
    bz = tmp_path / "broken.zip"
    bz.write_bytes(b"PK\x03\x04garbage")
    docs = list(CodeReader([str(bad), str(bz), str(tmp_path / "missing.py")]).run())
    assert [d.metadata["reject_reason"] for d in docs] == ["code_corrupt_archive", "code_corrupt_archive", "code_unreadable"]


def test_stack_style_tables(tmp_path):
    rows = [
        {"repo_name": "o/r", "path": "a.py", "content": "print(1)\n", "license": "mit", "hexsha": "h1"},
        {"repo_name": "o/r", "path": "b.bin", "content": "\x00\x01", "license": None, "hexsha": "h2"},
        {"repo_name": "o/r", "path": "c.py", "content": "x" * 100, "licenses": ["apache-2.0"], "hexsha": "h3"},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps(rows[0]) + "\n{broken json\n" + json.dumps({"repo": "x/y", "path": "z.rs", "content": b"fn main(){}".decode()}) + "\n")
    docs = list(CodeReader([str(tmp_path / "t.parquet"), str(jl)], max_file_bytes=50).run())
    reasons = [d.metadata.get("reject_reason") for d in docs]
    assert reasons == [None, "code_binary", "code_oversized", None, "code_broken_record", None]
    assert docs[0].id == "code:t.parquet#h1" and docs[0].metadata["code__row_id"] == "h1" and docs[0].metadata["repo"] == "o/r" and docs[0].metadata["license"] == "mit"
    assert docs[5].metadata["repo"] == "x/y"


@pytest.mark.shared_data
def test_real_repo_end_to_end(shared_data):
    snap = shared_data / "code/real_repo_snapshot/chatnoir-resiliparse_src.tar.zst"
    reader = CodeReader([str(snap)])
    docs = list(CodeSignals().run(reader.run()))
    assert len(docs) == 195  # SOURCES.tsv: whole tree, 195 files
    assert all(d.metadata["license"] == "Apache-2.0" for d in docs)
    langs = Counter(d.metadata.get("code__language") for d in docs)
    assert langs["python"] > 10 and langs["cython"] > 5 and langs["cpp"] + langs["c"] > 0
    for d in docs:
        assert d.metadata["code__flags"] == ",".join(sorted(f for f in ("generated", "vendored", "minified", "lockfile", "data", "encoded", "binary") if d.metadata[f"code__{f}"]))
        json.loads(d.metadata["code__evidence"])
        assert all(isinstance(v, (int, float, str, bool, type(None))) for v in d.metadata.values())
    assert reader.stats["documents"].total == 195


def test_signal_step_never_drops(tmp_path):
    from datatrove.data import Document

    docs = [Document(text="", id="bin", metadata={"source": "code", "path": "x.bin", "reject_reason": "code_binary"}),
            Document(text="hello", id="web", metadata={"source": "web"}),
            Document(text="", id="empty", metadata={"source": "code", "path": "e.py"}),
            Document(text="x = 1\n" * 10, id="py", metadata={"source": "code", "path": "m.py"})]
    out = list(CodeSignals().run(iter(docs)))
    assert [d.id for d in out] == ["bin", "web", "empty", "py"]
    assert out[0].metadata["code__binary"] is True
    assert "code__language" not in out[1].metadata
    assert "code__rule_reasons" not in out[2].metadata  # no stored verdict: decisions apply the rule files
    from assay.stages.decisions.rules import decide

    assert decide({"id": "empty", **out[2].metadata}, {}).reason == "code_empty"
    assert out[3].metadata["code__language"] == "python" and out[3].metadata["code__duplicate_line_fraction"] == 0.0
