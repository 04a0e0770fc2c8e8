"""The fast paths of the classic heuristics (``assay.stages.web.heuristics``) give exactly what the plain
definitions give, on real texts of ../shared/data: the main text of the ir_chaos pages (many languages and
scripts), the CS336 line-duplicate fixtures, and pages made repetitive on purpose; each text also as the
prose view and the label-stripped body that ``web_heuristic_signals`` measures on reference pages."""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest
from datatrove.pipeline.filters.gopher_repetition_filter import find_duplicates
from datatrove.utils.text import PUNCTUATION_SET

from assay.stages.web import heuristics as H


def _texts(shared_data) -> list[str]:
    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in gold[::3]]
    fixtures = shared_data / "quality/cs336_fixtures"
    texts += [p.read_text(encoding="utf-8") for p in sorted(fixtures.glob("documents_with_line_duplicates/*.txt"))]
    texts.append((fixtures / "high_quality_wiki_reference.txt").read_text(encoding="utf-8"))
    rng = random.Random(5)
    repetitive = []
    for t in texts[:12]:
        lines = t.splitlines()
        # the same lines again, some twice, some paragraphs split by runs of 1-5 line breaks
        picked = [rng.choice(lines) for _ in range(min(60, 2 * len(lines)))] if lines else []
        repetitive.append("".join(ln + "\n" * rng.randint(1, 5) for ln in lines + picked))
    texts += repetitive
    texts += ["", "\n", "\n\n", " \n a \n\n\n b\n", "a\n\n\nb\n\n\n\n\nc", "x " * 50]
    views = []
    for t in texts:
        prose, counts = H.split_prose(t)
        views += [prose, H.strip_label_lines(prose)]
    return texts + views


def _find_all_duplicate(words: list[str], n: int) -> int:
    """datatrove's ``find_all_duplicate`` on word sequences (tuples instead of joined strings)."""
    unique: set = set()
    rep, idx = 0, 0
    while idx < len(words) - n + 1:
        gram = tuple(words[idx:idx + n])
        if gram in unique:
            rep += sum(map(len, gram))
            idx += n
        else:
            unique.add(gram)
            idx += 1
    return rep


def _repetition_reference(text: str) -> dict:
    """GopherRepetitionFilter's values as datatrove computes them (regex splits, ``find_duplicates``,
    ``Counter.most_common``, the greedy duplicate scan), n-grams compared as word sequences."""
    r = H._r
    out = {}
    n_chars = max(len(text), 1)
    stripped = text.strip()
    paragraphs = re.split(r"\n{2,}", stripped) if stripped else []
    pd_, pc = find_duplicates(paragraphs) if paragraphs else (0, 0)
    out["dup_para_frac"] = r(pd_ / len(paragraphs)) if paragraphs else 0.0
    out["dup_para_char_frac"] = r(pc / n_chars) if paragraphs else 0.0
    lines = re.split(r"\n+", text) if text else []
    ld, lc = find_duplicates(lines) if lines else (0, 0)
    out["dup_line_frac"] = r(ld / len(lines)) if lines else 0.0
    out["dup_line_char_frac"] = r(lc / n_chars) if lines else 0.0
    words = H.split_words(text)
    for n in H.GOPHER_TOP_NGRAMS:
        grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
        if grams:
            gram, count = Counter(grams).most_common(1)[0]
            out[f"top_{n}gram_char_frac"] = r((sum(map(len, gram)) + n - 1) * count / n_chars)
        else:
            out[f"top_{n}gram_char_frac"] = 0.0
    for n in H.GOPHER_DUP_NGRAMS:
        out[f"dup_{n}gram_char_frac"] = r(_find_all_duplicate(words, n) / n_chars) if len(words) >= n else 0.0
    return out


@pytest.mark.shared_data
def test_line_and_paragraph_splits_and_duplicate_counts_equal_the_regex_and_datatrove(shared_data):
    for t in _texts(shared_data):
        assert H.split_line_runs(t) == re.split(r"\n+", t)
        stripped = t.strip()
        if stripped:
            assert H.split_paragraphs(stripped) == re.split(r"\n{2,}", stripped)
        for items in (re.split(r"\n+", t), t.split("\n"), H.split_words(t)):
            assert H.count_duplicates(items) == find_duplicates(items)


@pytest.mark.shared_data
def test_repetition_signals_equal_the_datatrove_definitions(shared_data):
    texts = _texts(shared_data)
    assert sum(_repetition_reference(t)["dup_5gram_char_frac"] > 0.1 for t in texts) >= 5  # repetition is tested
    for t in texts:
        assert H.gopher_repetition_signals(t) == _repetition_reference(t), t[:80]


def test_repetition_signals_on_random_word_streams_equal_the_datatrove_definitions():
    """Few distinct words, long runs of one word and phrases that repeat with overlaps: many windows repeat
    within n words of themselves, the cases where the greedy duplicate scan skips the first occurrence of a
    window; the repeating windows are found among those whose prefix and suffix repeat."""
    rng = random.Random(17)
    for trial in range(1500):
        vocab = ["a", "bb", "c", "dd", "e", "ff", "g"][: rng.randint(1, 7)]
        m = rng.randint(0, 70)
        if trial % 3 == 0:
            words = [rng.choice(vocab) for _ in range(m)]
        elif trial % 3 == 1:
            phrase = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
            words = []
            while len(words) < m:
                words += phrase[: rng.randint(1, len(phrase))] if rng.random() < 0.6 else [rng.choice("xyz")]
        else:
            words = [vocab[0]] * rng.randint(0, 30) + [rng.choice(vocab) for _ in range(m)] + [vocab[0]] * 12
        text = " ".join(words)
        assert H.gopher_repetition_signals(text) == _repetition_reference(text), text


def test_white_space_of_str_split_and_of_the_word_splitter():
    """What ``_alpha_chunks`` and ``_label_free_body`` rely on: ``str.split`` splits at the white space of
    ``_WORD_RE`` (``regex``'s \\s) and, besides it, only at ``_SPLIT_ONLY_SPACES``, on every code point."""
    import regex

    chars = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF)
    split_space = set(c for c in chars if c.isspace())
    word_space = set(regex.findall(r"\s", chars))
    assert word_space <= split_space and split_space - word_space == set(H._SPLIT_ONLY_SPACES)
    assert all(len(c) == 1 for c in H._FINEWEB_STOP_CHARS)  # (FineWeb's line test by the last character)


@pytest.mark.shared_data
def test_whitespace_words_with_a_letter_and_label_free_words_from_the_words(shared_data):
    """``_alpha_ws_ratio`` from the words of the text equals the definition (whitespace-separated words with
    a letter), and the words of the label-free body taken from those of the prose equal the words split from
    the body; on real texts, with unusual white space put in (an information separator: the split again)."""
    texts = _texts(shared_data)[::3]
    odd = ["\u3000".join(texts[1].split(" ")), texts[2].replace("\n", "\u2028", 5) + "\x85x\xa0y",
           texts[3].replace(". ", ".\x1c", 3), "word\x1fword - 12 \x1e (x)", "²³ ½ Ⅻ a² -- x"]
    for t in texts + odd:
        table = H._WordTable(H.split_words(t))
        chunks = t.split()
        want = H._r(sum(any(c.isalpha() for c in w) for w in chunks) / len(chunks)) if chunks else 0.0
        assert H._alpha_ws_ratio(t, table, table.per_word(H.has_alpha_flags)) == want == H._alpha_ws_ratio(t)
        body, body_table = H._label_free_body(t, table)
        split = H._WordTable(H.split_words(body))
        assert body == H.strip_label_lines(t)
        assert body_table.ids.tolist() == split.ids.tolist() and body_table.lens.tolist() == split.lens.tolist()
        assert body_table.n_words == split.n_words


@pytest.mark.shared_data
def test_word_flags_equal_their_definitions(shared_data):
    """``has_alpha_flags`` / ``non_symbol_flags`` (``str.isalpha`` and ``str.strip`` shortcuts) equal
    ``any(c.isalpha())`` / ``any(c not in PUNCTUATION_SET)`` on the words and whitespace tokens of real
    texts, on every code point as a one-character word, and on words mixing numerals and punctuation."""
    assert not any(c.isalpha() for c in PUNCTUATION_SET)  # what non_symbol_flags relies on
    chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF]
    tricky = ["²³", "x²", "Ⅻ", "Ⅻa", "_1", "1_a", "--", "-a-", "…", "don't", "٣٤", "٣x", "", "’’", "a’", "(2nd)",
              "x86-64", "１", "a１", "((", "«ok»", "'s", "x" * 30 + "²"]
    lists = [chars, tricky]
    for t in _texts(shared_data)[::4]:
        lists += [list(dict.fromkeys(H.split_words(t))), list(dict.fromkeys(t.split()))]
    for words in lists:
        assert H.has_alpha_flags(words).tolist() == [any(c.isalpha() for c in w) for w in words]
        assert H.non_symbol_flags(words).tolist() == [any(c not in PUNCTUATION_SET for c in w) for w in words]
        for w in words[:300]:
            assert H._alpha_ws_ratio(w + " " + w) == (1.0 if any(c.isalpha() for c in w) else 0.0)


@pytest.mark.shared_data
def test_window_groups_equal_pandas_factorize(shared_data):
    """``group_codes`` on n-gram hashes (pandas' hash table called directly) equals ``pandas.factorize``."""
    import pandas as pd

    for t in _texts(shared_data)[:40]:
        table = H._WordTable(H.split_words(t))
        h1 = h = table.word_hashes()
        for n in range(1, min(4, len(h1)) + 1):
            if n > 1:
                h = H.extend_window_hashes(h[:-1], h1, np.arange(len(h1) - n + 1), n)
            codes, counts = H.group_codes(h)
            want, uniques = pd.factorize(h)
            assert np.array_equal(codes, want) and np.array_equal(counts, np.bincount(want, minlength=len(uniques)))


def _c4_reference(text: str) -> dict:
    """C4's line rules line by line as datatrove's C4QualityFilter applies them (the policy phrases by its regex)."""
    from datatrove.pipeline.filters.c4_filters import CITATION_REGEX, END_PUNCTUATION, POLICY_SUBSTRINGS

    policy_re = re.compile("|".join(map(re.escape, POLICY_SUBSTRINGS)))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    kept = sentences = js = policy = too_long = 0
    for line in lines:
        if len(line) > 1000 and max(len(w) for w in line.split()) > 1000:
            too_long += 1
            continue
        nc = CITATION_REGEX.sub("", line)
        low = nc.lower()
        js += "javascript" in low
        policy += policy_re.search(low) is not None
        if "javascript" in low or policy_re.search(low) or not nc.endswith(END_PUNCTUATION) or nc.endswith("..."):
            continue
        if len(line.split()) < 3:
            continue
        kept += 1
        sentences += max(1, len(H._SENT_END_RE.findall(nc)))
    n = len(lines)
    return {"n_lines": n, "kept_lines_frac": H._r(kept / n) if n else 0.0, "n_sentences": sentences,
            "javascript_lines_frac": H._r(js / n) if n else 0.0, "policy_lines_frac": H._r(policy / n) if n else 0.0,
            "too_long_word_lines": too_long}


@pytest.mark.shared_data
def test_c4_and_fineweb_line_values_equal_the_definitions(shared_data):
    """C4's line values (policy phrases found by substring search, blank lines dropped by ``filter``) and FineWeb's
    equal the line-by-line definitions on real texts, with policy, javascript and citation lines mixed in."""
    extra = "\nWe use cookies to improve this site [1].\nEnable JavaScript to view the Terms of Use, please.\n"
    n_policy = 0
    for t in _texts(shared_data)[::2]:
        for text in (t, t + extra):
            c = H.c4_signals(text)
            ref = _c4_reference(text)
            assert {k: c[k] for k in ref} == ref
            n_policy += ref["policy_lines_frac"] > 0
            lines = [ln for ln in text.split("\n") if ln.strip() != ""]
            if lines:
                fw = H.fineweb_signals(text)
                assert fw["char_dup_ratio"] == H._r(find_duplicates(lines)[1] / max(len(text.replace("\n", "")), 1))
                assert fw["line_punct_ratio"] == H._r(sum(ln.endswith(H._FINEWEB_STOP_CHARS) for ln in lines)
                                                      / len(lines))
    assert n_policy > 10


def _odd_texts(texts: list[str]) -> list[str]:
    """Real texts with unusual white space, apostrophes, combining marks and scripts put in."""
    return [texts[0] + " don't rock'n'roll ’tis o’ x' 'y", "\u3000".join(texts[1].split(" ")),
            texts[2].replace("\n", "\u2028", 5) + "\x85x\xa0y", texts[3].replace(". ", ".\x1c", 3),
            "हिन्दी भाषा का इतिहास। বাংলা ভাষা ภาษาไทย 中文，标点。 ²³ ½ Ⅻ a² -- x", "", " \n\t ", "a", "(a)",
            "word\x1fword - 12 \x1e (x)", "x'y'z a'' ''b a’’b", "!!! ... ?? a!b a.b.c"]


@pytest.mark.shared_data
def test_word_table_from_the_chunks_equals_the_table_of_the_split_words(shared_data):
    """``_WordTable.of_text`` (words of the distinct white-space chunks, expanded) gives the ids (first-seen
    order), distinct words, lengths and count of ``_WordTable(split_words(text))``, and ``alpha_chunks`` the
    number of white-space chunks with a letter, on real texts and their prose views."""
    texts = _texts(shared_data)
    texts += _odd_texts(texts)
    n_mixed = 0
    for t in texts:
        want = H._WordTable(H.split_words(t))
        got = H._WordTable.of_text(t)
        assert got.uniq == want.uniq, t[:80]
        assert got.ids.tolist() == want.ids.tolist() and got.lens.tolist() == want.lens.tolist(), t[:80]
        assert got.n_words == want.n_words == len(got.ids)
        if got.chunk_ids is not None:
            chunks = t.split()
            assert got.alpha_chunks() == sum(any(c.isalpha() for c in w) for w in chunks)
            n_mixed += not got.chunk_alpha.all()
        for flags in (H.has_alpha_flags, H.non_symbol_flags):
            assert got.per_word(flags).tolist() == want.per_word(flags).tolist() == [
                bool(flags([w])[0]) for w in H.split_words(t)]
    assert n_mixed > 50  # chunks that are not letters only (split by the regex) are tested


def _split_prose_reference(text: str, cut: bool = False) -> tuple[str, dict]:
    """``split_prose`` with every span replaced by ``re.sub`` and a function counting the spans."""
    counts = dict.fromkeys(("n_code_blocks", "code_chars", "n_math", "math_chars", "table_rows", "n_inline_code",
                            "inline_code_chars"), 0)

    def count(key_n, key_c, repl):
        def f(m):
            counts[key_n] += 1
            counts[key_c] += len(m.group(0))
            return repl(m.group(0)) if callable(repl) else repl
        return f

    prose = H._FENCE_RE.sub(count("n_code_blocks", "code_chars", "\n"), text)
    m = H._FENCE_OPEN_RE.search(prose) if cut else None
    if m is not None:
        counts["n_code_blocks"] += 1
        counts["code_chars"] += len(prose) - m.start()
        prose = prose[:m.start()] + "\n"
    prose = H._DISPLAY_MATH_RE.sub(count("n_math", "math_chars", "\n"), prose)
    prose = H._INLINE_MATH_RE.sub(count("n_math", "math_chars", "x"), prose)
    prose = re.sub(r"(`+)[^`\n]+?\1", count("n_inline_code", "inline_code_chars", H.inline_code_word), prose)
    counts["table_rows"] = len(H._TABLE_ROW_RE.findall(prose))
    prose = H._TABLE_ROW_RE.sub("", prose)
    return re.sub(r"\n{3,}", "\n\n", prose).strip(), counts


@pytest.mark.shared_data
def test_split_prose_equals_the_substitution_reference(shared_data):
    """The prose view (inline code spans replaced through ``re.split``) and its counts equal those of plain
    ``re.sub`` calls, on real texts with code, inline code (runs of one and more backticks) and tables."""
    texts = _texts(shared_data)[::2]
    texts += ["Use `a` and ``b`c`` or ```x``` then `unclosed and `c`.\n| a | b |\n|---|---|\n$x$ `$y$`",
              "```py\nprint(1)\n```\ntext `code` more `code` and `other`\n```\nopen block",
              "``", "`", "a``b", "`x`", "``x``y``", "\n`\n`\n"]
    n_inline = 0
    for t in texts:
        for cut in (False, True):
            assert H.split_prose(t, cut=cut) == _split_prose_reference(t, cut=cut), t[:80]
        n_inline += H.split_prose(t)[1]["n_inline_code"] > 0
    assert n_inline >= 3


@pytest.mark.shared_data
def test_label_lines_equal_the_line_by_line_definition(shared_data):
    """``_kept_lines`` (at most four words by a bounded split) equals the label-line rule read line by line."""
    def kept(line: str) -> bool:
        s = line.strip()
        return not (s and (len(s.split()) <= H._LABEL_MAX_WORDS or s.startswith(H._LIST_MARKS)
                           or H._VERSION_NOTE_RE.match(s) is not None))

    extra = ["a b c d", "a b c d e", " a  b\tc d ", "- item with many words here", "New in version 2.0 of it all",
             "• ttl <boolean> Retrieves the value", "", "   ", "one", "Changed in version 3.1: the default is now x."]
    for t in _texts(shared_data)[::2] + ["\n".join(extra)]:
        lines = H.split_prose(t)[0].split("\n")
        assert H._kept_lines(lines) == [kept(ln) for ln in lines]


def test_c4_sentences_of_lines_ending_with_quotes():
    """Kept lines that end with a quote and hold no sentence end count one sentence (``max(1, ...)``), those
    with sentence ends count them; the sentence ends are found over the kept lines joined."""
    text = ('He said "stop it now"\nShe wrote \'so it goes\'\nThis ends well. "Yes!" he said.\n'
            'Run "it." and "that?" too\'\nOne two three... four five six.\nA line without end\n'
            'Last one ends here!"\nmid. dots.here and "end."')
    c = H.c4_signals(text)
    ref = _c4_reference(text)
    assert {k: c[k] for k in ref} == ref
    assert ref["n_sentences"] >= 8
