"""Labelled data for a code corruption classifier (fastText, trained by ``classifiers/``).

``build_corruption_dataset(out_path, ...)`` writes JSONL rows ``{"text", "label", "language",
"corruption", "source"}`` with ``label`` in ``{"clean", "corrupt"}``: clean files come from the
TheAlgorithms archives in ``shared/data/code/clean_multilang``; each corrupt row is a clean file
after one synthetic corruption (truncation, shuffled lines, mixed encodings, injected binary junk,
deleted indentation, random token swaps). Deterministic for a given seed. Files are split into
train/test by a hash of the file id (``split`` field) so near-copies never straddle the split.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import tarfile
from pathlib import Path
from typing import Callable, Iterator

import xxhash

__all__ = ["CORRUPTIONS", "corrupt", "iter_clean_files", "build_corruption_dataset"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _truncate(text: str, rng: random.Random) -> str:
    cut = rng.randint(len(text) // 5, max(len(text) // 5 + 1, len(text) * 3 // 5))
    # cut mid-token, the way a broken download/copy ends
    return text[:cut]


def _shuffle_lines(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    rng.shuffle(lines)
    return "\n".join(lines)


def _mixed_encoding(text: str, rng: random.Random) -> str:
    # mojibake: part of the file re-decoded as cp1252/latin-1, plus stray replacement chars
    lines = text.split("\n")
    for i in range(len(lines)):
        if rng.random() < 0.35:
            b = (lines[i] + " \u00e9\u00fc\u00df\u2013\u201c\u00bb").encode("utf-8")
            lines[i] = b.decode(rng.choice(["cp1252", "latin-1"]), errors="replace")
        elif rng.random() < 0.1:
            lines[i] += "\ufffd\ufffd"
    return "\n".join(lines)


def _binary_junk(text: str, rng: random.Random) -> str:
    junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(64, 512))).decode("latin-1")
    pos = rng.randint(0, len(text))
    return text[:pos] + junk + text[pos:]


def _delete_indentation(text: str, rng: random.Random) -> str:
    return "\n".join(l.lstrip() for l in text.split("\n"))


def _token_swaps(text: str, rng: random.Random) -> str:
    toks = [m for m in _TOKEN.finditer(text)]
    if len(toks) < 4:
        return text[::-1]
    spans = [m.span() for m in toks]
    n_swaps = max(2, len(spans) // 8)
    pieces = {i: text[s:e] for i, (s, e) in enumerate(spans)}
    for _ in range(n_swaps):
        a, b = rng.randrange(len(spans)), rng.randrange(len(spans))
        pieces[a], pieces[b] = pieces[b], pieces[a]
    out, last = [], 0
    for i, (s, e) in enumerate(spans):
        out.append(text[last:s])
        out.append(pieces[i])
        last = e
    out.append(text[last:])
    return "".join(out)


CORRUPTIONS: dict[str, Callable[[str, random.Random], str]] = {
    "truncation": _truncate,
    "shuffled_lines": _shuffle_lines,
    "mixed_encoding": _mixed_encoding,
    "binary_junk": _binary_junk,
    "deleted_indentation": _delete_indentation,
    "token_swaps": _token_swaps,
}


def corrupt(text: str, kind: str, seed: int = 0) -> str:
    """Apply one named corruption deterministically."""
    return CORRUPTIONS[kind](text, random.Random(f"{kind}:{seed}:{len(text)}"))


def iter_clean_files(clean_dir: str | os.PathLike, *, min_chars: int = 200, max_chars: int = 100_000) -> Iterator[tuple[str, str, str]]:
    """``(file_id, language, text)`` for source files in the TheAlgorithms ``*.tar.zst`` archives."""
    import zstandard

    from assay.stages.code.langid import detect_language

    for arch in sorted(Path(clean_dir).glob("*.tar.zst")):
        with open(arch, "rb") as fh:
            tf = tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(fh), mode="r|")
            for m in tf:
                if not m.isfile() or os.path.basename(m.name).upper().startswith(("LICENSE", "COPYING")):
                    continue
                data = tf.extractfile(m).read()
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if not (min_chars <= len(text) <= max_chars):
                    continue
                lang, _ = detect_language(m.name, text)
                yield f"{arch.name.split('.')[0]}/{m.name.lstrip('./')}", lang or "unknown", text


def _to_line(text: str) -> str:
    # fastText reads one example per line
    return text.replace("\r", " ").replace("\n", " \\n ")


def build_corruption_dataset(out_path: str | os.PathLike, *, clean_dir: str | os.PathLike | None = None,
                             seed: int = 0, corrupt_per_clean: float = 1.0, test_fraction: float = 0.1,
                             max_files: int | None = None, one_line: bool = False) -> dict:
    """Write the labelled JSONL; returns counts ``{"clean", "corrupt", "train", "test", "by_corruption"}``.

    ``clean_dir`` defaults to ``$ASSAY_SHARED_DATA/code/clean_multilang`` or ``../shared/data/...``.
    ``one_line=True`` replaces newlines by `` \\n `` tokens (fastText input format).
    """
    if clean_dir is None:
        base = os.environ.get("ASSAY_SHARED_DATA") or str(Path(__file__).resolve().parents[3] / "shared" / "data")
        clean_dir = Path(base) / "code" / "clean_multilang"
    rng = random.Random(seed)
    kinds = sorted(CORRUPTIONS)
    counts = {"clean": 0, "corrupt": 0, "train": 0, "test": 0, "by_corruption": {k: 0 for k in kinds}}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as out:
        for n, (fid, lang, text) in enumerate(iter_clean_files(clean_dir)):
            if max_files is not None and n >= max_files:
                break
            split = "test" if (xxhash.xxh64_intdigest(fid.encode(), seed=seed) / 2**64) < test_fraction else "train"
            rows = [("clean", None, text)]
            k = int(corrupt_per_clean) + (1 if rng.random() < corrupt_per_clean % 1 else 0)
            for _ in range(k):
                kind = rng.choice(kinds)
                bad = corrupt(text, kind, seed=rng.randrange(2**31))
                if bad != text:
                    rows.append(("corrupt", kind, bad))
            for label, kind, t in rows:
                rec = {"text": _to_line(t) if one_line else t, "label": label, "language": lang, "corruption": kind,
                       "source": fid, "split": split}
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                counts[label] += 1
                counts[split] += 1
                if kind:
                    counts["by_corruption"][kind] += 1
    return counts
