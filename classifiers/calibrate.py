"""Calibration of classifier scores into token-weighted percentiles, Nemotron-CC style ensemble
buckets (0..19) and named tiers.

All functions are plain numpy functions of stored values so that thresholds survive model changes
and re-tiering never re-runs a model:

* ``build_table(scores, tokens)``: from a reference sample (scores of a model on reference web
  text plus each document's token count) build a monotone score -> percentile table.
* ``percentile(name_or_table, scores)``: score -> fraction of reference *tokens* in documents
  scoring below it (ties count one half), in [0, 1].
* ``ensemble_bucket(percentiles, weights)``: combine per-model percentiles into ints 0..19.
* ``tier_of_bucket(bucket, tiers)``: bucket -> tier name from recipe data ``{name: [lo, hi]}``.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np

MODELS_DIR = Path(__file__).resolve().parent / "models"
N_BUCKETS = 20


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


def bucket_of_percentile(pct, n_buckets: int = N_BUCKETS) -> np.ndarray:
    """Percentile in [0, 1] -> int bucket 0..n_buckets-1 (NaN -> -1)."""
    p = np.asarray(pct, dtype=np.float64)
    b = np.floor(np.clip(p, 0.0, 1.0) * n_buckets).clip(0, n_buckets - 1)
    return np.where(np.isnan(p), -1, b).astype(np.int16)


def ensemble_bucket(percentiles: Mapping[str, np.ndarray], weights: Mapping[str, float] | None = None,
                    *, method: str = "max", n_buckets: int = N_BUCKETS) -> np.ndarray:
    """Combine per-model percentiles into one int bucket 0..n_buckets-1 per document.

    ``method="max"`` (Nemotron-CC): each model's percentile is bucketed and the highest bucket wins;
    models with weight 0 are ignored. ``method="mean"``: weighted mean of the percentiles, then bucketed.
    Missing values (NaN) are ignored per document; a document with no value at all gets -1.
    """
    names = [n for n in percentiles if weights is None or float(weights.get(n, 0.0)) > 0]
    if not names:
        raise ValueError("ensemble_bucket: no model with a positive weight")
    mat = np.vstack([np.asarray(percentiles[n], dtype=np.float64).ravel() for n in names])
    present = ~np.isnan(mat)
    if method == "max":
        b = np.where(present, np.floor(np.clip(mat, 0, 1) * n_buckets).clip(0, n_buckets - 1), -1)
        return b.max(axis=0).astype(np.int16)
    if method == "mean":
        w = np.array([1.0 if weights is None else float(weights[n]) for n in names])[:, None]
        ww = np.where(present, w, 0.0)
        num = np.where(present, mat, 0.0) * ww
        den = ww.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = num.sum(axis=0) / den
        return bucket_of_percentile(np.where(den > 0, avg, np.nan), n_buckets)
    raise ValueError(f"unknown method {method!r} (max|mean)")


def _check_tiers(tiers: Mapping[str, list]) -> list[tuple[str, int, int]]:
    spans = []
    for name, (lo, hi) in tiers.items():
        lo, hi = int(lo), int(hi)
        if lo > hi:
            raise ValueError(f"tier {name!r}: lo {lo} > hi {hi}")
        spans.append((name, lo, hi))
    spans.sort(key=lambda t: t[1])
    for (a, _, ahi), (b, blo, _) in zip(spans, spans[1:]):
        if blo <= ahi:
            raise ValueError(f"tiers {a!r} and {b!r} overlap")
    return spans


def tier_of_bucket(bucket, tiers: Mapping[str, list]):
    """Bucket(s) -> tier name(s). ``tiers`` maps a name to an inclusive ``[lo, hi]`` bucket range
    (recipe data, e.g. ``{"high": [16, 19], "medium": [8, 15], "low": [0, 7]}``).
    A scalar gives ``str | None``; an array gives an object array with ``None`` where no tier matches."""
    spans = _check_tiers(tiers)
    b = np.asarray(bucket)
    out = np.full(b.shape, None, dtype=object)
    for name, lo, hi in spans:
        out[(b >= lo) & (b <= hi)] = name
    if out.ndim == 0:
        return out.item()
    return out


def sampling_weight(tier, weights: Mapping[str, float], *, default: float = 0.0):
    """Tier name(s) -> sampling weight (repetition factor) from recipe data; unknown/None -> ``default``."""
    t = np.asarray(tier, dtype=object)
    out = np.array([float(weights.get(x, default)) if x is not None else default for x in t.ravel()],
                   dtype=np.float64).reshape(t.shape)
    return out.item() if out.ndim == 0 else out


DEFAULT_TIERS = {"high": [16, 19], "medium_high": [12, 15], "medium": [8, 11], "medium_low": [4, 7], "low": [0, 3]}
DEFAULT_TIER_WEIGHTS = {"high": 2.0, "medium_high": 1.5, "medium": 1.0, "medium_low": 0.5, "low": 0.0}
