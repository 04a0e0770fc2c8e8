import random


from assay.stages.dedup import find_near_duplicates, near_duplicates_of
from assay.stages.dedup.api import lsh_params


def test_lsh_params_matches_batch_default():
    assert lsh_params(0.8, 112) == (14, 8)
    b, r = lsh_params(0.9, 112)
    assert b * r <= 112 and r > 8


def test_find_near_duplicates_clusters(corpus):
    rng = random.Random(11)
    vocab = corpus.vocab
    a = corpus.random_text(rng, 500, vocab)
    b = corpus.random_text(rng, 500, vocab)
    texts = [
        a,
        corpus.edit_words(rng, a, 0.02, vocab),  # near duplicate of 0
        b,
        a.upper().replace(".", " !"),  # exact duplicate after normalisation
        corpus.edit_words(rng, b, 0.6, vocab),  # too different
        "",
        "",
    ]
    ids = find_near_duplicates(texts)
    assert len(ids) == len(texts)
    assert ids[0] == ids[1] == ids[3] == 0
    assert ids[2] == 2 and ids[4] == 4
    assert ids[5] == 5 and ids[6] == 6  # empty texts are not clustered
    assert find_near_duplicates([]) == []


def test_near_duplicates_of_query(corpus):
    rng = random.Random(12)
    vocab = corpus.vocab
    texts = [corpus.random_text(rng, 300, vocab) for _ in range(40)]
    query = corpus.edit_words(rng, texts[17], 0.02, vocab)
    hits = near_duplicates_of(query, texts, 0.8)
    assert [i for i, _ in hits] == [17]
    assert 0.8 < hits[0][1] <= 1.0
    assert near_duplicates_of(corpus.random_text(rng, 300, vocab), texts) == []
