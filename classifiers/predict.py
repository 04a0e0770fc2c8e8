"""Scoring with a trained web quality combiner (``classifiers/models/web_quality.json``): plain NumPy.

What the web quality step (``assay.stages.web.quality``) runs on every batch of pages, apart from training
(`assay.classifiers.combine`, which imports pydantic, yaml and the training data readers): a pool's workers
that score pages import this module only (about 3 MiB less resident memory each).
"""

from __future__ import annotations

import numpy as np

__all__ = ["predict_logistic", "rank_features", "fallback_design", "predict_fallback", "predict_combined"]


def predict_logistic(params: dict, X: np.ndarray) -> np.ndarray:
    z = ((X - np.asarray(params["mean"])) / np.asarray(params["std"])) @ np.asarray(params["coef"]) + params["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def rank_features(X: np.ndarray, quantiles: list[list[float]]) -> np.ndarray:
    """Empirical CDF of every column of ``X`` at its stored quantiles (linear between them, 0/1 outside)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty_like(X)
    for j, q in enumerate(quantiles):
        out[:, j] = np.interp(X[:, j], q, np.linspace(0.0, 1.0, len(q)))
    return out


def fallback_design(fb: dict, X: np.ndarray) -> np.ndarray:
    """The fallback's regression inputs from its raw features (``fb["features"]`` columns, in order): the raw
    values, followed by their ranks where the fallback stores ``rank_quantiles``."""
    X = np.asarray(X, dtype=np.float64)
    q = fb.get("rank_quantiles")
    return np.hstack([X, rank_features(X, q)]) if q else X


def predict_fallback(fb: dict, X: np.ndarray) -> np.ndarray:
    """P(good) of the fallback from its raw features (``fb["features"]`` columns, in order)."""
    return predict_logistic(fb, fallback_design(fb, X))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def predict_combined(comb: dict, X: np.ndarray, names: list[str]) -> np.ndarray:
    """P(good) of a combiner. Where a model covers the text's language (any ``*__covered`` feature > 0): the
    main regression, either over all features (``coef``) or, stacked (``main``), over a fallback's logit
    (``stack_fallback`` where the file has one, else ``fallback``) and the model features; where none does: the
    ``fallback`` (language-independent features only)."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, len(names))
    fb = comb.get("fallback")
    fb_p = predict_fallback(fb, X[:, [names.index(f) for f in fb["features"]]]) if fb else None
    main = comb.get("main")
    if main:
        sfb = comb.get("stack_fallback")
        sp = predict_fallback(sfb, X[:, [names.index(f) for f in sfb["features"]]]) if sfb else fb_p
        Z = np.hstack([_logit(sp)[:, None], X[:, [names.index(f) for f in main["inputs"][1:]]]])
        p = predict_logistic(main, Z)
    else:
        p = predict_logistic(comb, X)
    if fb:
        cov = [i for i, n in enumerate(names) if n.endswith("__covered")]
        uncovered = ~np.any(X[:, cov] > 0, axis=1) if cov else np.ones(len(X), dtype=bool)
        thr = float(comb.get("fallback_below_lid") or 0.0)
        if thr > 0 and "lid_score" in names:
            uncovered |= X[:, names.index("lid_score")] < thr
        p[uncovered] = fb_p[uncovered]
    return p
