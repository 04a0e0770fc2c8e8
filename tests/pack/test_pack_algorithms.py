"""Best-fit decreasing and concatenate-and-split on their own: every token placed once, no sequence
over capacity, truncation only where a document is longer than a sequence."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from assay.stages.output.pack import (
    best_fit_decreasing,
    concat_split,
    pack_documents,
    pieces_stats,
    repeats_for,
)


def _coverage(bins, lengths, capacity):
    placed = defaultdict(list)
    for b in bins:
        assert sum(e - s for _, s, e in b) <= capacity
        for d, s, e in b:
            assert 0 <= s < e <= lengths[d]
            placed[d].append((s, e))
    for d, n in enumerate(lengths):
        spans = sorted(placed[d])
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "pieces of a document must tile it"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_token_placed_once(seed):
    rng = np.random.default_rng(seed)
    lengths = (rng.lognormal(5, 1.2, size=3000).astype(int) + 1).tolist()
    cap = 1025
    for bins in (best_fit_decreasing(lengths, cap), concat_split(lengths, cap)):
        _coverage(bins, lengths, cap)


def test_best_fit_truncates_only_long_documents_and_barely_pads():
    rng = np.random.default_rng(3)
    lengths = (rng.lognormal(5.0, 1.2, size=20000).astype(int) + 1).tolist()
    cap = 2049
    bf = best_fit_decreasing(lengths, cap)
    cs = concat_split(lengths, cap)
    bf_trunc, bf_pad = pieces_stats(bf, cap)
    cs_trunc, cs_pad = pieces_stats(cs, cap)
    long_docs = sum(n > cap for n in lengths)
    assert bf_trunc == long_docs  # the unavoidable ones only
    assert cs_trunc > 5 * bf_trunc
    assert bf_pad / (len(bf) * cap) < 0.01
    assert cs_pad < cap  # the baseline pads only its last sequence


def test_best_fit_is_best_fit():
    # 6 and 4 go together, 5 and 5 go together; first-fit in input order would not do that
    bins = best_fit_decreasing([5, 6, 5, 4], 10)
    assert sorted(sorted(e - s for _, s, e in b) for b in bins) == [[4, 6], [5, 5]]
    # a piece goes to the open sequence with the least room that still holds it
    bins = best_fit_decreasing([7, 6, 3], 10)
    assert sorted(sorted(e - s for _, s, e in b) for b in bins) == [[3, 7], [6]]
    with pytest.raises(ValueError):
        best_fit_decreasing([1], 0)


def test_pack_documents_layout():
    docs = [np.arange(1, 8, dtype=np.uint16), np.arange(10, 13, dtype=np.uint16), np.arange(20, 45, dtype=np.uint16)]
    b = pack_documents(docs, 10, algorithm="best_fit", pad_id=0, eos_added=False)
    assert b.tokens.shape == (4, 10)
    assert b.stats.truncated_documents == 1 and b.stats.documents == 3
    assert b.stats.content_tokens == 35 and b.stats.pad_tokens == 5 and b.stats.eos_tokens == 0
    for row, mask, ends in zip(b.tokens, b.loss_mask, b.segment_ends):
        assert ends[-1] == 10 and ends == sorted(ends)
        assert (row[~mask] == 0).all()
    flat = set(b.tokens[b.loss_mask].tolist())
    assert flat == set(np.concatenate(docs).tolist())
    with pytest.raises(ValueError):
        pack_documents(docs, 10, algorithm="first_fit")


def test_repeats_for_fractional_epochs():
    assert repeats_for("x", 0) == 0 and repeats_for("x", 3.0) == 3
    ids = [f"doc-{i}" for i in range(20000)]
    mean = sum(repeats_for(i, 2.25, 7) for i in ids) / len(ids)
    assert abs(mean - 2.25) < 0.02
    assert [repeats_for(i, 1.5, 1) for i in ids[:50]] == [repeats_for(i, 1.5, 1) for i in ids[:50]]
    assert [repeats_for(i, 1.5, 1) for i in ids[:200]] != [repeats_for(i, 1.5, 2) for i in ids[:200]]


def test_step_buffers_and_concat_carry(tmp_path, bpe_tokenizer):
    """Small buffers: best-fit packs each buffer on its own, concat carries the unfinished sequence over;
    either way every token arrives once and only the end of a buffer (best-fit) or the file (concat) pads."""
    from collections import Counter

    from datatrove.data import Document
    from tokenizers import Tokenizer

    from assay.stages.output.pack import PackShards, read_packed

    from .conftest import fake_run

    rng = np.random.default_rng(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    docs = [Document(text=" ".join(rng.choice(words, size=int(rng.integers(5, 400)))), id=f"d{i}",
                     metadata={"source": "web", "lang__code": "en", "tier": "high"}) for i in range(120)]
    run = fake_run(tmp_path / "run", docs, bpe_tokenizer)
    tk = Tokenizer.from_file(str(bpe_tokenizer))
    eos = tk.token_to_id("<|endoftext|>")
    want = Counter(t for d in docs for t in tk.encode(d.text).ids + [eos])
    for alg in ("best_fit", "concat"):
        out = tmp_path / alg
        step = PackShards([str(run / "output")], str(out), str(bpe_tokenizer), seq_len=127, algorithm=alg,
                          buffer_tokens=2000, batch_size=16)
        list(step.run(None, 0, 1))
        f = next(read_packed(out))
        got = Counter(f["tokens"][f["loss_mask"]].tolist())
        assert got == want, alg
        seqs = f["loss_mask"].reshape(-1, 128)
        stats = json.loads((out / "stats" / "pack-00000.json").read_text())
        if alg == "concat":
            assert seqs[:-1].all() and stats["pad_tokens"] == int((~seqs[-1]).sum())
        else:
            assert stats["truncated_documents"] == sum(len(tk.encode(d.text).ids) + 1 > 128 for d in docs)
        assert stats["documents"] == 120 and stats["sequences"] == len(seqs)
