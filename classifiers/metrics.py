"""Evaluation metrics implemented with numpy: ROC AUC, PR AUC (average precision), F1 at a
threshold, expected calibration error and a reliability table."""
from __future__ import annotations

import numpy as np


def _arrays(y_true, y_score) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true).astype(np.int8).ravel()
    s = np.asarray(y_score, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise ValueError(f"y_true and y_score differ in length: {y.shape} vs {s.shape}")
    if y.size and not np.isin(y, (0, 1)).all():
        raise ValueError("y_true must be binary (0/1)")
    return y, s


def _rankdata(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) with ties sharing the mean rank."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    # boundaries of runs of equal values
    bounds = np.flatnonzero(np.diff(xs)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(x)]))
    avg = (starts + ends + 1) / 2.0  # mean of 1-based ranks start+1..end
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def roc_auc(y_true, y_score) -> float:
    """Area under the ROC curve (Mann-Whitney U; ties count one half). NaN if one class is absent."""
    y, s = _arrays(y_true, y_score)
    n_pos = int(y.sum())
    n_neg = int(len(y) - n_pos)
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = _rankdata(s)
    return float((r[y == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def pr_auc(y_true, y_score) -> float:
    """Average precision (area under the precision-recall curve, step interpolation)."""
    y, s = _arrays(y_true, y_score)
    n_pos = int(y.sum())
    if n_pos == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    ys, ss = y[order], s[order]
    tp = np.cumsum(ys)
    fp = np.cumsum(1 - ys)
    # only evaluate at the last index of each run of tied scores
    last = np.r_[np.flatnonzero(np.diff(ss)), len(ss) - 1]
    tp, fp = tp[last], fp[last]
    precision = tp / (tp + fp)
    recall = tp / n_pos
    prev_recall = np.r_[0.0, recall[:-1]]
    return float(np.sum((recall - prev_recall) * precision))


def confusion_at(y_true, y_score, threshold: float) -> dict:
    y, s = _arrays(y_true, y_score)
    pred = s >= threshold
    tp = int(np.sum(pred & (y == 1)))
    fp = int(np.sum(pred & (y == 0)))
    fn = int(np.sum(~pred & (y == 1)))
    tn = int(np.sum(~pred & (y == 0)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    acc = (tp + tn) / len(y) if len(y) else float("nan")
    return {"threshold": float(threshold), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": precision, "recall": recall, "f1": f1, "accuracy": acc}


def f1_at(y_true, y_score, threshold: float = 0.5) -> float:
    return confusion_at(y_true, y_score, threshold)["f1"]


def best_f1_threshold(y_true, y_score) -> tuple[float, float]:
    """(threshold, f1) maximising F1 over the observed scores."""
    y, s = _arrays(y_true, y_score)
    n_pos = int(y.sum())
    if n_pos == 0 or len(y) == 0:
        return 0.5, 0.0
    order = np.argsort(-s, kind="mergesort")
    ys, ss = y[order], s[order]
    tp = np.cumsum(ys)
    fp = np.cumsum(1 - ys)
    last = np.r_[np.flatnonzero(np.diff(ss)), len(ss) - 1]
    tp, fp = tp[last], fp[last]
    f1 = 2 * tp / (tp + fp + n_pos)
    i = int(np.argmax(f1))
    return float(ss[last][i]), float(f1[i])


def reliability(y_true, y_score, n_bins: int = 10) -> list[dict]:
    """Equal-width bins over [0, 1]: count, mean predicted score, observed positive rate."""
    y, s = _arrays(y_true, y_score)
    idx = np.clip((s * n_bins).astype(int), 0, n_bins - 1)
    out = []
    for b in range(n_bins):
        m = idx == b
        n = int(m.sum())
        out.append({"lo": b / n_bins, "hi": (b + 1) / n_bins, "n": n,
                    "mean_score": float(s[m].mean()) if n else None,
                    "positive_rate": float(y[m].mean()) if n else None})
    return out


def ece(y_true, y_score, n_bins: int = 10) -> float:
    """Expected calibration error: sum over bins of |positive rate - mean score| weighted by bin size."""
    y, s = _arrays(y_true, y_score)
    if len(y) == 0:
        return float("nan")
    total = 0.0
    for b in reliability(y, s, n_bins):
        if b["n"]:
            total += b["n"] * abs(b["positive_rate"] - b["mean_score"])
    return float(total / len(y))


def evaluate(y_true, y_score, threshold: float = 0.5, n_bins: int = 10) -> dict:
    """All metrics of a model card in one dict."""
    y, s = _arrays(y_true, y_score)
    best_t, best_f1 = best_f1_threshold(y, s)
    return {
        "n": int(len(y)),
        "n_positive": int(y.sum()),
        "roc_auc": roc_auc(y, s),
        "pr_auc": pr_auc(y, s),
        "at_threshold": confusion_at(y, s, threshold),
        "best_f1": {"threshold": best_t, "f1": best_f1},
        "ece": ece(y, s, n_bins),
        "reliability": reliability(y, s, n_bins),
    }
