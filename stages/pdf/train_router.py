"""Train the per-page OCR router.

    python -m assay.stages.pdf.train_router --data ../shared/data/pdf --out stages/pdf/models/router.json

Labels ("ocr" = the text layer is not usable and the page needs a VLM):

* real pages of ``PDF_INVENTORY.tsv``: ``image-only`` files -> ocr (pages with ink), ``born-digital``
  and ``no-text`` files -> text, except files with known bad text layers (``BAD_TEXT_LAYER``:
  caesar-shifted glyph maps, invisible or visible OCR layers over scans, broken Arabic cmaps,
  slides whose content is in images) -> ocr; ``SKIP`` files are left out;
* blank pages (no ink, no text) -> text (nothing to OCR);
* synthetic pages built with pymupdf from born-digital pages (seeded): ``scan`` (rendered at 60-150
  dpi, grey, noise, JPEG, image-only page), ``scan_ocr_layer`` (scan + invisible correct text,
  like ocrmypdf output), ``scan_garbage_layer`` (scan + invisible garbled text),
  ``scan_visible_layer`` (scan + visible garbled OCR text, like old newspapers), ``glyph_shift``
  (visible text with a shifted glyph map) -> ocr; ``logo`` (the born-digital page plus a small
  image) -> text.

The model is a standardised, class-balanced logistic regression fitted with numpy (L2, gradient
descent); the routing threshold is 0.5 (balanced classes), or, with ``--target-recall R``, the
largest score that keeps recall >= R on the training pages (tends to overfit; not the default).
Grouped cross-validation (folds by source file, synthetic pages stay with their source) gives
held-out recall/precision stored in the model's ``meta`` and printed.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import time

from assay.stages.pdf.routing import FEATURE_NAMES, RouterModel, page_vector

BAD_TEXT_LAYER = {
    "olmocr_gnarly/dolma-page-1.pdf", "olmocr_gnarly/olmo-page-1.pdf", "olmocr_gnarly/horribleocr.pdf",
    "olmocr_gnarly/newspaper.pdf", "olmocr_gnarly/handwriting_bad_ocr.pdf", "olmocr_gnarly/some_ocr1.pdf",
    "olmocr_gnarly/small_page_size.pdf", "olmocr_gnarly/most_content_in_image_form.pdf",
    "ocrmypdf_scanned/graph_ocred.pdf", "ocrmypdf_scanned/multipage.pdf",
    "pypdf_sample_files/015-arabic/habibi.pdf", "pypdf_sample_files/015-arabic/habibi-rotated.pdf",
    "pypdf_sample_files/015-arabic/habibi-oneline-cmap.pdf",
}
SKIP = {"olmocr_gnarly/ambiguous.pdf"}
MAX_REAL_PAGES_PER_FILE = 12
SYNTH_KINDS = ("scan", "scan_ocr_layer", "scan_garbage_layer", "scan_visible_layer", "glyph_shift", "logo")


def _garble(text: str, rng: random.Random, rate: float = 0.35) -> str:
    out = []
    pool = "il1|!;:.,'`~^rnmcoe0O8B&%$#"
    for ch in text:
        if ch.isalnum() and rng.random() < rate:
            out.append(rng.choice(pool))
        else:
            out.append(ch)
    return "".join(out)


def _shift(text: str) -> str:
    return "".join(chr(ord(c) - 1) if c.isalpha() and c.isascii() else c for c in text)


def _scan_pixmap(page, rng: random.Random):
    import numpy as np
    import pymupdf

    dpi = rng.choice([60, 72, 96, 120, 150])
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    a = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width].astype(np.int16)
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    a = a + nrng.normal(0, rng.choice([3, 8, 15]), a.shape).astype(np.int16)
    if rng.random() < 0.5:  # yellowed paper
        a = a - rng.randrange(5, 40)
    a = np.clip(a, 0, 255).astype(np.uint8)
    out = pymupdf.Pixmap(pymupdf.csGRAY, pix.width, pix.height, a.tobytes(), 0)
    return out


def synth_page(src_page, kind: str, rng: random.Random):
    """Return a one-page in-memory pymupdf Document derived from ``src_page``."""
    import pymupdf

    rect = src_page.rect
    out = pymupdf.open()
    if kind == "logo":
        out.insert_pdf(src_page.parent, from_page=src_page.number, to_page=src_page.number)
        p = out[0]
        pm = pymupdf.Pixmap(pymupdf.csRGB, 64, 64, bytes([rng.randrange(256)]) * (64 * 64 * 3), 0)
        w = rect.width * rng.uniform(0.08, 0.2)
        p.insert_image(pymupdf.Rect(rect.x1 - w - 20, 20, rect.x1 - 20, 20 + w), stream=pm.tobytes("png"))
        return out
    if kind == "glyph_shift":
        p = out.new_page(width=rect.width, height=rect.height)
        text = _shift(src_page.get_text())
        p.insert_textbox(pymupdf.Rect(36, 36, rect.width - 36, rect.height - 36), text, fontsize=rng.choice([8, 9, 10]))
        return out
    p = out.new_page(width=rect.width, height=rect.height)
    pix = _scan_pixmap(src_page, rng)
    p.insert_image(p.rect, stream=pix.tobytes("jpg", jpg_quality=rng.choice([40, 60, 80])))
    if kind in ("scan_ocr_layer", "scan_garbage_layer", "scan_visible_layer"):
        text = src_page.get_text()
        if kind != "scan_ocr_layer":
            text = _garble(text, rng)
        mode = 0 if kind == "scan_visible_layer" else 3
        p.insert_textbox(pymupdf.Rect(36, 36, rect.width - 36, rect.height - 36), text, fontsize=9, render_mode=mode)
    return out


def _group_of(path: str, n_folds: int) -> int:
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % n_folds


def build_dataset(data_dir: str, *, seed: int = 0, synth_per_file: int = 6, verbose: bool = False) -> list[dict]:
    """Rows: {file, page, kind, label (1 = ocr), vec}."""
    import pymupdf

    from assay.stages.pdf._pdfdoc import extract_page, scanner_hint

    rng = random.Random(seed)
    rows: list[dict] = []
    inv = os.path.join(data_dir, "PDF_INVENTORY.tsv")
    with open(inv) as fh:
        inventory = list(csv.DictReader(fh, delimiter="\t"))
    for r in inventory:
        rel = r["file"][2:] if r["file"].startswith("./") else r["file"]
        path = os.path.join(data_dir, rel)
        if rel in SKIP or not os.path.exists(path):
            continue
        try:
            d = pymupdf.open(path)
        except Exception:  # noqa: BLE001
            continue
        if d.needs_pass or d.page_count == 0:
            continue
        meta = d.metadata or {}
        scanner = scanner_hint(meta.get("producer") or "", meta.get("creator") or "")
        kind = r["kind_guess"]
        file_label = 1 if (kind.startswith("image-only") or rel in BAD_TEXT_LAYER) else 0
        idx = list(range(d.page_count))
        rng.shuffle(idx)
        idx = sorted(idx[:MAX_REAL_PAGES_PER_FILE])
        for i in idx:
            page = d[i]
            _, f = extract_page(page)
            label = file_label
            if f["chars"] == 0 and (f["ink"] or 0) < 0.0005:
                label = 0  # blank page
            rows.append({"file": rel, "page": i, "kind": "real", "label": label, "vec": page_vector(f, scanner)})
            # synthetic variants of born-digital pages with a usable text layer
        if file_label == 0 and kind.startswith("born-digital"):
            good = [i for i in idx if len(d[i].get_text().strip()) > 200]
            for j, i in enumerate(good[:synth_per_file]):
                for skind in rng.sample(SYNTH_KINDS, 3):
                    sd = synth_page(d[i], skind, rng)
                    _, f = extract_page(sd[0])
                    label = 0 if skind == "logo" else 1
                    sc = scanner or (skind.startswith("scan") and rng.random() < 0.3)
                    rows.append({"file": rel, "page": i, "kind": skind, "label": label, "vec": page_vector(f, sc)})
                    sd.close()
        d.close()
        if verbose:
            print(f"  {rel}: {sum(1 for x in rows if x['file'] == rel)} rows")
    return rows


def fit_logreg(X, y, *, l2: float = 1e-2, lr: float = 0.5, epochs: int = 3000, pos_weight: float | None = None):
    import numpy as np

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mean = X.mean(0)
    std = X.std(0)
    std[std < 1e-6] = 1.0
    Z = (X - mean) / std
    n, k = Z.shape
    w = np.zeros(k)
    b = 0.0
    if pos_weight is None:
        pos_weight = (n - y.sum()) / max(y.sum(), 1.0)
    sw = np.where(y > 0.5, pos_weight, 1.0)
    sw = sw / sw.mean()
    for _ in range(epochs):
        p = 1.0 / (1.0 + np.exp(-(Z @ w + b)))
        g = sw * (p - y)
        w -= lr * (Z.T @ g / n + l2 * w)
        b -= lr * g.mean()
    return RouterModel(w.tolist(), float(b), mean.tolist(), std.tolist(), 0.5)


def pick_threshold(model: RouterModel, X, y, target_recall: float = 0.97) -> float:
    scores = sorted(((model.score(x), t) for x, t in zip(X, y)), reverse=True)
    n_pos = sum(y)
    tp = 0
    thr = 0.5
    for s, t in scores:
        tp += t
        if tp >= target_recall * n_pos:
            thr = s
            break
    return float(max(0.05, min(0.95, thr - 1e-6)))


def pr(y_true, y_pred) -> dict:
    tp = sum(1 for a, b in zip(y_true, y_pred) if a and b)
    fp = sum(1 for a, b in zip(y_true, y_pred) if not a and b)
    fn = sum(1 for a, b in zip(y_true, y_pred) if a and not b)
    return {"recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
            "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0, "tp": tp, "fp": fp, "fn": fn}


def cross_validate(rows: list[dict], n_folds: int = 5, target_recall: float | None = None) -> dict:
    """Grouped CV by source file; returns overall and per-subset (real / synthetic) metrics."""
    preds: list[tuple[dict, int]] = []
    for k in range(n_folds):
        train = [r for r in rows if _group_of(r["file"], n_folds) != k]
        test = [r for r in rows if _group_of(r["file"], n_folds) == k]
        if not test or not train:
            continue
        m = fit_logreg([r["vec"] for r in train], [r["label"] for r in train])
        if target_recall:
            m.threshold = pick_threshold(m, [r["vec"] for r in train], [r["label"] for r in train], target_recall)
        for r in test:
            preds.append((r, 1 if m.score(r["vec"]) >= m.threshold else 0))
    out = {"all": pr([r["label"] for r, _ in preds], [p for _, p in preds])}
    real = [(r, p) for r, p in preds if r["kind"] == "real"]
    synth = [(r, p) for r, p in preds if r["kind"] != "real"]
    out["real"] = pr([r["label"] for r, _ in real], [p for _, p in real])
    out["synthetic"] = pr([r["label"] for r, _ in synth], [p for _, p in synth])
    out["n_pages"] = len(preds)
    out["n_ocr"] = sum(r["label"] for r, _ in preds)
    return out


def train(data_dir: str, out: str, *, seed: int = 0, target_recall: float | None = None, folds: int = 5,
          verbose: bool = True) -> dict:
    t0 = time.time()
    rows = build_dataset(data_dir, seed=seed, verbose=False)
    X = [r["vec"] for r in rows]
    y = [r["label"] for r in rows]
    cv = cross_validate(rows, folds, target_recall)
    model = fit_logreg(X, y)
    if target_recall:
        model.threshold = pick_threshold(model, X, y, target_recall)
    train_metrics = pr(y, [1 if model.score(x) >= model.threshold else 0 for x in X])
    model.meta = {
        "trained_on": "shared/data/pdf PDF_INVENTORY.tsv + synthetic scans (stages/pdf/train_router.py)",
        "seed": seed, "n_pages": len(rows), "n_ocr": int(sum(y)),
        "kinds": {k: sum(1 for r in rows if r["kind"] == k) for k in sorted({r["kind"] for r in rows})},
        "train": train_metrics, "grouped_cv": cv, "target_recall": target_recall,
        "seconds": round(time.time() - t0, 1),
    }
    model.save(out)
    if verbose:
        print(json.dumps({"out": out, "features": list(FEATURE_NAMES), **model.meta}, indent=1))
    return model.meta


def main(argv: list[str] | None = None) -> None:
    default_data = os.environ.get("ASSAY_SHARED_DATA")
    default_data = os.path.join(default_data, "pdf") if default_data else os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "shared", "data", "pdf")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--data", default=os.path.normpath(default_data))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "models", "router.json"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target-recall", type=float, default=None)
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args(argv)
    train(a.data, a.out, seed=a.seed, target_recall=a.target_recall, folds=a.folds)


if __name__ == "__main__":
    main()
