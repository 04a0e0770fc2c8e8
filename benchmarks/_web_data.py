"""Data loading and metrics shared by benchmarks/bench_web.py and tests (no assay logic here)."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from pathlib import Path

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def shared_data_dir() -> Path:
    env = os.environ.get("ASSAY_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def html_pages(root: Path | None = None) -> list[tuple[str, str]]:
    """All (name, html) pages under html/ (readability inputs and scrapinghub pages)."""
    root = root or shared_data_dir()
    out = []
    for p in sorted((root / "html/readability/readability/input").glob("*.html")):
        out.append((f"readability/{p.stem}", p.read_text(encoding="utf-8", errors="replace")))
    for p in sorted((root / "html/scrapinghub/html").glob("*.html.gz")):
        raw = gzip.decompress(p.read_bytes())
        out.append((f"scrapinghub/{p.name[:-8]}", _decode(raw)))
    return out


def _decode(raw: bytes) -> str:
    from assay.stages.web.warc import decode_html_bytes

    try:
        return decode_html_bytes(raw)[0]
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


def pre_lines(html: str) -> list[str]:
    """Non-empty lines of every outermost <pre> in the page (DOM text, <br> as newline, trailing
    whitespace and NBSP normalised)."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    doc = tree.document
    lines: list[str] = []
    if doc is None:
        return lines
    for pre in doc.query_selector_all("pre").values():
        if pre.parent is not None and hasattr(pre.parent, "closest") and pre.parent.closest("pre") is not None:
            continue
        for br in pre.query_selector_all("br").values():
            br.replace_with(tree.create_text_node("\n"))
        text = (pre.text or "").replace("\u00a0", " ").replace("\r\n", "\n").replace("\r", "\n")
        lines.extend(ln.rstrip() for ln in text.split("\n") if ln.strip())
    return lines


def code_fidelity(reference_lines: list[str], output: str) -> tuple[int, int]:
    """(verbatim hits, total): a reference line counts when it is a whole line of the output,
    leading indentation included."""
    out = Counter(ln.rstrip() for ln in output.replace("\u00a0", " ").split("\n"))
    hits = 0
    for ln in reference_lines:
        if out[ln] > 0:
            out[ln] -= 1
            hits += 1
    return hits, len(reference_lines)


def gold_pages(root: Path | None = None) -> list[tuple[str, str, str]]:
    """(name, html, gold_text) for readability GoldStandard and scrapinghub articleBody."""
    from resiliparse.extract.html2text import extract_plain_text

    root = root or shared_data_dir()
    out = []
    rd = root / "html/readability/readability"
    for g in sorted((rd / "GoldStandard").glob("*.txt")):
        inp = rd / "input" / (g.stem + ".html")
        if not inp.exists():
            continue
        gold_html = g.read_text(encoding="utf-8", errors="replace")
        gold = extract_plain_text(gold_html, main_content=False, alt_texts=False) if "<" in gold_html else gold_html
        out.append((f"readability/{g.stem}", inp.read_text(encoding="utf-8", errors="replace"), gold))
    sh = root / "html/scrapinghub"
    truth = json.loads((sh / "ground-truth.json").read_text())
    for key, rec in sorted(truth.items()):
        p = sh / "html" / f"{key}.html.gz"
        if p.exists() and rec.get("articleBody"):
            out.append((f"scrapinghub/{key}", _decode(gzip.decompress(p.read_bytes())), rec["articleBody"]))
    return out


def token_prf(pred: str, gold: str) -> tuple[float, float, float]:
    """Bag-of-words precision, recall, F1 (lower-cased \\w+ tokens)."""
    p = Counter(t.lower() for t in _WORD_RE.findall(pred))
    g = Counter(t.lower() for t in _WORD_RE.findall(gold))
    overlap = sum((p & g).values())
    np_, ng = sum(p.values()), sum(g.values())
    prec = overlap / np_ if np_ else (1.0 if not ng else 0.0)
    rec = overlap / ng if ng else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1
