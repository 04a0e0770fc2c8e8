"""Learned combination of classifier scores and heuristic signals (a logistic regression, numpy only).

A *combiner recipe* (``kind: combiner``) names a feature function (``module:function`` taking
``(texts, models)`` and returning ``(X, feature names, languages)``), the models it may use with the
languages each covers, labelled sources (human labels, split with ``benchmarks/splits.py``: train and
dev only) and evaluation sets (the test splits). Training writes ``<name>.json`` (features,
standardisation, coefficients, model languages and a token-weighted percentile table on the
reference sample) and a model card (``<name>.card.json`` / ``.card.md``) with test ROC AUC per set and
per language beside the document-length baseline.

    python -m assay.classifiers train --config classifiers/configs/web_quality.yaml --out classifiers/models/

This module never imports datatrove; the feature function (in ``stages``) is imported by name at
training time only.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from assay.classifiers import metrics as M
from assay.classifiers.calibrate import build_table
from assay.classifiers.predict import (  # noqa: F401 (re-exported)
    _logit, fallback_design, predict_combined, predict_fallback, predict_logistic, rank_features,
)
from assay.classifiers.data import build_sources, default_data_root


class CombinerRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["combiner"]
    name: str
    description: str = ""
    label_source: str = "human"
    features: str  # "module:function"
    models: dict[str, list[str]] = Field(default_factory=dict)  # model -> languages it was trained on
    # models (of ``models``) that also train on rows this combiner fits on: model -> its training recipe (path relative
    # to this recipe's directory). Their feature on the fitting rows is cross-fitted: ``crossfit_folds`` models, each
    # trained by that recipe without the groups of one fold's rows that the model covers (the same folds as the
    # fallback's), score that fold only (``crossfit_model_logits``); the shipped model (trained on everything) scores
    # everything else
    crossfit_models: dict[str, str] = Field(default_factory=dict)
    labelled: list[dict]  # sources with their own labels (use split: [train, dev])
    eval_sets: dict[str, list[dict]] = Field(default_factory=dict)  # test splits; never trained on
    calibration: list[dict] = Field(default_factory=list)  # unlabelled reference text for percentiles
    l2: float = 1.0
    class_balance: bool = True
    source_balance: bool = True  # every labelled source gets the same total weight ...
    source_weights: dict[str, float] = Field(default_factory=dict)  # ... times this factor (default 1)
    baseline_feature: str = "log_chars"
    # fallback for languages no model covers: a logistic regression over the language-independent features
    # (every feature not produced by a model, i.e. without "__"), fitted on these splits of the labelled
    # sources (no model score is involved, so train and dev are both out of sample for it)
    fallback: bool = True
    fallback_split: list[str] = Field(default_factory=lambda: ["train", "dev"])
    fallback_l2: float = 10.0
    # labelled sources (by name) the fallback is fitted on (default: all of ``labelled``)
    fallback_sources: list[str] | None = None
    # > 0: besides each raw feature, the fallback also gets its rank, the empirical CDF at that many quantiles of
    # the fallback's own training rows (label-free; a fixed monotone non-linearity per feature)
    fallback_rank_quantiles: int = 0
    # language-independent features the fallbacks leave out (computed all the same; for ablations by CV)
    fallback_exclude_features: list[str] = Field(default_factory=list)
    # the stacked main regression's fallback logit may come from a second such regression with other rows / L2
    # (None: the fallback's own); it never scores an uncovered language
    stack_fallback_sources: list[str] | None = None
    stack_fallback_l2: float | None = None
    # stacked fallback: the main regression's inputs are the fallback's logit plus the model features (not the
    # raw language-independent features, whose coefficients the fallback estimates on more rows); on the
    # main regression's rows the fallback logit is cross-fitted (``crossfit_folds`` folds grouped by example
    # group), so it is out of sample like the model scores
    stack_fallback: bool = True
    crossfit_folds: int = 5
    per_language_min_negatives: int = 3  # per-language AUC only where both classes have enough rows
    # > 0: a text whose lid.176 top-1 probability (feature ``lid_score``) is below this is scored by the fallback
    # even where a model covers the detected language (an uncertain language is no basis for a language's model)
    fallback_below_lid: float = 0.0


def is_combiner_config(path: str | os.PathLike) -> bool:
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    return raw.get("kind") == "combiner"


def load_combiner_recipe(path: str | os.PathLike) -> CombinerRecipe:
    with open(path) as f:
        return CombinerRecipe.model_validate(yaml.safe_load(f) or {})


def fit_logistic(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, *, l2: float = 1.0,
                 iters: int = 50) -> dict:
    """L2-regularised logistic regression by Newton's method on standardised features.
    Returns ``{"mean", "std", "coef", "intercept"}`` (the intercept is not penalised)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    w = w * (len(y) / w.sum())
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd < 1e-9] = 1.0
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    beta = np.zeros(Z.shape[1])
    pen = np.full(Z.shape[1], float(l2))
    pen[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(Z @ beta)))
        g = Z.T @ (w * (p - y)) + pen * beta
        H = (Z * (w * p * (1 - p))[:, None]).T @ Z + np.diag(pen) + 1e-9 * np.eye(Z.shape[1])
        step = np.linalg.solve(H, g)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"mean": mu.tolist(), "std": sd.tolist(), "coef": beta[:-1].tolist(), "intercept": float(beta[-1])}


def _source_class_weights(y: np.ndarray, srcs: np.ndarray, recipe: CombinerRecipe) -> np.ndarray:
    """Every source the same total weight (times ``source_weights``), classes balanced within a source."""
    w = np.ones(len(y))
    if recipe.source_balance:
        for s in set(srcs):
            m = srcs == s
            w[m] = float(recipe.source_weights.get(s, 1.0)) / m.sum()
    if recipe.class_balance:
        for s in set(srcs):
            for c in (0, 1):
                m = (srcs == s) & (y == c)
                if m.any():
                    w[m] *= 0.5 * (w[srcs == s].sum()) / w[m].sum()
    return w


def _fit_fallback(recipe: CombinerRecipe, sources: list[str] | None, l2: float, feats, fnames: list[str], root):
    """A logistic regression over the language-independent features ``fnames`` (raw, plus their ranks when
    ``recipe.fallback_rank_quantiles``), fitted on the ``fallback_split`` rows of the labelled ``sources`` (all
    when None). Returns (params, card, (examples, design matrix, labels, weights, l2)) for cross-fitting."""
    unknown = set(sources or []) - {s.get("name") for s in recipe.labelled}
    if unknown:
        raise ValueError(f"fallback sources {sorted(unknown)} are not names of labelled sources")
    specs = [dict(s, split=list(recipe.fallback_split)) for s in recipe.labelled if sources is None or s.get("name") in sources]
    fex, _ = build_sources(specs, root)
    fex = [e for e in fex if e.label in (0, 1) and e.text.strip()]
    Xa, anames, _ = feats([e.text for e in fex], {})
    Xf = Xa[:, [anames.index(f) for f in fnames]]
    yf = np.array([e.label for e in fex], dtype=np.float64)
    wf = _source_class_weights(yf, np.array([e.source for e in fex]), recipe)
    fb: dict = {"features": fnames}
    nq = recipe.fallback_rank_quantiles
    if nq > 0:
        fb["rank_quantiles"] = [np.quantile(Xf[:, j], np.linspace(0, 1, nq)).tolist() for j in range(len(fnames))]
    Df = fallback_design(fb, Xf)
    fb.update(fit_logistic(Df, yf, wf, l2=l2))
    dnames = fnames + ([f"rank({f})" for f in fnames] if nq > 0 else [])
    card = {"n": int(len(yf)), "n_negative": int((yf == 0).sum()), "splits": list(recipe.fallback_split),
            "sources": sorted({e.source for e in fex}), "l2": l2, "rank_quantiles": nq,
            "coefficients_standardised": dict(zip(dnames, fb["coef"]))}
    return fb, card, (fex, Df, yf, wf, l2)


def _fold(group: str, k: int) -> int:
    return int(hashlib.sha256(f"combiner-crossfit\x00{group}".encode()).hexdigest()[:8], 16) % k


def crossfit_model_logits(recipe: CombinerRecipe, exs: list, X: np.ndarray, names: list[str], feats, root: Path, *,
                          config_path=None, work_dir=None, log=print) -> tuple[np.ndarray, dict]:
    """``X`` with the ``<model>__logit`` column of every ``recipe.crossfit_models`` model cross-fitted on the rows
    ``exs`` where the model covers the row (``<model>__covered``; elsewhere the feature is 0 and stays so): fold j's
    covered rows (``_fold(group)``) are scored by a model trained by the model's recipe without any example of their
    groups (in any of its sources), so no row's feature comes from a model that trained on it. Returns (X, card: per
    model its recipe and per fold the groups left out and the member sha256s). ``work_dir``: where the fold models are
    written (default a temporary directory); a fold model already there for the same recipe and left-out groups
    (directory named by their sha256) is reused, not retrained (training is deterministic: thread=1, fixed seed)."""
    import tempfile  # noqa: PLC0415

    from assay.classifiers.train import load_recipe, train  # noqa: PLC0415

    X = X.copy()
    k = recipe.crossfit_folds
    fm = np.array([_fold(e.group, k) for e in exs])
    base = Path(config_path).parent if config_path else Path(".")
    card: dict = {}
    with tempfile.TemporaryDirectory(prefix=f"crossfit_{recipe.name}_") as tmp:
        for m, cfg in recipe.crossfit_models.items():
            if m not in recipe.models:
                raise ValueError(f"crossfit_models: {m!r} is not one of the combiner's models {sorted(recipe.models)}")
            cfg_path = base / cfg
            li, ci = names.index(f"{m}__logit"), names.index(f"{m}__covered")
            # the model's own recipe; its evaluation sets and extra calibration text are left out (they change no
            # score, only the fold model's card)
            r = load_recipe(cfg_path)
            r = r.model_copy(update={"eval_sets": {}, "calibration": r.calibration.model_copy(update={"sources": []})})
            folds = []
            for j in range(k):
                rows = np.flatnonzero((fm == j) & (X[:, ci] > 0))
                drop = frozenset(exs[i].group for i in rows)
                key = hashlib.sha256(json.dumps({"recipe": r.model_dump(), "left_out": sorted(drop)},
                                                sort_keys=True).encode()).hexdigest()
                out = Path(work_dir or tmp) / m / key[:16]
                if (out / f"{r.name}.card.json").exists():
                    mcard = json.loads((out / f"{r.name}.card.json").read_text())
                    log(f"cross-fitted {m} fold {j}: reusing {out}")
                else:
                    mcard = train(r, out, data_root=root, config_path=str(cfg_path), verbose=False, exclude_groups=drop)
                mpath = str(out / mcard["model_file"])
                if len(rows):
                    Xj, nj, _ = feats([exs[i].text for i in rows], {mpath: recipe.models[m]})
                    X[rows, li] = Xj[:, nj.index(f"{mpath}__logit")]
                folds.append({"fold": j, "groups_left_out": len(drop), "rows_scored": int(len(rows)),
                              "left_out_sha256": key, "train_examples": mcard["sizes"]["train_examples"],
                              "model_sha256": [mcard["model_sha256"]] + [e["model_sha256"] for e in mcard.get("ensemble", [])[1:]]})
                log(f"cross-fitted {m} fold {j}: {len(drop)} groups left out, {len(rows)} rows scored")
            card[m] = {"config": str(cfg), "folds": folds}
    return X, card


def _feature_fn(dotted: str):
    mod, _, fn = dotted.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _auc_row(y: np.ndarray, s: np.ndarray, base: np.ndarray) -> dict:
    return {"n": int(len(y)), "n_negative": int((y == 0).sum()), "roc_auc": M.roc_auc(y, s),
            "baseline_length_roc_auc": M.roc_auc(y, base)}


def evaluate_sets(sets: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]],
                  min_neg: int = 3) -> dict:
    """{set: {"all": row, "per_language": {lang: row}}} for (y, score, baseline, langs) per set."""
    out = {}
    for name, (y, s, base, langs) in sets.items():
        res = {"all": _auc_row(y, s, base), "per_language": {}}
        la = np.array(langs)
        for lang in sorted(set(langs)):
            m = la == lang
            if lang and (y[m] == 0).sum() >= min_neg and (y[m] == 1).sum() >= min_neg:
                res["per_language"][lang] = _auc_row(y[m], s[m], base[m])
        out[name] = res
    return out


def train_combiner(recipe: CombinerRecipe, out_dir: str | os.PathLike, *, data_root=None, config_path=None,
                   command: str | None = None, verbose: bool = True, crossfit_dir=None) -> dict:
    t0 = time.time()
    root = Path(data_root) if data_root else default_data_root()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    feats = _feature_fn(recipe.features)

    def log(msg: str) -> None:
        if verbose:
            print(f"[assay.classifiers.train {recipe.name}] {msg}", file=sys.stderr, flush=True)

    exs, src_cards = build_sources(recipe.labelled, root)
    exs = [e for e in exs if e.label in (0, 1) and e.text.strip()]
    log(f"{len(exs)} labelled training examples; computing features")
    X, names, _ = feats([e.text for e in exs], recipe.models)
    crossfit_card = None
    if recipe.crossfit_models:
        X, crossfit_card = crossfit_model_logits(recipe, exs, X, names, feats, root, config_path=config_path,
                                                 work_dir=crossfit_dir, log=log)
    y = np.array([e.label for e in exs], dtype=np.float64)
    w = _source_class_weights(y, np.array([e.source for e in exs]), recipe)
    fallback_card = stack_card = None
    fnames = [n for n in names if "__" not in n and n not in recipe.fallback_exclude_features]
    if recipe.fallback:
        fallback, fallback_card, fit_rows = _fit_fallback(recipe, recipe.fallback_sources, recipe.fallback_l2, feats,
                                                          fnames, root)
        log(f"fallback (uncovered languages) fitted on {fallback_card['n']} rows")
        stack_fb = None
        if recipe.stack_fallback and (recipe.stack_fallback_sources, recipe.stack_fallback_l2) != (None, None):
            stack_fb, stack_card, fit_rows = _fit_fallback(
                recipe, recipe.stack_fallback_sources or recipe.fallback_sources,
                recipe.stack_fallback_l2 if recipe.stack_fallback_l2 is not None else recipe.fallback_l2, feats, fnames, root)
            log(f"stacked main regression's fallback fitted on {stack_card['n']} rows")
    if recipe.fallback and recipe.stack_fallback:
        # cross-fitted fallback logit for the main regression's rows: fold k's rows are scored by a fallback
        # fitted without fold k (folds by example group, the unit benchmarks/splits.py splits by)
        # (the stack fallback's rows and L2 where the recipe sets them, else the fallback's)
        fex, Df, yf, wf, fl2 = fit_rows
        base = stack_fb or fallback
        k = recipe.crossfit_folds
        ff = np.array([_fold(e.group, k) for e in fex])
        fm = np.array([_fold(e.group, k) for e in exs])
        oof = np.zeros(len(exs))
        for j in range(k):
            prm = {**base, **fit_logistic(Df[ff != j], yf[ff != j], wf[ff != j], l2=fl2)}
            if (fm == j).any():
                oof[fm == j] = _logit(predict_fallback(prm, X[fm == j][:, [names.index(f) for f in fnames]]))
        inputs = ["fallback__logit"] + [n for n in names if "__" in n]
        Z = np.hstack([oof[:, None], X[:, [names.index(n) for n in inputs[1:]]]])
        params = {"main": {"inputs": inputs, **fit_logistic(Z, y, w, l2=recipe.l2)}, "fallback": fallback}
        if stack_fb:
            params["stack_fallback"] = stack_fb
        coefs = dict(zip(inputs, params["main"]["coef"]))
        train_auc = M.roc_auc(y, predict_logistic(params["main"], Z))
    else:
        params = fit_logistic(X, y, w, l2=recipe.l2)
        if recipe.fallback:
            params["fallback"] = fallback
        coefs = dict(zip(names, params["coef"]))
        train_auc = M.roc_auc(y, predict_combined(params, X, names))
    log(f"fitted; train ROC AUC {train_auc:.4f} (stacked rows: cross-fitted fallback logit)")
    if recipe.fallback and recipe.fallback_below_lid > 0:
        params["fallback_below_lid"] = recipe.fallback_below_lid

    # evaluation on the test splits
    bi = names.index(recipe.baseline_feature)
    sets, eval_cards = {}, {}
    for name, specs in recipe.eval_sets.items():
        ev, cards = build_sources(specs, root)
        ev = [e for e in ev if e.label in (0, 1) and e.text.strip()]
        if not ev:
            continue
        Xe, _, _ = feats([e.text for e in ev], recipe.models)
        sets[name] = (np.array([e.label for e in ev]), predict_combined(params, Xe, names), Xe[:, bi], [e.lang for e in ev])
        eval_cards[name] = cards
        log(f"eval {name}: n={len(ev)} ROC AUC {M.roc_auc(sets[name][0], sets[name][1]):.4f}"
            f" (length {M.roc_auc(sets[name][0], sets[name][2]):.4f})")
    results = evaluate_sets(sets, recipe.per_language_min_negatives)

    # calibration: token-weighted percentiles of the combined score on unlabelled reference text
    cal, cal_cards = build_sources(recipe.calibration, root)
    cal_texts = [e.text for e in cal if e.text.strip()]
    Xc, _, _ = feats(cal_texts, recipe.models)
    table = build_table(predict_combined(params, Xc, names), [max(1, len(t.split())) for t in cal_texts])

    comb = {"name": recipe.name, "kind": "logistic_regression", "features": names, **params,
            "models": recipe.models, "calibration": table,
            "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    path = out / f"{recipe.name}.json"
    with open(path, "w") as f:
        json.dump(comb, f, indent=1)
    cfg_sha = hashlib.sha256(json.dumps(recipe.model_dump(), sort_keys=True).encode()).hexdigest()
    card = {"name": recipe.name, "description": recipe.description, "label_source": recipe.label_source,
            "file": path.name, "features": names,
            "coefficients_standardised": coefs, "models": recipe.models,
            "reproduce": {"command": command or f"python -m assay.classifiers train --config {config_path} --out {out}",
                          "config": str(config_path), "config_sha256": cfg_sha},
            "training": {"n": int(len(y)), "n_negative": int((y == 0).sum()), "train_roc_auc": train_auc,
                         "l2": recipe.l2, "seconds": round(time.time() - t0, 1), "fallback": fallback_card,
                         "stack_fallback": stack_card, "crossfit_models": crossfit_card},
            "data": src_cards, "eval_set_data": eval_cards, "metrics": {"test": results},
            "calibration": {"n_docs": table["n_docs"], "n_tokens": table["n_tokens"], "sources": cal_cards}}
    card = json.loads(json.dumps(card, default=lambda o: None if isinstance(o, float) else str(o)))
    with open(out / f"{recipe.name}.card.json", "w") as f:
        json.dump(card, f, indent=1)
    (out / f"{recipe.name}.card.md").write_text(combiner_card_markdown(card))
    log(f"done in {time.time() - t0:.1f}s")
    return card


def _f(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and x != x) else f"{x:.4f}"


def combiner_card_markdown(card: dict) -> str:
    lines = [f"# Model card: `{card['name']}` (learned combination)", "", card.get("description", ""), "",
             f"- file: `{card['file']}`; label source: **{card['label_source']}**",
             f"- models and the languages they apply to (elsewhere their feature is 0): `{json.dumps(card['models'])}`",
             f"- trained on {card['training']['n']} labelled examples ({card['training']['n_negative']} negative),"
             f" L2 {card['training']['l2']}, {card['training']['seconds']} s",
             f"- calibration: {card['calibration']['n_docs']} reference documents", "",
             "## Reproduce", "", "```", card["reproduce"]["command"], "```", "",
             "## Test-split ROC AUC (benchmarks/splits.py; never trained or tuned on)", "",
             "| set | language | n | negatives | ROC AUC | length baseline |", "|---|---|---|---|---|---|"]
    for name, res in card["metrics"]["test"].items():
        a = res["all"]
        lines.append(f"| {name} | all | {a['n']} | {a['n_negative']} | {_f(a['roc_auc'])} | {_f(a['baseline_length_roc_auc'])} |")
        for lang, r in res["per_language"].items():
            lines.append(f"| {name} | {lang} | {r['n']} | {r['n_negative']} | {_f(r['roc_auc'])} |"
                         f" {_f(r['baseline_length_roc_auc'])} |")
    lines += ["", "## Coefficients (standardised features)", "", "| feature | coefficient |", "|---|---|"]
    for k, v in card["coefficients_standardised"].items():
        lines.append(f"| {k} | {v:+.3f} |")
    for key, title in (("fallback", "Fallback for languages no model covers"),
                       ("stack_fallback", "Fallback logit stacked into the main regression (covered languages only)")):
        fb = card["training"].get(key)
        if not fb:
            continue
        srcs = f" of {', '.join(fb['sources'])}" if fb.get("sources") else ""
        rq = (f"; every feature also as rank(feature), its empirical CDF at {fb['rank_quantiles']} quantiles of these rows"
              if fb.get("rank_quantiles") else "")
        lines += ["", f"## {title} (fitted on {fb['n']} rows{srcs}, {'+'.join(fb['splits'])}"
                  f" splits, {fb['n_negative']} negative, L2 {fb['l2']}{rq})", "", "| feature | coefficient |", "|---|---|"]
        for k, v in fb["coefficients_standardised"].items():
            lines.append(f"| {k} | {v:+.3f} |")
    for m, cf in (card["training"].get("crossfit_models") or {}).items():
        lines += ["", f"## `{m}` cross-fitted on the rows above (the rows it covers, fold by fold, each fold scored by"
                  f" `{cf['config']}` trained without that fold's rows)", "",
                  "| fold | groups left out | rows scored | training examples | member sha256 |",
                  "|---|---|---|---|---|"]
        for f in cf["folds"]:
            lines.append(f"| {f['fold']} | {f['groups_left_out']} | {f['rows_scored']} | {f['train_examples']} |"
                         f" {', '.join(h[:12] for h in f['model_sha256'])} |")
    lines += ["", "## Training data", "", "| source | builder | examples |", "|---|---|---|"]
    for s in card["data"]:
        lines.append(f"| {s['name']} | {s['builder']} | {s['n_examples']} |")
    return "\n".join(lines) + "\n"
