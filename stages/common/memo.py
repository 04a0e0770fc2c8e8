"""Per-worker hand-over of values computed on a document's text to a later step of the same pipeline.

A signal step that computed something another step needs again (the web quality step needs the classic
heuristics, the language prediction and the English fastText score of the very texts earlier steps
measured) leaves it in a :class:`TextMemo` keyed by document id, together with the text it was computed
on. The later step takes it back only when the document's text is still exactly that text; otherwise (a
step in between changed the text, another worker, a memo overflow) it computes the value itself. So the
stored signals are the same with and without the hand-over. Only texts that are the document's own text
object are kept (no copies), at most ``max_items`` of them, oldest out first; each entry is read once.

A memo keeps nothing unless a reader opened it: the reading step calls :meth:`TextMemo.open` when its
``run`` starts (a generator pipeline starts its last step first, before any document reaches the earlier
ones) and :meth:`TextMemo.close` when it ends, so a pipeline without that step holds no texts.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any


# the longest text a memo of values measured on a whole text keeps: the web quality step reads the first
# ``assay.stages.web.quality.TEXT_MAX_CHARS`` (20,000) characters, so only texts that short are its whole text
# (tests/web/test_signal_reuse.py checks the two agree)
WHOLE_TEXT_MAX_CHARS = 20_000


class TextMemo:
    def __init__(self, max_items: int = 1024, max_chars: int | None = None):
        self.max_items = int(max_items)
        self.max_chars = max_chars
        self._items: dict[str, tuple[str, Any]] = {}
        self._readers = 0

    def open(self) -> None:
        """A reader is running in this process: keep what writers put."""
        self._readers += 1

    def close(self) -> None:
        """That reader is done; with no reader left, forget everything."""
        self._readers = max(0, self._readers - 1)
        if not self._readers:
            self._items.clear()

    @property
    def active(self) -> bool:
        return self._readers > 0

    def put(self, doc_id: str, text: str, value: Any) -> None:
        """Remember ``value`` computed on ``text`` (the document's text) for ``doc_id`` (only while a
        reader is open)."""
        if not self._readers or (self.max_chars is not None and len(text) > self.max_chars):
            return
        items = self._items
        items.pop(doc_id, None)
        items[doc_id] = (text, value)
        if len(items) > self.max_items:
            del items[next(iter(items))]

    def take(self, doc_id: str, text: str) -> Any | None:
        """The value remembered for ``doc_id`` when it was computed on exactly ``text``, else ``None``.
        Removes the entry."""
        hit = self._items.pop(doc_id, None)
        if hit is None:
            return None
        seen, value = hit
        return value if (seen is text or seen == text) else None

    def pop(self, doc_id: str) -> tuple[str, Any] | None:
        """``(text, value)`` remembered for ``doc_id`` (the caller checks the text itself), else ``None``.
        Removes the entry."""
        return self._items.pop(doc_id, None)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class ByText:
    """Values a step computed from a document's text alone, by a digest of that text (BLAKE2b, 128 bits), so that a
    later document of the same worker with exactly the same text (another copy of a page) gets the same values without
    the work: 324 of the 2,625 documents of bench_e2e's 5x corpus repeat the text of an earlier document of their task.
    Only texts of at most ``max_chars`` characters are kept (the copies are short pages; digesting every long page
    would cost more than its rare copy saves), at most ``max_items`` of them, oldest out first; the step clears it when
    its run ends. Holds no text, only digests and the values."""

    def __init__(self, max_items: int = 1024, max_chars: int = WHOLE_TEXT_MAX_CHARS):
        self.max_items = int(max_items)
        self.max_chars = int(max_chars)
        self._items: dict[tuple, Any] = {}

    def key(self, text: str, *extra) -> tuple | None:
        """The key of ``text`` (with ``extra``, the other inputs the values depend on), or ``None`` where the text is
        not kept (too long, not a string)."""
        if not isinstance(text, str) or len(text) > self.max_chars:
            return None
        return (blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), *extra)

    def get(self, key: tuple | None) -> Any | None:
        return None if key is None else self._items.get(key)

    def put(self, key: tuple | None, value: Any) -> None:
        if key is None:
            return
        items = self._items
        items[key] = value
        if len(items) > self.max_items:
            del items[next(iter(items))]

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
