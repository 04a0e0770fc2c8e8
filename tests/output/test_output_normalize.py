from __future__ import annotations

import unicodedata

from datatrove.data import Document

from assay.stages.output.normalize import TextNormalizer, normalize_text, sanitize_text


def test_nfc():
    decomposed = "cafe\u0301"
    out = normalize_text(decomposed)
    assert out == "café" and unicodedata.is_normalized("NFC", out)


def test_mojibake_repaired():
    assert normalize_text("The cafÃ© serves crÃ¨me brÃ»lÃ©e") == "The café serves crème brûlée"
    assert normalize_text("donâ€™t") == "don\u2019t"


def test_control_chars_removed_and_newlines_unified():
    assert normalize_text("a\x00b\x07c\x1b[31mred\x1b[0m") == "abcred"
    assert normalize_text("l1\r\nl2\rl3\u2028l4\u2029l5") == "l1\nl2\nl3\nl4\nl5"
    # C1 controls in text are almost always Windows-1252 bytes decoded as Latin-1 (ftfy fix_c1_controls)
    assert normalize_text("wait\x85 what") == "wait\u2026 what"
    assert normalize_text("tab\tkept\nnewline kept") == "tab\tkept\nnewline kept"


def test_content_that_is_not_broken_is_kept():
    for s in ["x &amp; y &lt;b&gt;", "“curly” ‘quotes’", "ＡＢＣ全角", "ﬁnal", "привет мир", "中文字符", "plain ascii text"]:
        assert normalize_text(s) == s, s


def test_lone_surrogates_become_replacement_char():
    bad = "ok \udcff end"
    assert sanitize_text(bad) == "ok \ufffd end"
    out = normalize_text(bad)
    out.encode("utf-8")  # must not raise
    assert "\ufffd" in out


def test_step_records_signal_and_never_drops():
    docs = [
        Document(text="clean text", id="a", metadata={"source": "web"}),
        Document(text="cafÃ©\r\n", id="b", metadata={"source": "web"}),
        Document(text="", id="c", metadata={"source": "pdf", "reject_reason": "pdf_encrypted"}),
        Document(text="code\r\n", id="d", metadata={"source": "code"}),
    ]
    step = TextNormalizer(skip_sources=["code"])
    out = list(step.run(iter(docs)))
    assert [d.id for d in out] == ["a", "b", "c", "d"]
    assert [d.metadata["normalize__changed"] for d in out] == [False, True, False, False]
    assert out[1].text == "café\n"
    assert out[1].metadata["normalize__chars_delta"] == -2
    assert out[3].text == "code\r\n"  # skipped source untouched
    assert step.stats["normalize/changed"].total == 1
    assert step.stats["documents"].total == 4


def test_segment_memo_gives_ftfy_results_and_stays_bounded(monkeypatch):
    """Dirty segments are fixed once per worker (``_MEMO``): a text whose lines repeat across documents gives
    exactly ``ftfy.fix_text`` each time, from the memo the second time; past ``_MEMO_MAX_CHARS`` the memo is
    emptied, and results stay the same."""
    import ftfy

    from assay.stages.output import normalize as N

    cfg = N._config()
    lines = ["The cafÃ© serves crÃ¨me brÃ»lÃ©e", "donâ€™t stop", "plain ascii line", "naïve “quotes” – dash…",
             "x\u0085y\r\nz", "\u2028 separator", "Ã©" * 1500]
    text = "\n".join(lines)
    N._MEMO.clear()
    first = N.fix_text_segments(text, cfg)
    assert first == ftfy.fix_text(text, cfg)
    memo = N._MEMO[cfg]
    assert "donâ€™t stop\n" in memo and all(len(k) <= N._MEMO_SEGMENT_MAX for k in memo)
    calls = []
    real = ftfy.fix_and_explain
    monkeypatch.setattr(ftfy, "fix_and_explain", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert N.fix_text_segments(text, cfg) == first
    assert len(calls) == 1  # only the segment too long to keep (mojibake: ftfy itself, no shortcut)
    monkeypatch.setattr(N, "_MEMO_MAX_CHARS", 10)
    for i in range(5):
        t = f"line {i} “quoted” naïve\n" + text
        assert N.fix_text_segments(t, cfg) == ftfy.fix_text(t, cfg)
    assert N._MEMO_CHARS[0] < 200  # emptied on the way


def test_mojibake_trigger_is_in_every_match_of_ftfys_regex():
    """Every alternative of ftfy's mojibake regex (``BADNESS_RE``, parsed) requires a character of one class that
    lies wholly inside ``_mojibake_trigger``: so a text without a trigger character is never ``is_bad``, which is
    what lets ``_unchanged_by_ftfy`` skip the search. Ordinary typography is not a trigger."""
    import re._constants as C  # noqa: PLC2701
    import re._parser as P  # noqa: PLC2701

    from ftfy.badness import BADNESS_RE

    from assay.stages.output.normalize import _mojibake_trigger

    trigger = _mojibake_trigger()

    def chars(op, av):  # the characters one required item matches, or None (a category, a negation, "any")
        if op is C.LITERAL:
            return {chr(av)}
        if op is C.IN:
            out = set()
            for o, a in av:
                if o is C.LITERAL:
                    out.add(chr(a))
                elif o is C.RANGE:
                    out.update(map(chr, range(a[0], a[1] + 1)))
                else:
                    return None
            return out
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1 and len(av[2]) == 1:
            return chars(*av[2][0])
        return None

    (op, (_, branches)), = P.parse(BADNESS_RE.pattern, BADNESS_RE.flags)
    assert op is C.BRANCH and len(branches) > 30
    for alt in branches:
        required = [c for item in alt if (c := chars(*item)) is not None]
        assert any(all(trigger.fullmatch(ch) for ch in c) for c in required), alt
    for typography in ("’‘“”–—…•©®™«»·", "plain ascii", "中文字符", "привет мир", "नमस्ते", "αβγ"):
        assert trigger.search(typography) is None, typography
