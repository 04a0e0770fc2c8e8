"""Near-duplicate detection on real news text (../shared/data) with injected duplicates."""

from __future__ import annotations

import random

import pytest

from assay.stages.dedup import find_near_duplicates, jaccard


@pytest.mark.shared_data
def test_real_news_with_injected_duplicates(shared_data):
    path = shared_data / "quality/news_lee_background/lee_background.cor"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    originals = [line for line in path.read_text(errors="replace").splitlines() if len(line.split()) >= 60]
    assert len(originals) > 100
    rng = random.Random(0)
    variants, base_of = [], []
    for i in rng.sample(range(len(originals)), 40):
        words = originals[i].split(" ")
        kind = len(variants) % 3
        if kind == 0:  # one word substituted
            j = rng.randrange(len(words))
            words[j] = words[j][::-1] + "x"
            v = " ".join(words)
        elif kind == 1:  # sentences reordered (shingles only change at the joins)
            sents = originals[i].split(". ")
            v = ". ".join(sents[1:] + sents[:1])
        else:  # boilerplate appended
            v = originals[i] + " Subscribe to our newsletter for more news."
        variants.append(v)
        base_of.append(i)
    texts = originals + variants
    ids = find_near_duplicates(texts)
    n = len(originals)
    strong = [(k, b) for k, b in enumerate(base_of) if jaccard(variants[k], originals[b]) >= 0.8]
    assert len(strong) >= 25
    found = sum(ids[n + k] == ids[b] for k, b in strong)
    assert found / len(strong) >= 0.95
    # no two unrelated originals merged unless they really overlap
    clusters: dict[int, list[int]] = {}
    for i in range(n):
        clusters.setdefault(ids[i], []).append(i)
    for members in clusters.values():
        for a in members[1:]:
            assert jaccard(originals[members[0]], originals[a]) >= 0.5
