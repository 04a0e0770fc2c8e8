from __future__ import annotations

import json

import pytest

from assay.stages.pdf import detect_artifacts
from assay.stages.pdf.artifacts import DETECTORS, PdfArtifactSignals, text_layer_agreement

CLEAN = (
    "# Water supply report\n\n"
    "The committee reviewed the annual report on regional water supply and found that consumption rose by "
    "four percent while losses in the distribution network fell. Engineers replaced old pipes in three "
    "districts and installed meters in most new buildings.\n\n"
    "The energy balance is $E = mc^2$ and the flow obeys\n\n$$\\frac{\\partial u}{\\partial t} = \\nu \\nabla^2 u$$\n\n"
    "<table><tr><th>District</th><th>Use</th></tr><tr><td>North</td><td>12.5</td></tr>"
    "<tr><td>South</td><td>9.1</td></tr></table>\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
    "The report recommends further investment in storage capacity and better forecasting of summer demand."
)


def test_clean_text_fires_nothing():
    assert detect_artifacts(CLEAN) == []
    assert detect_artifacts(CLEAN, text_layer=CLEAN, ink=0.08) == []


@pytest.mark.parametrize("text,kw,name", [
    (CLEAN, {"finish_reason": "length"}, "truncation"),
    (CLEAN + "\n<table><tr><td>North</td><td>12", {}, "truncation"),
    (CLEAN + " and the answer is" + " the answer is" * 12, {}, "tail_loop"),
    (CLEAN + "\n" + "\n".join(["Total revenue for the year"] * 8), {}, "repeated_lines"),
    ("Intro. " + "This is the sentence that the model keeps repeating. " * 5 + "End here.", {}, "repeated_sentences"),
    (CLEAN + "\n" + "0" * 60, {}, "char_run"),
    ("ab " * 200, {}, "low_entropy"),
    ("Some hallucinated content on an empty page, with several words.", {"ink": 0.0}, "blank_hallucination"),
    ("Completely different content about astronomy, stars, galaxies and telescopes observing the sky at night "
     "over many long years of careful work.", {"text_layer": CLEAN}, "text_layer_disagreement"),
    ("<table>" + "<tr><td></td><td></td><td></td></tr>" * 6 + "</table>", {}, "table_garbage"),
    ("| a | b |\n| 1 | 2 | 3 | 4 |\n| x |\n| y | z | w |", {}, "table_garbage"),
    (CLEAN + " bro\ufffdken w\ufffdrds \ufffd", {}, "bad_chars"),
    (CLEAN + " " + "这是一个关于水资源的报告" * 40, {}, "script_mismatch"),
    ("Отчёт комитета о водоснабжении региона за прошлый год и рекомендации по инвестициям.",
     {"text_layer": CLEAN}, "script_mismatch"),
])
def test_each_detector_fires(text, kw, name):
    fired = detect_artifacts(text, **kw)
    assert name in fired, fired


def test_names_are_known_and_ordered():
    fired = detect_artifacts("x" * 100 + "\ufffd" * 5, finish_reason="length", ink=0.0)
    assert fired == [d for d in DETECTORS if d in fired]
    assert {"truncation", "char_run", "bad_chars", "blank_hallucination"} <= set(fired)


def test_nfkc_agreement_and_untrusted_layer():
    layer = "ﬁnancial ﬂows in the ﬁrst quarter " * 10  # ligature glyphs in the text layer
    assert text_layer_agreement("financial flows in the first quarter " * 10, layer) > 0.95
    # a garbled text layer is not trustworthy: no disagreement claim
    garbled = "Tgd bnllhssdd qduhdvdc sgd zmmtzk qdonqs nm qdfhnmzk vzsdq rtookx zmc entmc " * 5
    assert "text_layer_disagreement" not in detect_artifacts(CLEAN, text_layer=garbled)


def test_step_counts_per_page():
    from datatrove.data import Document, Media, MediaType

    from assay.stages.pdf._pdfdoc import OCR_PAGES, PAGE_TEXTS

    m = Media(id="d", type=MediaType.DOCUMENT, url="d")
    m.metadata[PAGE_TEXTS] = [CLEAN, "", CLEAN]
    m.metadata[OCR_PAGES] = {
        1: {"text": "Invented words on a blank page, quite a few of them.", "finish_reason": "stop", "ink": 0.0},
        2: {"text": CLEAN, "finish_reason": "length", "ink": 0.1},
    }
    doc = Document(text="x", id="d", media=[m], metadata={"source": "pdf"})
    rejected = Document(text="", id="r", metadata={"source": "pdf", "reject_reason": "pdf_encrypted"})
    out = list(PdfArtifactSignals().run(iter([doc, rejected])))
    md = out[0].metadata
    assert json.loads(md["pdf__page_artifacts"]) == [[], ["blank_hallucination"], ["truncation"]]
    assert md["pdf__artifacts"] == "truncation,blank_hallucination"
    assert md["pdf__artifact_pages"] == 2 and md["pdf__artifact_page_share"] == round(2 / 3, 4)
    assert md["pdf__artifact__truncation"] == 1 and md["pdf__artifact__tail_loop"] == 0
    assert "pdf__artifacts" not in out[1].metadata and len(out) == 2
