import random

import numpy as np
import pytest

from assay.stages.dedup.config import DedupConfig, dedup_phase_tasks
from assay.stages.dedup.shingles import (
    band_hashes,
    compute_signatures,
    detection_probability,
    jaccard,
    normalize_for_dedup,
    shingle_document,
)


def test_normalisation_case_punctuation_whitespace_numbers_accents():
    a = normalize_for_dedup("Hello,   World!\n\tCafé №1999 — done.")
    b = normalize_for_dedup("hello world cafe №2024 done")
    assert a.split() == b.split()
    assert shingle_document("Hello,   World! Café").exact == shingle_document("hello world cafe").exact
    assert shingle_document("hello world").exact != shingle_document("hello there world").exact
    cfg = DedupConfig(lowercase=False)
    assert normalize_for_dedup("ABC", cfg) == b"ABC"


def test_empty_and_short_documents():
    for t in ("", "   ", "!!! ...", "\x00\x01"):
        d = shingle_document(t)
        assert d.hashes.size == 0 and d.exact is None and d.kind == ""
    short = shingle_document("two words")
    assert short.hashes.size == 1 and short.kind == "word"
    sb = compute_signatures(["", "two words", "two words", "other two"])
    assert list(sb.n_shingles) == [0, 1, 1, 1]
    assert (sb.sigs[1] == sb.sigs[2]).all() and not (sb.sigs[1] == sb.sigs[3]).all()
    assert (sb.sigs[0] == np.iinfo(sb.sigs.dtype).max).all()


def test_auto_shingle_kind_by_script():
    zh = "今天天气很好我们一起去公园散步然后在湖边吃午饭下午回家休息晚上看电影" * 3
    assert shingle_document(zh).kind == "char"
    assert shingle_document("Un texte français avec des accents, très normal.").kind == "word"
    assert shingle_document("Обычный русский текст с пробелами между словами.").kind == "word"
    # near-duplicate CJK text is detected by char shingles
    zh2 = zh.replace("电影", "电视", 1)
    assert jaccard(zh, zh2) > 0.8
    assert jaccard(zh, zh2, DedupConfig(shingle="word")) < 0.5


def test_invalid_config_rejected():
    with pytest.raises(ValueError):
        DedupConfig(shingle="bytes")
    with pytest.raises(ValueError):
        DedupConfig(keep_policy="newest")
    with pytest.raises(ValueError):
        DedupConfig.coerce({"bandz": 3})
    assert DedupConfig.coerce({"bands": 20, "rows": 5}).num_perm == 100
    assert dedup_phase_tasks({"bands": 20})["buckets"] == 21


@pytest.mark.parametrize("hash_bits", [32, 64])
def test_signature_estimates_true_jaccard(hash_bits, corpus):
    cfg = DedupConfig(hash_bits=hash_bits)
    rng = random.Random(3)
    vocab = corpus.vocab
    errs = []
    for i in range(60):
        base = corpus.random_text(rng, 400, vocab)
        other = corpus.edit_words(rng, base, rng.uniform(0.02, 0.3), vocab)
        j = jaccard(base, other, cfg)
        sb = compute_signatures([base, other], cfg)
        errs.append(float(np.mean(sb.sigs[0] == sb.sigs[1])) - j)
    errs = np.array(errs)
    # 112 permutations: std of the estimator <= sqrt(0.25/112) ~ 0.047
    assert abs(errs.mean()) < 0.02
    assert np.sqrt((errs**2).mean()) < 0.06


def test_signatures_deterministic_and_batch_independent(corpus):
    rng = random.Random(5)
    vocab = corpus.vocab
    texts = [corpus.random_text(rng, rng.randint(1, 6000), vocab) for _ in range(30)]
    together = compute_signatures(texts).sigs
    alone = np.vstack([compute_signatures([t]).sigs for t in texts])
    assert (together == alone).all()
    other_seed = compute_signatures(texts, DedupConfig(seed=2)).sigs
    assert not (other_seed == together).all()
    bh = band_hashes(together)
    assert bh.shape == (30, 14) and bh.dtype == np.uint64


def test_s_curve():
    assert detection_probability(0.8, 14, 8) == pytest.approx(1 - (1 - 0.8**8) ** 14)
    p = detection_probability(np.array([0.3, 0.7, 0.9]), 14, 8)
    assert p[0] < 0.01 and 0.3 < p[1] < 0.7 and p[2] > 0.99


def test_exact_hash_matches_batch_value():
    from assay.stages.dedup.shingles import exact_hash

    texts = ["Hello, World! Café", "plain ascii text here", "", "日本語のテキスト"]
    batch = compute_signatures(texts)
    assert [exact_hash(t) for t in texts] == batch.exact
    assert exact_hash("Hello world cafe") == exact_hash("hello,   WORLD — café")


@pytest.mark.shared_data
def test_long_text_is_tokenised_in_pieces_with_the_same_hashes_and_bounded_memory(shared_data):
    """A text longer than ``_TOKEN_PIECE`` bytes (a 2 MB documentation page) is tokenised in pieces cut at
    white space: the same token hashes, starts and lengths as one pass over the whole buffer (the reference,
    ``_piece_token_hashes``), including a token longer than a piece, and the signature of the text no longer
    holds eight bytes per byte of it several times at once (one pass: about 80 MiB for 2 MB)."""
    import tracemalloc

    from assay.stages.dedup import shingles as sh

    path = shared_data / "quality/news_lee_background/lee_background.cor"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    text = path.read_text(encoding="utf-8", errors="replace")
    big = (text + "\n") * (2_000_000 // len(text) + 1) + "z" * (sh._TOKEN_PIECE + 10) + " tail\ttokens\n"
    buf = normalize_for_dedup(big)
    assert len(buf) > 3 * sh._TOKEN_PIECE
    got = sh._token_hashes(buf)
    want = sh._piece_token_hashes(np.frombuffer(buf, dtype=np.uint8), 0)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)
    raw = big.encode()
    for g, w in zip(sh._token_hashes(raw), sh._piece_token_hashes(np.frombuffer(raw, dtype=np.uint8), 0)):
        assert np.array_equal(g, w)
    compute_signatures([big[:1000]])  # powers cached, modules loaded
    tracemalloc.start()
    try:
        sig = compute_signatures([big])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sig.n_shingles[0] > 300_000
    assert peak < 40 * 2**20, peak / 2**20
