"""Batched pass-through: a step that scores documents in batches and yields every document in order."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from datatrove.data import Document


def batched(data: Iterable[Document], size: int, score: Callable[[list[Document]], None],
            count: Callable[[], None] | None = None) -> Iterator[Document]:
    """Call `score(batch)` on every `size` documents (and on the rest), then yield them unchanged in order;
    `count()` is called once per document (a step's `documents` stat)."""
    batch: list[Document] = []
    for doc in data:
        if count is not None:
            count()
        batch.append(doc)
        if len(batch) >= size:
            score(batch)
            yield from batch
            batch = []
    if batch:
        score(batch)
        yield from batch
