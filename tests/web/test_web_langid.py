from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from datatrove.data import Document

from assay.stages.web.langid import (
    LanguageId,
    default_model_path,
    detect_language,
    detect_language_topk,
    language_threshold,
    prose_for_langid,
)


def test_default_model_is_shipped_locally():
    p = default_model_path()
    assert p.endswith("lid.176.ftz")
    assert Path(p).stat().st_size > 500_000


@pytest.mark.parametrize(
    "text,code",
    [
        ("The committee published its annual report on public health and education spending yesterday.", "en"),
        ("Der Ausschuss hat gestern seinen Jahresbericht über Gesundheit und Bildung veröffentlicht.", "de"),
        ("Le comité a publié hier son rapport annuel sur la santé publique et l'éducation.", "fr"),
        ("El comité publicó ayer su informe anual sobre salud pública y educación.", "es"),
        ("委员会昨天发布了关于公共卫生和教育支出的年度报告。", "zh"),
        ("Комитет вчера опубликовал свой ежегодный доклад о здравоохранении и образовании.", "ru"),
    ],
)
def test_detect_language(text: str, code: str):
    got, score = detect_language(text)
    assert got == code
    assert 0.5 < score <= 1.0


def test_degenerate_inputs():
    assert detect_language("") == ("und", 0.0)
    assert detect_language("1234 5678 !!! ---") == ("und", 0.0)
    assert detect_language_topk("", k=3) == []
    # multi-line text is fine (fastText needs one line; we join)
    code, _ = detect_language("Hello there.\nThis is a second line of English text.\n\nAnd a third paragraph.")
    assert code == "en"


def test_code_is_ignored_for_language_id():
    prose = "Dieses Tutorial erklärt, wie man in Python eine Liste sortiert und warum das wichtig ist."
    code = "```python\n" + "\n".join(f"def function_{i}(items):\n    return sorted(items, key=len)" for i in range(30)) + "\n```"
    text = prose + "\n\n" + code + "\n\nDie Funktion `sorted` gibt eine neue Liste zurück."
    assert "def function_" not in prose_for_langid(text)
    assert detect_language(text)[0] == "de"


def test_thresholds():
    assert language_threshold("en") == 0.65
    assert language_threshold("bs") < language_threshold("en")
    assert language_threshold("xx", {"en": 0.9}, default=0.3) == 0.3


def test_step_writes_signals_and_skips_code():
    docs = [
        Document(text="The quick brown fox jumps over the lazy dog near the river bank.", id="w",
                 metadata={"source": "web"}),
        Document(text="def f(x):\n    return x\n", id="c", metadata={"source": "code"}),
        Document(text="", id="r", metadata={"source": "web", "reject_reason": "web_empty_extraction"}),
        Document(text="Ceci est un document PDF écrit en français, avec plusieurs phrases.", id="p",
                 metadata={"source": "pdf"}),
    ]
    step = LanguageId()
    out = {d.id: d for d in step.run(iter(docs))}
    assert list(out) == ["w", "c", "r", "p"]
    w = out["w"].metadata
    assert w["lang__code"] == "en" and 0.65 <= w["lang__score"] <= 1.0
    assert w["lang__threshold"] == 0.65
    assert w["lang__score_margin"] == pytest.approx(w["lang__score"] - 0.65, abs=1e-5)
    assert w["lang__model"] == "lid.176.ftz"
    assert "lang__code" not in out["c"].metadata
    assert out["r"].metadata["lang__code"] is None
    assert out["p"].metadata["lang__code"] == "fr"
    only_web = {d.id: d for d in LanguageId(sources=["web"]).run(iter([
        Document(text="Ceci est un texte en français.", id="p", metadata={"source": "pdf"})]))}
    assert "lang__code" not in only_web["p"].metadata


def test_missing_model_path_raises_clearly(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        list(LanguageId(model_path=str(tmp_path / "nope.bin")).run(iter([
            Document(text="hello world", id="x", metadata={"source": "web"})])))


@pytest.mark.shared_data
def test_model_path_override_with_shared_model(shared_data: Path):
    p = shared_data / "multilingual/fasttext_lid176/lid.176.ftz"
    code, score = detect_language("Este é um texto escrito em português do Brasil, sobre futebol.", model_path=str(p))
    assert code == "pt" and score > 0.5
    out = list(LanguageId(model_path=str(p)).run(iter([
        Document(text="Este é um texto escrito em português.", id="x", metadata={"source": "web"})])))
    assert out[0].metadata["lang__code"] == "pt"


@pytest.mark.shared_data
def test_register_labelled_documents_accuracy(shared_data: Path):
    """Real web documents in 6 languages (Turku register corpora): >= 90% correct per language."""
    root = shared_data / "multilingual/turku_register_core"
    for lang in ("ar", "ca", "hi", "id", "pt", "ur"):
        texts = []
        with gzip.open(root / f"{lang}.tsv.gz", "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 1)
                if len(parts) == 2 and len(parts[1]) > 200:
                    texts.append(parts[1])
                if len(texts) >= 60:
                    break
        correct = sum(detect_language(t)[0] == lang for t in texts)
        assert correct / len(texts) >= 0.9, (lang, correct, len(texts))


def test_prose_for_langid_marker_shortcuts_change_nothing():
    """The pattern passes skipped for want of their marker (``` for fences, $ for math, ` for inline
    code) would have removed nothing: same result as running every pattern."""
    from assay.stages.web import langid as L

    def every_pattern(text, min_chars=40):
        s = L._FENCE_RE.sub(" ", text)
        s = L._DISPLAY_MATH_RE.sub(" ", s)
        s = L._INLINE_MATH_RE.sub(" ", s)
        s = L._INLINE_CODE_RE.sub(" ", s)
        return s if len(s.strip()) >= min_chars else text

    prose = "The library opens at nine on weekdays and at ten on Saturdays, says the council. "
    cases = [prose, prose + "Use `ls -la` here.", prose + "Cost $5 and $$x^2$$ and $y$.",
             prose + "\n```\ncode here\n```\n" + prose, "`only code`", "$$ $$", prose + "costs $5 or $6 today"]
    for c in cases:
        assert L.prose_for_langid(c) == every_pattern(c)
