"""Dedup benchmark corpus: real text with injected near-duplicates at known edit levels, plus the
exact all-pairs Jaccard ground truth (no assay dedup logic here except the shingler used to
define the truth)."""

from __future__ import annotations

import glob
import gzip
import html
import json
import os
import random
import re
import sysconfig
from pathlib import Path

_TAG_RE = re.compile(r"<[^>]+>")
_WORD_RE = re.compile(r"[A-Za-z]+")

BOILERPLATE = [
    "This website uses cookies to improve your experience. By continuing to browse the site you agree to our "
    "use of cookies and our privacy policy. You can change your cookie settings at any time. Subscribe to our "
    "newsletter to receive the latest news, offers and updates directly in your inbox every week.",
    "Copyright 2024 All rights reserved. Terms of use. Privacy. Contact us. About us. Careers. Advertise with us. "
    "Follow us on social media for more stories like this one, and share this article with your friends.",
    "Related articles: You may also like these stories from our editors. Read more about this topic in our "
    "archive, or sign up for a free account to save articles and comment on them.",
]


def shared_data_dir() -> Path:
    env = os.environ.get("ASSAY_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _strip_html(s: str) -> str:
    return html.unescape(_TAG_RE.sub(" ", s))


def real_texts(max_chars: int = 40_000) -> list[tuple[str, str]]:
    """(source, text) of real documents: ../shared/data pages and documents when present, plus text
    every machine has (Python's pydoc topics, package METADATA descriptions, licence files)."""
    out: list[tuple[str, str]] = []
    root = shared_data_dir()
    if root.is_dir():
        for p in sorted((root / "html/readability/readability/GoldStandard").glob("*.txt")):
            out.append((f"readability/{p.name}", _strip_html(p.read_text(errors="replace"))))
        gt = root / "html/scrapinghub/ground-truth.json"
        if gt.exists():
            for k, v in sorted(json.loads(gt.read_text()).items()):
                out.append((f"scrapinghub/{k[:12]}", v.get("articleBody") or ""))
        lee = root / "quality/news_lee_background/lee_background.cor"
        if lee.exists():
            out += [(f"lee/{i}", line) for i, line in enumerate(lee.read_text(errors="replace").splitlines())]
        for p in sorted((root / "quality/dolma_ccnet_head").glob("*.jsonl.gz")):
            with gzip.open(p, "rt") as f:
                out += [(f"ccnet/{p.name}/{i}", json.loads(line)["text"]) for i, line in enumerate(f)]
    try:
        from pydoc_data.topics import topics

        out += [(f"pydoc/{k}", v) for k, v in sorted(topics.items())]
    except ImportError:
        pass
    site = sysconfig.get_paths()["purelib"]
    for p in sorted(glob.glob(os.path.join(site, "*.dist-info", "METADATA"))):
        body = Path(p).read_text(errors="replace").split("\n\n", 1)
        if len(body) == 2:
            out.append((f"metadata/{Path(p).parent.name}", body[1]))
    for p in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(p):
            out.append((f"license/{os.path.basename(p)}", Path(p).read_text(errors="replace")))
    # long documents are cut into chunks so that the corpus has many documents of web-page size
    docs = []
    for src, text in out:
        text = text.strip()
        for k in range(0, len(text), max_chars):
            chunk = text[k : k + max_chars]
            if len(chunk.split()) >= 50:
                docs.append((f"{src}#{k // max_chars}", chunk))
    return docs


def _edit_words(rng: random.Random, text: str, fraction: float, vocab: list[str]) -> str:
    words = text.split(" ")
    k = max(1, round(len(words) * fraction))
    for i in rng.sample(range(len(words)), min(k, len(words))):
        words[i] = rng.choice(vocab)
    return " ".join(words)


def _reorder_paragraphs(rng: random.Random, text: str) -> str:
    paras = [p for p in re.split(r"\n\s*\n|\n", text) if p.strip()]
    if len(paras) < 2:
        sents = re.split(r"(?<=[.!?])\s+", text)
        paras = sents if len(sents) > 1 else paras
    rng.shuffle(paras)
    return "\n\n".join(paras)


def build_corpus(seed: int = 0, variant_fraction: float = 0.45) -> list[dict]:
    """Documents {id, text, kind, base}: real texts plus near-duplicate variants of a random subset
    (word edits of 5-30%, reordered paragraphs, appended boilerplate, and combinations)."""
    rng = random.Random(seed)
    base = real_texts()
    vocab = sorted({w.lower() for _, t in base[:200] for w in _WORD_RE.findall(t)})
    docs = [{"id": f"o{i:05d}", "text": t, "kind": "original", "base": i, "src": s} for i, (s, t) in enumerate(base)]
    kinds = ["edit05", "edit10", "edit15", "edit20", "edit25", "edit30", "reorder", "boilerplate", "edit05+boilerplate"]
    for i, (_, t) in enumerate(base):
        if rng.random() >= variant_fraction:
            continue
        kind = rng.choice(kinds)
        v = t
        for part in kind.split("+"):
            if part.startswith("edit"):
                v = _edit_words(rng, v, int(part[4:]) / 100, vocab)
            elif part == "reorder":
                v = _reorder_paragraphs(rng, v)
            elif part == "boilerplate":
                v = v + "\n\n" + rng.choice(BOILERPLATE)
        docs.append({"id": f"v{i:05d}", "text": v, "kind": kind, "base": i})
    rng.shuffle(docs)
    return docs


def scale_corpus(docs: list[dict], copies: int, seed: int = 0) -> list[dict]:
    """``copies`` copies of the corpus; copy c > 0 has every word remapped by its own random
    vocabulary permutation: same duplicate structure and statistics, no cross-copy duplicates."""
    out = list(docs)
    vocab = sorted({w.lower() for d in docs for w in _WORD_RE.findall(d["text"])})
    for c in range(1, copies):
        rng = random.Random(seed * 1000 + c)
        perm = list(vocab)
        rng.shuffle(perm)
        mapping = dict(zip(vocab, perm))
        sub = lambda m: mapping.get(m.group(0).lower(), m.group(0))  # noqa: E731
        out += [{"id": f"c{c}_{d['id']}", "text": _WORD_RE.sub(sub, d["text"]), "kind": d["kind"], "base": d["base"]}
                for d in docs]
    return out


def true_pairs(texts: list[str], shingle_sets: list[set[int]], min_jaccard: float = 0.3) -> dict[tuple[int, int], float]:
    """Exact Jaccard of every pair of documents with Jaccard >= min_jaccard (sparse all-pairs)."""
    import numpy as np
    from scipy.sparse import csr_matrix

    vocab: dict[int, int] = {}
    rows, cols = [], []
    for i, s in enumerate(shingle_sets):
        for h in s:
            rows.append(i)
            cols.append(vocab.setdefault(h, len(vocab)))
    n = len(texts)
    x = csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, len(vocab)))
    inter = (x @ x.T).tocoo()
    sizes = np.array([len(s) for s in shingle_sets], dtype=np.float64)
    out = {}
    m = inter.row < inter.col
    for i, j, v in zip(inter.row[m], inter.col[m], inter.data[m]):
        union = sizes[i] + sizes[j] - v
        jac = v / union if union else 0.0
        if jac >= min_jaccard:
            out[(int(i), int(j))] = float(jac)
    return out
