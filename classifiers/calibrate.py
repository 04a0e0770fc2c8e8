"""Calibration of classifier scores into token-weighted percentiles.

Plain numpy functions of stored values, so thresholds survive model changes and re-tiering never
re-runs a model:

* ``build_table(scores, tokens)``: from a reference sample (scores of a model on reference web
  text plus each document's token count) build a monotone score -> percentile table.
* ``percentile(name_or_table, scores)``: score -> fraction of reference *tokens* in documents
  scoring below it (ties count one half), in [0, 1].

Ensemble buckets (0..19) and tiers are decisions, not calibration: they live once, in
``assay.stages.decisions.tiers`` (``bucket_of(frame, spec)``, ``tier_of(frame, spec)``), which the
pipeline, the benchmarks and the notebooks call with the recipe's ``decisions`` block.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np

MODELS_DIR = Path(__file__).resolve().parent / "models"


def build_table(scores, tokens=None, *, max_knots: int = 1001) -> dict:
    """Token-weighted empirical CDF of ``scores`` as a compact, strictly increasing table.

    ``tokens``: weight of each reference document (token count); ``None`` weights documents equally.
    Returns ``{"scores": [...], "pct": [...]}`` with knots (0, 0) and (1, 1) at the ends.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    w = np.ones_like(s) if tokens is None else np.asarray(tokens, dtype=np.float64).ravel()
    if s.shape != w.shape:
        raise ValueError("scores and tokens differ in length")
    keep = np.isfinite(s) & (w > 0)
    s, w = np.clip(s[keep], 0.0, 1.0), w[keep]
    if s.size == 0:
        raise ValueError("empty calibration reference sample")
    uniq, inv = np.unique(s, return_inverse=True)
    wsum = np.bincount(inv, weights=w)
    total = wsum.sum()
    below = np.concatenate(([0.0], np.cumsum(wsum)[:-1]))
    cdf = (below + 0.5 * wsum) / total  # mid-point at ties, strictly increasing in score
    if len(uniq) > max_knots:
        grid = np.linspace(cdf[0], cdf[-1], max_knots)
        idx = np.unique(np.searchsorted(cdf, grid, side="left").clip(0, len(cdf) - 1))
        uniq, cdf = uniq[idx], cdf[idx]
    xs, ys = list(uniq), list(cdf)
    if xs[0] > 0.0:
        xs.insert(0, 0.0)
        ys.insert(0, 0.0)
    if xs[-1] < 1.0:
        xs.append(1.0)
        ys.append(1.0)
    return {"scores": [float(x) for x in xs], "pct": [float(y) for y in ys],
            "n_docs": int(s.size), "n_tokens": float(total)}


def table_path(name: str, models_dir: str | Path | None = None) -> Path:
    p = Path(name)
    if p.suffix in (".ftz", ".bin"):
        return p.with_name(p.stem + ".calib.json")
    if p.suffix == ".json":
        return p
    return Path(models_dir or MODELS_DIR) / f"{name}.calib.json"


@lru_cache(maxsize=64)
def _load_table_cached(path: str) -> tuple[np.ndarray, np.ndarray]:
    with open(path) as f:
        t = json.load(f)
    return np.asarray(t["scores"], dtype=np.float64), np.asarray(t["pct"], dtype=np.float64)


def load_table(name_or_path: str | Path, models_dir: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(score knots, percentile knots) of a shipped model name (``"web"``), a model path or a table path."""
    path = table_path(str(name_or_path), models_dir)
    if not path.exists():
        raise FileNotFoundError(f"no calibration table at {path}; train the model with `python -m assay.classifiers train`")
    return _load_table_cached(str(path))


def percentile(name_or_table, scores, *, models_dir: str | Path | None = None) -> np.ndarray:
    """Map scores to token-weighted percentiles in [0, 1] on the model's reference sample.

    ``name_or_table``: shipped model name, model/table path, or a table dict from :func:`build_table`.
    NaN (or None) scores stay NaN. Monotone non-decreasing in the score.
    """
    if isinstance(name_or_table, Mapping):
        xs = np.asarray(name_or_table["scores"], dtype=np.float64)
        ys = np.asarray(name_or_table["pct"], dtype=np.float64)
    else:
        xs, ys = load_table(name_or_table, models_dir)
    s = np.asarray(scores, dtype=np.float64)
    out = np.interp(np.clip(s, 0.0, 1.0), xs, ys)
    return np.where(np.isnan(s), np.nan, out)
