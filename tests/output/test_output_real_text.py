"""Normalisation and shard writing on real multilingual web text (TurkuNLP register corpora)."""

from __future__ import annotations

import gzip
import unicodedata

import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from assay.stages.output.normalize import TextNormalizer, _CONTROL, normalize_text
from assay.stages.output.shards import ShardWriter, list_shards

LANGS = ("ar", "ca", "hi", "id", "pt", "ur")


def _read(shared_data, lang: str, n: int = 40) -> list[str]:
    out = []
    with gzip.open(shared_data / "multilingual" / "turku_register_core" / f"{lang}.tsv.gz", "rt", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[-1].strip():
                out.append(parts[-1])
            if len(out) >= n:
                break
    return out


@pytest.mark.shared_data
def test_normalize_real_text_is_idempotent_and_clean(shared_data):
    n_changed = n = 0
    for lang in LANGS:
        for text in _read(shared_data, lang):
            once = normalize_text(text)
            assert normalize_text(once) == once
            assert unicodedata.is_normalized("NFC", once)
            assert not _CONTROL.search(once)
            once.encode("utf-8")
            n += 1
            n_changed += once != text
    assert n >= 200
    assert n_changed < n  # most real text needs nothing


@pytest.mark.shared_data
def test_real_mojibake_is_repaired(shared_data):
    pt = _read(shared_data, "pt", n=400)
    broken = [t for t in pt if "Ã©" in t or "Ã¡" in t]
    assert broken, "the Portuguese sample carries real mojibake (UTF-8 read as cp1252)"
    for t in broken:
        fixed = normalize_text(t)
        assert "Ã©" not in fixed and "Ã¡" not in fixed
        assert "é" in fixed or "á" in fixed


@pytest.mark.shared_data
def test_real_text_shards_by_language(shared_data, tmp_path):
    docs = []
    for lang in LANGS:
        for i, text in enumerate(_read(shared_data, lang)):
            docs.append(Document(text=text, id=f"{lang}-{i}", metadata={"source": "web", "lang__code": lang, "tier": "medium", "decision__reason": None}))
    normalized = list(TextNormalizer().run(iter(docs)))
    expected = {d.id: d.text for d in normalized}
    for _ in ShardWriter(str(tmp_path), max_shard_bytes=64_000).run(iter(normalized)):
        pass
    langs = {p.parent.name for p in list_shards(tmp_path)}
    assert langs == {f"language={x}" for x in LANGS}
    got = {}
    for p in list_shards(tmp_path):
        t = pq.read_table(p)
        got.update(zip(t.column("id").to_pylist(), t.column("text").to_pylist()))
        assert all(tc > 0 for tc in t.column("token_count").to_pylist())
    assert got == expected


@pytest.mark.shared_data
def test_line_skipping_ftfy_equals_ftfy_on_real_text(shared_data):
    """``fix_text_segments`` (ftfy only on lines outside printable ASCII) returns exactly what
    ``ftfy.fix_text`` returns: real multilingual text (with real mojibake in pt) joined into multi-line
    documents with ASCII lines, CRLF, terminal escapes and C1 controls between them."""
    import ftfy

    from assay.stages.output.normalize import _config, fix_text_segments

    cfg = _config()
    texts = [t for lang in LANGS for t in _read(shared_data, lang, n=60)]
    extra = ["plain ascii line", "windows line\r", "esc \x1b[31mred\x1b[0m", "c1 \x85 next", "tab\tand DEL\x7f",
             "caf\u00c3\u00a9 mojibake", "", "   ", "ligature \ufb01ne", "cp1252 \u00e2\u20ac\u201c dash"]
    docs = []
    for i in range(0, len(texts), 5):
        lines = texts[i:i + 5] + extra[i % len(extra):] + extra[:i % len(extra)]
        docs.append("\n".join(lines))
        docs.append("\r\n".join(lines) + "\n\n")
    docs += extra + ["\n", "\n\n\u00c3\u00a9\n", "\u00c3\u00a9", "ascii\nlast line \u00c3\u00a9"]
    n_diff_lines = 0
    for d in docs:
        assert fix_text_segments(d, cfg) == ftfy.fix_text(d, cfg)
        n_diff_lines += ftfy.fix_text(d, cfg) != d
    assert n_diff_lines > len(docs) // 2  # the documents do exercise ftfy's repairs
    # lines longer than ftfy's segment length are fixed in pieces of that length, as ftfy does
    small = cfg._replace(max_decode_length=7)
    for d in docs[:40] + ["caf\u00c3\u00a9 " * 5 + "\n" + "x" * 20 + "\u00c3\u00a9" * 3]:
        assert fix_text_segments(d, small) == ftfy.fix_text(d, small)


def _hplt_lines(shared_data, rows_per_file: int = 25) -> list[str]:
    """Lines of real web text in 20 languages (HPLT inspection rows: Latin, Greek, Arabic, Devanagari, Bengali)."""
    import csv
    import io

    lines = []
    for path in sorted((shared_data / "quality" / "hplt_inspection").glob("*.tsv.gz")):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            rows = list(csv.reader(io.StringIO(f.read()), delimiter="\t"))
        col = [h.split()[0].lower() if h.strip() else "" for h in rows[0]].index("text_show")
        for r in rows[1:rows_per_file + 1]:
            if col < len(r):
                lines += [ln for ln in r[col].splitlines() if ln.strip()]
    return lines


@pytest.mark.shared_data
def test_ftfy_shortcut_equals_ftfy_on_real_lines(shared_data):
    """``_unchanged_by_ftfy`` (the normaliser's shortcut past ftfy for a segment ftfy would return as it is) is
    only true where ``ftfy.fix_and_explain`` returns the segment unchanged: real lines in 20 languages, the same
    lines as mojibake (their UTF-8 bytes read as cp1252, Latin-1, cp1251, MacRoman, cp1253, cp1257), decomposed
    (NFD), with controls; and a line ftfy calls bad always holds a trigger character."""
    import ftfy
    from ftfy.badness import is_bad

    from assay.stages.output.normalize import _config, _mojibake_trigger, _unchanged_by_ftfy

    cfg = _config()
    real = _hplt_lines(shared_data)
    lines = list(real)
    for i, ln in enumerate(real[::7]):
        enc = ("cp1252", "latin-1", "cp1251", "mac_roman", "cp1253", "cp1257")[i % 6]
        lines.append(ln.encode("utf-8").decode(enc, errors="replace" if i % 2 else "ignore"))
        lines.append(unicodedata.normalize("NFD", ln))
        lines.append(ln[:40] + ("\u0085", "\r", "\x1b[1m", "\ufeff", "\u2028", "\x9d")[i % 6] + ln[40:])
    shortcut = 0
    for ln in lines:
        if _unchanged_by_ftfy(ln):
            shortcut += 1
            assert ftfy.fix_and_explain(ln, cfg).text == ln, ln
        if is_bad(ln):
            assert _mojibake_trigger().search(ln), ln
    assert len(lines) > 1500 and 0.3 * len(lines) < shortcut < 0.9 * len(lines), shortcut  # both ways are exercised
