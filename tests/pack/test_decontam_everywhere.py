"""Decontamination for every source: planted benchmark items in web pages and PDF text layers are
excluded by the default recipe; clean pages are not; without the eval sets the recipe still runs."""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.stages.signals.decontam import Decontamination, normalize_prose

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _decontam_data import gsm8k_items, math_items, pdf_like  # noqa: E402

CLEAN = (
    "The river authority published its annual survey of the northern basin this week. Water levels in the "
    "upper reservoirs were close to the long-term average, while the lower lakes stayed slightly below it "
    "after a dry spring. Engineers replaced two pumping stations and began work on a new spillway that "
    "should reduce the risk of flooding in the villages downstream. Fishermen reported a good season for "
    "trout and a poor one for perch, which the authority links to warmer water in early summer. The survey "
    "also counted more than two hundred species of birds along the banks, several of them rare visitors "
    "from the south. Local schools will use the data in science lessons next year, and the authority plans "
    "to publish the full tables online so that anyone can compare the figures with earlier surveys."
)


def _warc(path: Path, pages: dict[str, str]) -> Path:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for i, (url, body_text) in enumerate(pages.items()):
            paras = "".join(f"<p>{p}</p>\n" for p in body_text.split("\n") if p.strip())
            html = f"<!DOCTYPE html><html lang=\"en\"><head><title>Page {i}</title></head><body><main><article>" \
                   f"<h1>Notes {i}</h1>\n{paras}</article></main></body></html>"
            body = html.encode("utf-8")
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                  ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers,
                                                warc_headers_dict={"WARC-Date": f"2024-05-{10 + i:02d}T12:00:00Z"}))
    return path


def _pdf(path: Path, text: str) -> Path:
    import pymupdf

    doc = pymupdf.open()
    lines = text.split("\n")
    for start in range(0, len(lines), 50):
        page = doc.new_page(width=595, height=842)
        y = 60
        for line in lines[start:start + 50]:
            page.insert_text((60, y), line, fontsize=10, fontname="helv")
            y += 14
    doc.save(str(path))
    return path


@pytest.mark.shared_data
@pytest.mark.slow
def test_default_recipe_excludes_planted_items_in_web_and_pdf(shared_data, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _pack_data import run_shipped

    rng = random.Random(5)
    gsm = gsm8k_items(shared_data)
    mth = [m for m in math_items(shared_data) if m["text"].isascii() and len(m["text"]) > 300]
    items = [gsm[11], gsm[700], mth[40]]
    pages = {
        "https://clean.example.org/river": CLEAN,
        "https://forum.example.net/q/1": CLEAN + "\nQ: " + " ".join(items[0]["text"].split()).upper() + "\nThanks in advance.",
        "https://quiz.example.com/p/2": "Practice problem.\n" + " ".join(items[1]["text"].split()) + "\n" + CLEAN,
    }
    warc = _warc(tmp_path / "web.warc.gz", pages)
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    # ASCII only: the base-14 font of the generator has no ligature glyphs (ligatures: test below)
    _pdf(pdfs / "planted.pdf", pdf_like(items[2]["text"], CLEAN * 3, rng).translate({0xFB01: "fi", 0xFB02: "fl", 0xFB00: "ff"}))
    _pdf(pdfs / "clean.pdf", "\n".join(__import__("textwrap").wrap(CLEAN * 3, 80)))
    run = run_shipped("default", tmp_path / "run", overrides=[
        f"sources.0.reader.params.paths=[{warc}]", f"sources.2.reader.params.paths=[{pdfs}]"], tasks=1, workers=1)
    excluded = {}
    for p in sorted((run / "excluded").glob("part-*.parquet")):
        for r in pq.read_table(p, columns=["url_or_path", "reason", "signals"]).to_pylist():
            sig = r["signals"]
            excluded[r["url_or_path"]] = (r["reason"], sig if isinstance(sig, dict) else json.loads(sig))
    planted_web = [u for u in pages if "clean" not in u]
    for u in planted_web:
        assert excluded[u][0] == "web_decontaminated", (u, excluded.get(u))
        assert excluded[u][1]["decont__benchmark"] in ("gsm8k:test",)
    pdf_reasons = {k: v for k, v in excluded.items() if k and k.endswith(".pdf")}
    assert pdf_reasons[str(pdfs / "planted.pdf")][0] == "pdf_decontaminated", pdf_reasons
    assert pdf_reasons[str(pdfs / "planted.pdf")][1]["decont__benchmark"] == "math:math-test"
    # collateral: the clean page and the clean PDF are not flagged
    assert excluded.get("https://clean.example.org/river", ("kept",))[0] != "web_decontaminated"
    assert pdf_reasons.get(str(pdfs / "clean.pdf"), ("kept",))[0] != "pdf_decontaminated"
    written = [x if isinstance(x, dict) else json.loads(x) for p in sorted((run / "output").rglob("shard-*.parquet"))
               for x in pq.read_table(p, columns=["signals"]).column("signals").to_pylist()]
    assert written and all(s.get("decont__checked") is True and s.get("decont__match") is False for s in written)


def test_pdf_text_normalisation():
    assert normalize_prose("the experi-\nment was e\ufb03cient") == "the experiment was efficient"
    assert normalize_prose("well-known") == "well-known"
    item = ("A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it "
            "take? It takes 2/2=1 bolt of white fiber so the total amount of fabric is 2+1=3 bolts of fabric.")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "test.jsonl").write_text(json.dumps({"question": item}) + "\n")
        step = Decontamination([str(Path(d) / "test.jsonl")])
        pdf = pdf_like(item, CLEAN * 2, random.Random(1))
        assert "\ufb01" in pdf and "-\n" in pdf
        assert step.check(pdf)["decont__match"]
        assert not step.check(CLEAN)["decont__match"]


def test_missing_eval_sets_are_skipped_not_fatal(tmp_path):
    from datatrove.data import Document

    step = Decontamination([str(tmp_path / "nowhere")], missing="skip")
    out = list(step.run(iter([Document(text="some text " * 20, id="a")])))
    assert out[0].metadata["decont__checked"] is False and out[0].metadata["decont__match"] is False
    assert step.stats["decont/eval_set_missing"].total == 1
    with pytest.raises(FileNotFoundError):
        _ = Decontamination([str(tmp_path / "nowhere")]).index
    with pytest.raises(ValueError):
        Decontamination([], missing="maybe")


def test_incremental_window_hashes_equal_direct_ones():
    """The short-item lookup extends window hashes one token at a time: same values as computing
    each length directly, in text mode and in code mode (identifier back-references)."""
    import numpy as np

    from assay.stages.signals.decontam import _Prepared, code_tokens, short_tokens

    code = "def f(a, b):\n    c = a + b\n    return min(c, a) if a else max(b, c)\n" * 3
    for prep in (_Prepared(short_tokens("The quick brown fox, jumps over the lazy dog! " * 5), code=False),
                 _Prepared(code_tokens(code), code=True)):
        got = dict(prep.windows_by_length([30, 6, 7, 16, 25, 10_000]))
        assert sorted(got) == [6, 7, 16, 25, 30]
        for k, w in got.items():
            assert np.array_equal(w, prep.windows(k)), k


def test_short_items_found_anywhere_in_a_long_page():
    """A whole short eval item inside a long page is found (the sorted-key lookup), and the same page
    without it is not."""
    from assay.stages.signals.decontam import EvalIndex, EvalItem

    items = [EvalItem("b", "i1", "text", "What is the capital city of France today?"),
             EvalItem("b", "i2", "text", "Name the largest planet in our solar system.")]
    idx = EvalIndex(items)
    filler = "Lorem words about gardens and rivers follow here. " * 400
    cov, item, _mode = idx.best_match(filler + " name the largest planet in our solar system. " + filler)
    assert cov == 1.0 and item == 1
    assert idx.best_match(filler)[0] < 1.0


def test_bitmap_prefilter_never_drops_a_member():
    """The n-gram and short-item prefilters keep every hash of the set they were built from and
    drop most others (a bitmap of top bits: no false negatives)."""
    import numpy as np

    from assay.stages.signals.decontam import _MAIN_BITMAP_BITS, _MAIN_BITMAP_SHIFT, _in_bitmap, _set_bits

    rng = np.random.default_rng(7)
    members = rng.integers(0, 2**63, size=200_000, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    others = rng.integers(0, 2**63, size=200_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    bitmap = np.zeros(1 << (_MAIN_BITMAP_BITS - 3), dtype=np.uint8)
    _set_bits(bitmap, members, _MAIN_BITMAP_SHIFT)
    assert np.array_equal(_in_bitmap(members, bitmap, _MAIN_BITMAP_SHIFT), members)
    assert len(_in_bitmap(others, bitmap, _MAIN_BITMAP_SHIFT)) < 0.02 * len(others)
