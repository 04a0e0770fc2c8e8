import pytest

from assay.classifiers.text import Normalization, n_tokens, normalize


def test_normalize_basic():
    assert normalize("Hello,  WORLD\n\t2024!") == "hello , world 0000 !"
    assert normalize("abc", Normalization(lowercase=False, digits=None)) == "abc"
    assert normalize(None) == "" and normalize(b"bytes") == ""  # never raises
    assert "\n" not in normalize("a\nb\r\nc")
    assert normalize("x\ud800y") == "xy"  # lone surrogate dropped


def test_truncation_and_structure():
    long = "word " * 10_000
    out = normalize(long, Normalization(max_chars=100))
    assert len(out) <= 100 and out.endswith("word")
    code = "def f():\n    return 1\n"
    out = normalize(code, Normalization(lowercase=False, structure=True))
    assert "NLx" in out and "INDb" in out
    assert normalize("def f():\nreturn 1", Normalization(lowercase=False, structure=True)) != out


def test_n_tokens():
    assert n_tokens("a b  c\n d") == 4
    assert n_tokens("") == 0


def test_fast_punct_split_matches_reference_regex():
    import random
    import re

    from assay.classifiers.text import _PUNCT, _WS, split_punct

    rng = random.Random(0)
    alphabet = "ab Z_09\t\n\u00a0\u2028\x1c\x00\x7f.,;:!?()[]{}<>\"'`~@#$%^&*-+=|\\/é’“”—…«»、。中Ω\u0301"
    cases = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    cases += ["naïve café’s “quote” — ok…", "x=1; y=[2, 3]", ""]
    for c in cases:
        assert " ".join(split_punct(c).split()) == _WS.sub(" ", _PUNCT.sub(r" \1 ", c)).strip(), repr(c)
    assert re.fullmatch(r"[^\s]+( [^\s]+)*", normalize("a,b")) is not None


def test_prose_view_keeps_the_running_text_of_a_real_page(shared_data):
    """A real Turku English document (train split): menu and list lines leave the prose view, sentences stay; a text
    whose lines all qualify, or none do, is its own view (the same object)."""
    from assay.classifiers.data import build_source
    from assay.classifiers.text import prose_view

    docs = build_source({"builder": "turku_lines", "path": "quality/turku_linewise_text_quality_annotations.tar.zst",
                         "langs": ["en"], "unit": "doc", "split": "train", "split_dataset": "turku_quality"},
                        shared_data)[0]
    mixed = [d.text for d in docs if any(len(ln.split()) < 3 for ln in d.text.splitlines())
             and any(len(ln.split()) >= 10 for ln in d.text.splitlines())]
    assert len(mixed) > 10
    for text in mixed[:20]:
        view = prose_view(text, 10)
        lines = view.splitlines()
        assert lines and all(len(ln.split()) >= 10 for ln in lines)
        assert lines == [ln for ln in text.splitlines() if len(ln.split()) >= 10]  # in page order, nothing else
    short = "Home\nAbout us\nContact"
    assert prose_view(short, 10) is short
    long = "This sentence has enough words in it to count as running prose for the view.\n" * 2
    assert prose_view(long, 10) is long


def _reference_normalize(text, norm):
    """``normalize``'s definition, step by step in its documented order (the reference the shared-step
    implementation must equal)."""
    import unicodedata

    from assay.classifiers.text import _DIGITS, _PUNCT, _structure_tokens

    if not isinstance(text, str):
        return ""
    if norm.max_chars and len(text) > 4 * norm.max_chars:
        text = text[: 4 * norm.max_chars]
    if norm.nfkc:
        text = unicodedata.normalize("NFKC", text)
    text = text.encode("utf-8", "ignore").decode("utf-8")
    if norm.structure:
        text = _structure_tokens(text)
    if norm.lowercase:
        text = text.lower()
    if norm.digits is not None:
        text = _DIGITS.sub(norm.digits, text)
    if norm.split_punct:
        text = _PUNCT.sub(r" \1 ", text)
    text = " ".join(text.split())
    if norm.max_chars and len(text) > norm.max_chars:
        cut = text.rfind(" ", 0, norm.max_chars)
        text = text[: cut if cut > norm.max_chars // 2 else norm.max_chars]
    return text


@pytest.mark.shared_data
def test_normalize_all_equals_one_normalize_per_normalisation(shared_data):
    """``normalize_all`` (the steps shared by several normalisations run once; digits replaced after the spaces
    around punctuation) gives exactly ``normalize``'s definition (``_reference_normalize``) per normalisation: the web model's ensemble members on real
    text already normalised by the model (what ``QualityModel._positive_probs`` gives them) and on raw real pages
    (many scripts, digits of other scripts, decomposed accents), for every mix of the options, a digit replacement
    holding punctuation included (computed apart), and non-string input."""
    import itertools

    from assay.classifiers.text import normalize_all

    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))[::4]
    raw = [p.read_text(encoding="utf-8", errors="replace") for p in gold]
    raw += ["١٢٣ ٤٥ abc!! x=1;", "e\u0301t\u00e9 \uff21\uff22 \ufb01n", "word, " * 3000, "", "   \n\t "]
    base = Normalization(lowercase=True, digits=None, max_chars=8000, nfkc=True, split_punct=False)
    members = [Normalization(**{**base.to_dict(), **o}) for o in
               ({"digits": "0", "split_punct": True}, {"split_punct": True}, {"digits": "0"})]
    texts = raw + [normalize(t, base) for t in raw]
    norms = [Normalization(lowercase=lc, digits=d, max_chars=mc, nfkc=nf, split_punct=sp, structure=st)
             for lc, d, mc, nf, sp, st in itertools.product((True, False), (None, "0", "#"), (0, 50, 8000),
                                                           (True, False), (True, False), (False, True))]
    for t in texts:
        assert normalize_all(t, members) == [_reference_normalize(t, n) for n in members]
    for t in texts[::5]:
        want = [_reference_normalize(t, n) for n in norms]
        assert normalize_all(t, norms) == want
        assert [normalize(t, n) for n in norms] == want
    assert normalize_all(None, members) == ["", "", ""]
    assert normalize(None) == ""


@pytest.mark.shared_data
def test_normalize_all_of_long_texts_equals_the_definition(shared_data):
    """Texts much longer than ``max_chars`` are normalised up to a cut first (``_prefix_cut``): on long real pages
    (ir_chaos gold texts joined, readability pages' HTML), with the shipped models' normalisations and every mix of
    options at small ``max_chars``, and on texts built so that the cut falls next to a capital sigma, a combining
    accent, a CR LF, a ligature or a run of white space (the prefix line then too short: the whole text is used),
    the lines equal ``normalize``'s definition."""
    import itertools
    import json

    from assay.classifiers import text as T
    from assay.classifiers.model import MODELS_DIR

    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))
    joined = ["\n".join(p.read_text(encoding="utf-8", errors="replace") for p in gold[i:i + 12])
              for i in range(0, min(len(gold), 240), 12)]
    pages = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted((shared_data / "html/readability/readability/input").glob("*.html"))[:30]]
    assert len(joined) >= 10 and len(pages) >= 10
    cards = [json.loads(p.read_text()) for p in sorted(MODELS_DIR.glob("*.card.json"))]
    shipped = list(dict.fromkeys(Normalization.from_dict(c["normalization"]) for c in cards if "normalization" in c))
    assert len(shipped) >= 4
    edge = []
    for mc in (40, 4000):
        at = int(T._PREFIX_FACTOR * mc)
        for tail in ("Σ ΟΔΟΣ", " \u0301e", "\r\nx", " \ufb01n", "\n    indented", " " * 3 * mc + "z " * mc):
            edge.append(("ΑΒΓ δεΣ " * (at // 8 + 1))[:at] + tail + " rest of the text" * (mc // 8))
        # a cut anywhere would be wrong here: the accents after ``at`` reorder and compose with the "a" before it,
        # inside the first max_chars characters of the line (the lone surrogates are dropped, no space to cut at)
        edge.append("x" * (mc - 2) + "\ud800" * (at - mc - 2) + "a" + "\u0301" * 3 + "\u0323" + " rest" * mc)
    small = [Normalization(lowercase=lc, digits=d, max_chars=mc, nfkc=True, split_punct=sp, structure=st)
             for lc, d, mc, sp, st in itertools.product((True, False), (None, "0", "#"), (40, 300), (True, False),
                                                        (False, True))]
    for t in joined + pages + edge:
        for norms in (shipped, small):
            assert T.normalize_all(t, norms) == [_reference_normalize(t, n) for n in norms]
    long_ws = "word " * 10 + " " * 40_000 + "end " * 5000  # the prefix line is too short: the whole text
    assert T.normalize_all(long_ws, shipped) == [_reference_normalize(long_ws, n) for n in shipped]


@pytest.mark.shared_data
def test_line_from_known_equals_normalize_of_the_text(shared_data):
    """``line_from_known`` (the multilingual web model's line read from the stem model's, cut shorter; what the web
    quality step takes from the quality_scores step) is ``normalize``'s definition (``_reference_normalize``) of the
    text, on real pages (many scripts) cut to lengths around the bounds where the two normalisations read the whole
    text and where their prefix cuts begin; and ``None`` where the shorter one reads less than the whole text or the
    normalisations differ by more than ``max_chars``."""
    import random

    from assay.classifiers.text import line_from_known

    gold = sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))[::3]
    pages = [p.read_text(encoding="utf-8", errors="replace") for p in gold]
    long = "\n".join(pages)
    rng = random.Random(7)
    texts = pages + [long[s: s + n] for s in range(0, 50_000, 7_001)
                     for n in (4_000, 5_000, 5_001, 9_999, 10_001, 15_999, 16_000, 16_001, rng.randint(1, 20_000))]
    texts += ["", "   ", "١٢٣ abc", "word, " * 2000]
    stem = Normalization(lowercase=True, digits="0", max_chars=8000, nfkc=True, split_punct=True)
    web_ml = Normalization(lowercase=True, digits="0", max_chars=4000, nfkc=True, split_punct=True)
    other = Normalization(lowercase=False, digits="0", max_chars=4000, nfkc=True, split_punct=True)
    unbounded = Normalization(lowercase=True, digits="0", max_chars=0, nfkc=True, split_punct=True)
    used = 0
    for t in texts:
        known = {stem: normalize(t, stem)}
        got = line_from_known(web_ml, len(t), known)
        if len(t) > 4 * web_ml.max_chars:
            assert got is None
        else:
            used += 1
            assert got == _reference_normalize(t, web_ml)
        assert line_from_known(other, len(t), known) is None
        assert line_from_known(stem, len(t), known) is known[stem]
        if len(t) <= 16_000:
            assert line_from_known(web_ml, len(t), {unbounded: normalize(t, unbounded)}) == _reference_normalize(t, web_ml)
    assert used > 30
    assert line_from_known(web_ml, 10, None) is None and line_from_known(web_ml, 10, {}) is None
