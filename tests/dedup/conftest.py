"""Fixtures for dedup tests: deterministic synthetic corpora (random words; Jaccard semantics do
not depend on the language)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from datatrove.data import Document

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def vocabulary(n: int = 5000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def random_text(rng: random.Random, n_words: int, vocab: list[str]) -> str:
    words = [rng.choice(vocab) for _ in range(n_words)]
    # sentences and paragraphs so that normalisation has something to do
    out, sent = [], []
    for i, w in enumerate(words):
        sent.append(w)
        if len(sent) >= 12:
            out.append(" ".join(sent).capitalize() + ".")
            sent = []
            if i % 60 == 0:
                out.append("\n\n")
    if sent:
        out.append(" ".join(sent) + ".")
    return " ".join(out)


def edit_words(rng: random.Random, text: str, fraction: float, vocab: list[str]) -> str:
    words = text.split(" ")
    k = max(1, int(len(words) * fraction))
    for i in rng.sample(range(len(words)), k):
        words[i] = rng.choice(vocab) + "x"
    return " ".join(words)


def doc(text: str, doc_id: str, **metadata) -> Document:
    return Document(text=text, id=doc_id, metadata=dict(metadata))


@pytest.fixture(scope="session")
def corpus() -> SimpleNamespace:
    return SimpleNamespace(vocabulary=vocabulary, vocab=vocabulary(), random_text=random_text, edit_words=edit_words, doc=doc)
