"""Shared-data helpers for bench_pdf.py: which PDFs/pages are born-digital with a clean text layer."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_PDF = Path(os.environ.get("ASSAY_SHARED_DATA", REPO.parent / "shared" / "data")) / "pdf"


def inventory() -> list[dict]:
    with open(SHARED_PDF / "PDF_INVENTORY.tsv") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    for r in rows:
        r["rel"] = r["file"][2:] if r["file"].startswith("./") else r["file"]
        r["path"] = str(SHARED_PDF / r["rel"])
    return [r for r in rows if os.path.exists(r["path"])]


def born_digital_files() -> list[str]:
    """Born-digital files with a text layer (the router's known bad layers excluded)."""
    from assay.stages.pdf.train_router import BAD_TEXT_LAYER

    return [r["path"] for r in inventory()
            if r["kind_guess"].startswith("born-digital") and r["rel"] not in BAD_TEXT_LAYER]


FILLER_RE = re.compile(r"lorem ipsum|blind text|blindtext", re.IGNORECASE)


def clean_pages(min_words: int = 50, filler: bool = False) -> list[tuple[str, int, str, dict]]:
    """(file, page, text, features) for born-digital pages with no glyph problems and >= min_words.

    ``filler=False`` leaves out typesetting filler (lorem ipsum / LaTeX blindtext: the same paragraph
    repeated on purpose, which the repetition detectors rightly flag); ``filler=True`` returns only those.
    """
    from assay.stages.pdf._pdfdoc import extract_document

    out = []
    for path in born_digital_files():
        d = extract_document(path)
        if "texts" not in d:
            continue
        for i, (t, f) in enumerate(zip(d["texts"], d["features"])):
            if "error" in f or f["words"] < min_words:
                continue
            if f["repl"] + f["pua"] + f["ctrl"] > 0 or f["garb"] >= 0.2 or f["inv_ratio"] > 0:
                continue
            if bool(FILLER_RE.search(t)) != filler:
                continue
            out.append((path, i, t, f))
    return out
