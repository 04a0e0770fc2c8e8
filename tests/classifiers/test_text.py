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
