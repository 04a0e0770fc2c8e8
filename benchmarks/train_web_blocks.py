"""Train the line classifier of ``assay.stages.web.blocks`` (writes ``stages/web/block_weights.json``).

    .venv/bin/python benchmarks/train_web_blocks.py [--out stages/web/block_weights.json]

Training data: the **train split** (benchmarks/splits.py, grouped by site) of scrapinghub and readability,
never ir_chaos (research use only: no shipped model is trained on it). Each non-empty line of the
main-content text before the classifier is labelled main content when its normalised text is in the
gold text (lines of up to 4 words must equal a whole gold line, longer ones must be a substring of it).
Model: L2-regularised logistic regression on standardised features, full-batch gradient descent in
numpy, lines weighted by their length (a long lost paragraph costs more than a lost "Home").
The threshold is chosen on the **dev split** of scrapinghub and readability (mean page token F1).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _web_data import gold_split, token_prf  # noqa: E402

from assay.stages.web import blocks  # noqa: E402
from assay.stages.web.extract import extract_html_detailed, extract_marked_lines  # noqa: E402

_TOK = re.compile(r"\w+")
CORPORA = ("scrapinghub", "readability")


def _norm(s: str) -> str:
    return " ".join(t.lower() for t in _TOK.findall(s))


def labelled_lines(pages) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y, w = [], [], []
    for p in pages:
        lines = extract_marked_lines(p.html)
        if len(lines) < 3:
            continue
        gold_norm = " " + _norm(p.gold) + " "
        gold_lines = {_norm(g) for g in p.gold.split("\n")}
        for ln, f in zip(lines, blocks.line_features(lines)):
            t = _norm(blocks.strip_marks(ln))
            if not t:
                continue
            lab = (t in gold_lines) if len(t.split()) <= 4 else (f" {t} " in gold_norm)
            X.append(f)
            y.append(1.0 if lab else 0.0)
            w.append(np.log1p(len(t)))
    return np.array(X), np.array(y), np.array(w)


def fit(X, y, w, l2=1e-2, steps=3000, lr=0.5):
    mu = X.mean(0)
    sd = X.std(0)
    mu[0], sd[0] = 0.0, 1.0
    sd[sd < 1e-9] = 1.0
    Z = (X - mu) / sd
    Z[:, 0] = 1.0
    beta = np.zeros(X.shape[1])
    ws = w / w.sum()
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ beta)))
        g = Z.T @ (ws * (p - y)) + l2 * np.r_[0.0, beta[1:]]
        beta -= lr * g
    return beta, mu, sd


def dev_f1(model: dict, pages) -> float:
    f = []
    for p in pages:
        out = extract_html_detailed(p.html, block_filter=False)[0] if model is None else None
        if model is not None:
            blocks.load_weights.cache_clear()
            out = _extract_with(model, p.html)
        f.append(token_prf(out, p.gold)[2])
    return statistics.mean(f)


def _extract_with(model: dict, html: str) -> str:
    orig = blocks.load_weights
    blocks.load_weights = lambda path=None: model  # type: ignore[assignment]
    try:
        return extract_html_detailed(html, block_filter=True)[0]
    finally:
        blocks.load_weights = orig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(blocks.__file__).with_name("block_weights.json")))
    args = ap.parse_args()
    train = [p for c in CORPORA for p in gold_split(c, "train")]
    dev = [p for c in CORPORA for p in gold_split(c, "dev")]
    X, y, w = labelled_lines(train)
    print(f"train: {len(train)} pages, {len(y)} lines, {y.mean():.3f} main content")
    beta, mu, sd = fit(X, y, w)
    base = {"weights": beta.tolist(), "mean": mu.tolist(), "std": sd.tolist(), "n_features": X.shape[1],
            "trained_on": "train split of scrapinghub + readability (benchmarks/splits.py)",
            "n_train_pages": len(train), "n_train_lines": int(len(y))}
    print(f"dev F1 without classifier: {dev_f1(None, dev):.4f}")
    best = None
    for thr in (0.2, 0.3, 0.4, 0.5, 0.6):
        model = dict(base, threshold=thr)
        f = dev_f1(model, dev)
        print(f"dev F1 threshold {thr}: {f:.4f}")
        if best is None or f > best[0] + 1e-4:
            best = (f, thr)
    base["threshold"] = best[1]
    base["dev_f1"] = round(best[0], 4)
    Path(args.out).write_text(json.dumps(base, indent=1) + "\n")
    print(f"wrote {args.out} (threshold {best[1]})")


if __name__ == "__main__":
    main()
