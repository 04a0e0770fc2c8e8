"""Encoding policy of ``decode_bytes`` (fault-suite bug: broken UTF-8 kept as cp1251 mojibake)."""

from __future__ import annotations

import pytest

from assay.stages.code.inspection import decode_bytes, inspect_file
from assay.stages.code.reader import CodeReader

# broken UTF-8 as the fault suite writes it: lone continuation bytes, truncated sequences, overlongs,
# an encoded surrogate, \xff\xfe - no charset explains it
JUNK = b"\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc\xc0\xaf\xed\xa0\x80\xff\xfe"
BROKEN = b"".join(b"def broken_%d():\n    return '%s'\n" % (i, JUNK) for i in range(200))


def test_broken_utf8_without_declaration_is_undecodable():
    text, reason, _enc = decode_bytes(BROKEN)
    assert text is None and reason == "code_undecodable"


def test_mostly_valid_utf8_with_one_broken_byte_is_undecodable():
    data = "# h\u00e9llo w\u00f6rld \u00fcn\u00efcode \u00e7\u00e0\n".encode() * 30 + b"x = '\xff'\n"
    assert decode_bytes(data)[:2] == (None, "code_undecodable")
    # the same file without the stray byte is plain UTF-8
    assert decode_bytes(data[:-7])[1:] == (None, "utf-8")


@pytest.mark.parametrize("text, codec, expect", [
    ("/* Fonction qui calcule la diff\u00e9rence entre deux dates, tr\u00e8s utile l'\u00e9t\u00e9. */\n"
     "int diff(int a, int b) { return a - b; /* r\u00e9sultat n\u00e9gatif possible */ }\n", "latin-1", "cp1252"),
    ("# \u041c\u043e\u0434\u0443\u043b\u044c \u0434\u043b\u044f \u043e\u0431\u0440\u0430\u0431\u043e\u0442\u043a\u0438 "
     "\u0434\u0430\u043d\u043d\u044b\u0445\ndef process(x):\n    return x * 2\n", "cp1251", "cp1251"),
    ("// \u30d5\u30a1\u30a4\u30eb\u3092\u8aad\u307f\u8fbc\u3093\u3067\u5185\u5bb9\u3092\u8868\u793a\u3059\u308b"
     "\u95a2\u6570\u3067\u3059\nvoid show(char *p) { printf(\"%s\", p); }\n", "shift_jis", "cp932"),
    ("// \u8fd9\u662f\u4e00\u4e2a\u7528\u4e8e\u8ba1\u7b97\u7528\u6237\u6570\u636e\u7684\u7c7b\uff0c\u8bf7\u52ff"
     "\u4fee\u6539\npublic class Foo { int x; }\n", "gbk", "gb18030"),
])
def test_real_legacy_encodings_without_declaration_are_kept(text, codec, expect):
    text3 = text * 3
    got, reason, enc = decode_bytes(text3.encode(codec))
    assert reason is None and enc == expect
    assert got == text3


def test_declared_encodings_are_used():
    # PEP 263 cookie: latin-1 is taken even for bytes that charset guessing would call mojibake
    data = b"# -*- coding: latin-1 -*-\nx = 'caf\xe9 \xc3\x28'\n"
    assert decode_bytes(data) == (data.decode("latin-1"), None, "iso8859-1")
    assert decode_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<a>caf\xe9</a>\n')[1:] == (None, "iso8859-1")
    assert decode_bytes(b'@charset "windows-1251";\n/* \xcc\xee\xe4\xf3\xeb\xfc */ a {}\n')[1:] == (None, "cp1251")
    assert decode_bytes(b'<html><head><meta charset="iso-8859-15"></head><p>\xa4 caf\xe9</p>\n')[1:] == (None, "iso8859-15")
    # a declaration the bytes do not satisfy is not overridden by a guess
    assert decode_bytes(b"# coding: ascii\nx = 'caf\xe9'\n") == (None, "code_undecodable", "ascii")
    assert decode_bytes(b"# coding: utf-8\nx = '\xe9\xe9'\n")[:2] == (None, "code_undecodable")
    # an unknown codec name is no declaration
    assert decode_bytes(b"# coding: no-such-codec\n" + BROKEN)[:2] == (None, "code_undecodable")


def test_inspect_file_marks_broken_utf8_undecodable():
    rep = inspect_file("broken.py", BROKEN)
    assert not rep.keep and rep.reasons == ["code_undecodable"] and rep.signals["undecodable"] is True


def test_reader_records_code_encoding(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ok.py").write_text("print('h\u00e9')\n", encoding="utf-8")
    (root / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n")
    (root / "broken.py").write_bytes(BROKEN)
    by = {d.metadata["path"]: d for d in CodeReader([str(root)]).run()}
    assert by["ok.py"].metadata["code__encoding"] == "utf-8" and "reject_reason" not in by["ok.py"].metadata
    assert by["cookie.py"].metadata["code__encoding"] == "iso8859-1" and by["cookie.py"].text.endswith("caf\u00e9'\n")
    assert by["broken.py"].metadata["reject_reason"] == "code_undecodable" and by["broken.py"].text == ""
    assert "encoding" not in by["cookie.py"].metadata
