"""The web quality step reuses what earlier steps of the same worker measured (the heuristics' classic
signals, the language ID's prediction) only where it is exactly what it would compute: on real pages the
reused values equal recomputation, and the stored quality signals are the same with and without reuse."""

from __future__ import annotations

import copy

import pytest
from datatrove.data import Document

from assay.stages.output.normalize import TextNormalizer
from assay.stages.web import heuristics as H
from assay.stages.web import langid as L
from assay.stages.web.extract import extract_html
from assay.stages.web.heuristics import WebHeuristicSignals, classic_signals
from assay.stages.web.langid import LanguageId, detect_language
from assay.stages.web.quality import (TEXT_MAX_CHARS, WebQualityScore, stored_classic_signals, stored_language)


def _pages(shared_data, n: int = 40) -> list[Document]:
    paths = sorted((shared_data / "html/readability/readability/input").glob("*.html"))[:n]
    docs = []
    for p in paths:
        text = extract_html(p.read_text(encoding="utf-8", errors="replace"))
        if text.strip():
            docs.append(Document(text=text, id=p.stem, metadata={"source": "web"}))
    return docs


def _memos():
    from assay.stages.signals.quality import SCORED, SCORED_LINES

    return [H.MEASURED, L.RECENT, SCORED, SCORED_LINES]


class _Calls:
    n = 0


@pytest.fixture
def count_calls(monkeypatch):
    """``count_calls(module, "name")`` replaces that function by one that counts its calls (``.n``, resettable)
    and calls the real one; undone after the test."""

    def wrap(module, name: str) -> _Calls:
        calls, real = _Calls(), getattr(module, name)

        def counting(*a, **k):
            calls.n += 1
            return real(*a, **k)

        monkeypatch.setattr(module, name, counting)
        return calls

    return wrap


def _clear_memos():
    for m in _memos():
        while m.active:
            m.close()
        m.clear()


@pytest.mark.shared_data
def test_reused_signals_equal_recomputation_on_real_pages(shared_data):
    import assay.classifiers
    from assay.stages.signals.quality import QualityScores
    from assay.classifiers.text import normalize
    from assay.stages.web.quality import stored_model_lines, stored_model_scores

    _clear_memos()
    for m in _memos():
        m.open()  # as the web quality step does when it starts
    docs = list(QualityScores(models=["web", "stem"]).run(
        LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(_pages(shared_data))))))
    assert len(docs) >= 30
    web = assay.classifiers.load("web")
    n_sig = n_lang = n_long_lang = n_long_score = 0
    seen = set()
    for d in docs:
        scores = stored_model_scores(d)
        # (a copy of an earlier page's short text takes that page's scores by text, ``memo.ByText``: nothing handed over)
        assert (scores is not None) == (len(d.text) <= TEXT_MAX_CHARS and d.text not in seen), d.id
        seen.add(d.text)
        if scores is not None:
            assert scores[str(web.path)] == float(web.score([d.text[:TEXT_MAX_CHARS]])[0])
        lines = stored_model_lines(d)
        assert (lines is not None) == (len(d.text) > TEXT_MAX_CHARS), d.id
        if lines is not None:  # a long page: its score where the prefix the quality step reads gives the same line
            line, view, score = lines[str(web.path)]
            if (line == normalize(d.text[:TEXT_MAX_CHARS], web.normalization)
                    and view == web.prose_lines([d.text[:TEXT_MAX_CHARS]])[0]):
                n_long_score += 1
                assert score == float(web.score([d.text[:TEXT_MAX_CHARS]])[0])
        sig = stored_classic_signals(d)
        short = len(d.text) <= TEXT_MAX_CHARS
        assert (sig is not None) == short, d.id  # every text within the limit is reused
        if sig is not None:
            n_sig += 1
            assert sig == classic_signals(d.text[:TEXT_MAX_CHARS])
        lang = stored_language(d)
        assert lang is not None, d.id  # the language ID step reads the same prefix of a long page
        n_lang += 1
        n_long_lang += not short
        assert lang == detect_language(d.text[:TEXT_MAX_CHARS])  # unrounded, unlike lang__score
        # one reader: a second look finds nothing
        assert stored_classic_signals(d) is None and stored_language(d) is None
        assert stored_model_scores(d) is None
    assert n_sig >= 20 and n_lang >= 20 and n_long_lang >= 1 and n_long_score >= 1
    _clear_memos()


def test_memos_keep_nothing_without_a_reader():
    _clear_memos()
    d = Document(text="The council decided on Monday to extend the opening hours. " * 5, id="a",
                 metadata={"source": "web"})
    list(LanguageId().run(WebHeuristicSignals().run([d])))
    assert len(H.MEASURED) == 0 and len(L.RECENT) == 0
    assert stored_classic_signals(d) is None and stored_language(d) is None
    # a reader that finishes forgets what it did not read
    H.MEASURED.open()
    list(WebHeuristicSignals().run([Document(text="Another short page of text.", id="b",
                                             metadata={"source": "web"})]))
    assert len(H.MEASURED) == 1
    H.MEASURED.close()
    assert len(H.MEASURED) == 0


@pytest.mark.shared_data
def test_quality_scores_same_with_and_without_reuse(shared_data, count_calls):
    from assay.stages.signals.quality import QualityScores

    _clear_memos()
    pages = _pages(shared_data)

    def upstream(docs):
        return QualityScores(models=["web", "stem"]).run(
            LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(docs))))

    _clear_memos()
    calls = count_calls(H, "classic_signals")  # the heuristics step calls it too: count the upstream steps alone first
    list(upstream(copy.deepcopy(pages)))
    n_upstream = calls.n
    calls.n = 0
    chained = list(WebQualityScore().run(upstream(copy.deepcopy(pages))))
    n_chained = calls.n - n_upstream  # the quality step's own
    _clear_memos()
    # the same documents through the same steps, the quality step alone afterwards: all recomputed
    prepared = list(upstream(copy.deepcopy(pages)))
    calls.n = 0
    fresh = list(WebQualityScore().run(iter(prepared)))
    n_fresh = calls.n
    n_short = sum(len(d.text) <= TEXT_MAX_CHARS for d in prepared)
    # a copy of an earlier page's short text takes that page's values by text (``memo.ByText``): not measured again
    short = [d.text for d in prepared if len(d.text) <= TEXT_MAX_CHARS]
    n_copies = len(short) - len(set(short))
    assert n_fresh == len(pages) - n_copies and n_chained == len(pages) - n_short and n_short >= 20
    keys = ("quality__web_score", "quality__web_pct", "quality__lang")
    assert [[d.metadata[k] for k in keys] for d in chained] == [[d.metadata[k] for k in keys] for d in fresh]
    assert all(d.metadata["quality__web_score"] is not None for d in chained)


def test_changed_text_is_not_reused():
    _clear_memos()
    for m in _memos():
        m.open()
    text = "The council decided on Monday to extend the opening hours of the library. " * 5
    d = Document(text=text, id="a", metadata={"source": "web"})
    list(WebHeuristicSignals().run([d]))
    list(LanguageId().run([d]))
    assert len(H.MEASURED) == 1 and len(L.RECENT) == 1
    d.text = text + " Edited later."
    assert stored_classic_signals(d) is None
    assert stored_language(d) is None
    # a text longer than the quality step reads is never reused (its signals cover more than that)
    long = Document(text="word " * (TEXT_MAX_CHARS // 4), id="b", metadata={"source": "web"})
    list(WebHeuristicSignals().run([long]))
    assert stored_classic_signals(long) is None
    _clear_memos()


@pytest.mark.shared_data
def test_character_counts_shared_by_the_feature_functions_equal_per_character_sums(shared_data):
    """``heuristic_features``' upper-case and digit shares come from one ``Counter`` of the text (shared
    with ``shape_features``): the same numbers as the per-character sums they replaced, on real pages
    and on texts around the ``TEXT_MAX_CHARS`` cut, whatever the order of the two calls."""
    from assay.stages.web import quality as Q

    texts = [d.text for d in _pages(shared_data, 80)]
    texts += ["ÀB c1 ²Ⅻ ǅ Σς 9٣", "", "x" * (TEXT_MAX_CHARS - 1) + "AB12", texts[0] * 40]
    i_up, i_dig = Q.HEURISTICS.index("upper_frac"), Q.HEURISTICS.index("digit_frac")
    for t in texts:
        for first_shape in (False, True):
            if first_shape:
                shape = Q.shape_features(t)
            h = Q.heuristic_features(t, 0.5, "en")
            assert Q.shape_features(t) == (shape if first_shape else Q.shape_features(t[:]))
            c = t[:TEXT_MAX_CHARS]
            letters = sum(map(str.isalpha, c)) or 1
            assert h[i_up] == sum(map(str.isupper, c)) / letters
            assert h[i_dig] == sum(map(str.isdigit, c)) / (len(c) or 1)


def test_memos_keep_exactly_the_texts_the_quality_step_reads_whole():
    """The memos' length limit is the web quality step's: every text it reads whole can be handed over,
    and no longer text is kept."""
    from assay.stages.common.memo import WHOLE_TEXT_MAX_CHARS
    from assay.stages.signals.quality import SCORED

    assert WHOLE_TEXT_MAX_CHARS == TEXT_MAX_CHARS
    assert H.MEASURED.max_chars == SCORED.max_chars == TEXT_MAX_CHARS


@pytest.mark.shared_data
def test_long_page_whose_prose_view_grows_past_the_prefix_scores_as_quality_score(shared_data):
    """A long page of short lines whose running prose comes after the first 20,000 characters: the quality_scores step
    (100,000-character prefix) sees prose lines the web quality step's prefix lacks, so the two scores differ and the
    batch web quality must not take the stored one: the batch value equals ``quality_score`` of the same text."""
    import assay.classifiers
    from assay.stages.signals.quality import QualityScores
    from assay.stages.web.quality import quality_score

    web = assay.classifiers.load("web")
    assert web.prose_min_words >= 2
    pages = _pages(shared_data, n=60)
    prose = max((d.text for d in pages), key=lambda t: sum(len(ln.split()) >= 10 for ln in t.splitlines()))
    prose_lines = [ln for ln in prose.splitlines() if len(ln.split()) >= 10][:40]
    menu = "\n".join(f"Home | Section {i} | Archive" for i in range(TEXT_MAX_CHARS // 25 + 50))
    text = menu + "\n" + "\n".join(prose_lines)
    assert len(menu) > TEXT_MAX_CHARS
    # the two prefixes give the same normalised line but different prose views
    views = web.prose_lines([text[:TEXT_MAX_CHARS], text])
    assert views[0] is None and views[1] is not None

    _clear_memos()
    step = WebQualityScore()
    docs = [Document(text=text, id="long", metadata={"source": "web"})]
    out = list(step.run(QualityScores(models=["web", "stem"]).run(
        LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(docs))))))
    assert out[0].metadata["quality__web_score"] == pytest.approx(float(quality_score([out[0].text])[0]), abs=1e-12)
    _clear_memos()


@pytest.mark.shared_data
def test_adult_content_reuses_the_web_quality_count_and_stores_the_same_signals(shared_data):
    """The adult content step takes the adult-word count the web quality step made of the same short text in the
    same language (``safety.COUNTED``) instead of counting again: on real pages the stored ``safety__*`` signals
    are the same as the step alone computes, most short pages are taken from the memo, and the memo is empty
    afterwards (each entry read once, nothing kept without a reader)."""
    from assay.stages.signals.quality import QualityScores
    from assay.stages.web import safety as S
    from assay.stages.web.safety import AdultContent

    _clear_memos()
    pages = _pages(shared_data)
    taken = {"hit": 0, "miss": 0}
    real = S.counted_whole_text

    def counting(*a, **k):
        out = real(*a, **k)
        taken["hit" if out is not None else "miss"] += 1
        return out

    def upstream(docs):
        return QualityScores(models=["web", "stem"]).run(
            LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(docs))))

    S.counted_whole_text = counting
    try:
        chained = list(AdultContent().run(WebQualityScore().run(upstream(copy.deepcopy(pages)))))
        n_hit = taken["hit"]
        assert len(S.COUNTED) == 0 and not S.COUNTED.active
        _clear_memos()
        prepared = list(WebQualityScore().run(upstream(copy.deepcopy(pages))))  # no adult step reading: no memo
        assert len(S.COUNTED) == 0
        taken["hit"] = 0
        fresh = list(AdultContent().run(iter(prepared)))
        assert taken["hit"] == 0
    finally:
        S.counted_whole_text = real
    n_short = sum(len(d.text) <= TEXT_MAX_CHARS for d in prepared)
    assert n_short >= 20 and n_hit >= n_short // 2
    keys = ("safety__adult_share", "safety__adult_words", "safety__adult_lang")
    assert [[d.metadata[k] for k in keys] for d in chained] == [[d.metadata[k] for k in keys] for d in fresh]


def test_adult_count_memo_checks_the_language_and_the_text():
    from assay.stages.web import safety as S

    S.COUNTED.open()
    try:
        text = "An ordinary sentence about the weather and the harbour, nothing else to see here at all."
        got = S.adult_word_stats(text, "en")  # (hits, words, distinct entries)
        assert S.counted_whole_text(text, "de") is None  # another language: counted again
        S.adult_word_count(text, "en")
        assert S.counted_whole_text(text + " More.", "en") is None  # another text
        assert S.counted_whole_text(text, "en") == got
        assert S.counted_whole_text(text, "en") is None  # read once
    finally:
        S.COUNTED.close()
    assert len(S.COUNTED) == 0


@pytest.mark.shared_data
def test_quality_signals_do_not_depend_on_the_batch_size(shared_data):
    """The batch sizes of the scoring steps bound memory only: the same pages give the same signals batched
    by 1, 7 and the defaults, up to the last bit of a float (memos cleared between runs, so reuse cannot hide a
    difference)."""
    from assay.stages.signals.quality import QualityScores

    pages = _pages(shared_data, n=30)

    def run(batch):
        _clear_memos()
        kw = {} if batch is None else {"batch_size": batch}
        docs = copy.deepcopy(pages)
        out = WebQualityScore(**kw).run(QualityScores(models=["web", "stem"], **kw).run(
            LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(docs)))))
        return [{k: v for k, v in d.metadata.items() if k.startswith(("quality__", "fasttext_"))} for d in out]

    ref = run(None)
    assert len(ref) == len(pages) and all(r["quality__web_score"] is not None for r in ref)
    for got in (run(1), run(7)):
        assert [sorted(g) for g in got] == [sorted(r) for r in ref]
        # the combiner's matrix product may round the last bit differently for another batch shape
        assert got == [{k: (pytest.approx(v, rel=1e-12, abs=1e-15) if isinstance(v, float) else v)
                        for k, v in r.items()} for r in ref]


@pytest.mark.shared_data
def test_copies_of_a_page_take_its_values_and_every_signal_stays_the_same(shared_data, monkeypatch, count_calls):
    """A document whose text is exactly that of an earlier document of the run (another copy of a page, in the same
    batch or a later one) takes the values the language ID, quality, web quality and adult steps computed for that text
    (``memo.ByText``), and every stored signal, of the copies and of the documents batched with them, is the same to the
    last bit as with every document computed."""
    from assay.stages.common import memo
    from assay.stages.signals.quality import QualityScores
    from assay.stages.web.safety import AdultContent

    pages = _pages(shared_data, n=30)
    docs = list(pages)
    for k, d in enumerate(pages[::2]):  # copies: right behind the page, or many documents later
        docs.insert(min(len(docs), 2 * k + (1 if k % 2 else 25)),
                    Document(text=d.text, id=f"{d.id}#copy{k}", metadata=dict(d.metadata)))
    calls = count_calls(L, "detect_language")

    def run(batch_size):
        _clear_memos()
        calls.n = 0
        out = AdultContent().run(WebQualityScore(batch_size=batch_size).run(
            QualityScores(models=["web", "stem"], batch_size=batch_size).run(
                LanguageId().run(TextNormalizer().run(WebHeuristicSignals().run(copy.deepcopy(docs)))))))
        return [(d.id, d.metadata) for d in out], calls.n

    got, n_got = run(8)
    monkeypatch.setattr(memo.ByText, "key", lambda self, text, *extra: None)  # nothing taken from a copy
    ref, n_ref = run(8)
    assert [i for i, _ in got] == [i for i, _ in ref] and len(got) == len(pages) + len(pages[::2])
    assert all(m["quality__web_score"] is not None and m["fasttext_web__score"] is not None for _, m in ref)
    assert [m for _, m in got] == [m for _, m in ref]
    assert [list(m) for _, m in got] == [list(m) for _, m in ref]  # the same columns in the same order
    n_copies = sum(len(d.text) <= memo.WHOLE_TEXT_MAX_CHARS for d in pages[::2])
    assert n_copies >= 10 and n_got <= n_ref - n_copies  # the copies were not predicted again


def test_by_text_keys_the_exact_text_and_keeps_at_most_max_items():
    from assay.stages.common.memo import ByText

    m = ByText(max_items=2, max_chars=10)
    assert m.key("x" * 11) is None and m.key(None) is None
    m.put(m.key("abc", "web"), 1)
    assert m.get(m.key("abc", "web")) == 1 and m.get(m.key("abc", "pdf")) is None and m.get(m.key("abc ", "web")) is None
    m.put(m.key("b"), 2)
    m.put(m.key("c"), 3)
    assert len(m) == 2 and m.get(m.key("abc", "web")) is None and m.get(m.key("c")) == 3
