from __future__ import annotations

import math

import pytest

from assay.stages.output.tokens import ESTIMATE_METHOD, count_method, count_tokens, estimate_tokens


def test_estimate_formula_by_utf8_width():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10  # 40 ASCII chars / 4
    assert estimate_tokens("abc") == 1  # rounded up
    assert estimate_tokens("привет") == 3  # 6 two-byte chars / 2
    assert estimate_tokens("中文字符") == 4  # 4 three-byte chars * 1
    assert estimate_tokens("😀😀") == 3  # 2 four-byte chars * 1.5
    assert estimate_tokens("ab привет 中文 😀") == math.ceil(4 / 4 + 6 / 2 + 2 * 1.0 + 1.5)


def test_estimate_is_the_default_and_named():
    texts = ["hello world", "中文", ""]
    assert count_tokens(texts) == [estimate_tokens(t) for t in texts]
    assert count_method(None) == ESTIMATE_METHOD


def test_exact_counts_match_the_tokenizer(bpe_tokenizer):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bpe_tokenizer))
    texts = ["hello world, this is a test", "привет мир", "中文字符", "", "def f(x):\n    return x\n"]
    got = count_tokens(texts, str(bpe_tokenizer))
    assert got == [len(tok.encode(t).ids) for t in texts]
    assert got[3] == 0 and all(g > 0 for i, g in enumerate(got) if i != 3)
    m = count_method(str(bpe_tokenizer))
    assert m.startswith("exact:tokenizer.json:") and len(m.split(":")[2]) == 16


def test_missing_tokenizer_file_raises(tmp_path):
    with pytest.raises(Exception):
        count_tokens(["x"], str(tmp_path / "missing.json"))
