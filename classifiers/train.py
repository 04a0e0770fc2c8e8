"""Train, evaluate, quantise, calibrate and document one fastText quality classifier from a recipe.

    python -m assay.classifiers train --config classifiers/configs/web.yaml --out classifiers/models/

writes ``<out>/<name>.ftz`` (quantised model), ``<name>.card.json`` + ``<name>.card.md`` (data
sources with sha256, sizes, metrics, calibration, the exact command) and ``<name>.calib.json``
(token-weighted percentile table on the calibration reference sample).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.classifiers import metrics as M
from assay.classifiers.calibrate import build_table, percentile
from assay.classifiers.data import (balance, build_sources, dedup, default_data_root, expand_repeats,
                                    holdout_split)
from assay.classifiers.text import Normalization, n_tokens, normalize
from assay.io.paths import shown_path


class FastTextParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dim: int = 64
    epoch: int = 10
    lr: float = 0.2
    wordNgrams: int = 2
    minCount: int = 2
    minn: int = 0
    maxn: int = 0
    bucket: int = 200_000
    loss: Literal["softmax", "hs", "ova"] = "softmax"
    thread: int = 1  # 1 thread = reproducible models
    seed: int = 0


class QuantizeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cutoff: int = 50_000
    qnorm: bool = True
    retrain: bool = False
    dsub: int = 2


class CalibrationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_holdout: bool = True  # held-out split examples (never trained on) join the reference sample
    sources: list[dict] = Field(default_factory=list)  # extra unlabelled reference text (e.g. random web)
    max_docs: int = 20_000


class NormSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lowercase: bool = True
    digits: str | None = "0"
    max_chars: int = 8000
    nfkc: bool = True
    split_punct: bool = True
    structure: bool = False


class EnsembleMember(BaseModel):
    """One more fastText model on the same examples: its text is the recipe-normalised text normalised again with
    these overrides (keys of ``normalization``), e.g. ``{digits: "0"}`` or ``{split_punct: true}``."""
    model_config = ConfigDict(extra="forbid")
    normalization: dict[str, Any] = Field(default_factory=dict)

    @field_validator("normalization")
    @classmethod
    def _known_keys(cls, d: dict) -> dict:
        unknown = set(d) - set(NormSpec.model_fields)
        if unknown:
            raise ValueError(f"ensemble member normalisation: unknown keys {sorted(unknown)}")
        return d

    def overrides(self) -> dict:
        return dict(self.normalization)


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    label_source: Literal["reference_vs_random", "llm_annotation", "human", "synthetic_corruption", "mixed"] = "mixed"
    positive: list[dict] = Field(default_factory=list)  # sources whose examples are all label 1
    negative: list[dict] = Field(default_factory=list)  # sources whose examples are all label 0
    labelled: list[dict] = Field(default_factory=list)  # sources that carry their own label/score
    eval_sets: dict[str, list[dict]] = Field(default_factory=dict)  # extra held-out sets, never trained on
    calibration: CalibrationSpec = Field(default_factory=CalibrationSpec)
    normalization: NormSpec = Field(default_factory=NormSpec)
    balance: Literal["downsample", "upsample", "none"] = "downsample"
    holdout: float = 0.2
    seed: int = 0
    threshold: float | Literal["best_f1"] = 0.5
    fasttext: FastTextParams = Field(default_factory=FastTextParams)
    quantize: QuantizeParams | None = Field(default_factory=QuantizeParams)
    max_model_bytes: int = 3_000_000  # all members of an ensemble together
    # > 0: the model scores a text as the mean of the whole text and its lines of at least this many words
    # (``text.prose_view``; card key ``prose_view``); training is unchanged
    prose_view_min_words: int = 0
    # empty: one model; else one fastText model per member (same examples, the member's normalisation on top of
    # ``normalization``), scored as their mean probability (assay.classifiers.model.QualityModel)
    ensemble: list[EnsembleMember] = Field(default_factory=list)


def load_recipe(path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> Recipe:
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    for k, v in (overrides or {}).items():
        cur = raw
        keys = k.split(".")
        for kk in keys[:-1]:
            cur = cur.setdefault(kk, {})
        cur[keys[-1]] = v
    return Recipe.model_validate(raw)


def _labelled_sources(r: Recipe) -> list[dict]:
    specs = [dict(s, label=1) for s in r.positive] + [dict(s, label=0) for s in r.negative]
    return specs + [dict(s) for s in r.labelled]


def _write_fasttext_file(path: Path, examples: list[tuple[int, str]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for label, text in examples:
            f.write(f"__label__{label} {text}\n")


def _fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.4f}"


def train(recipe: Recipe, out_dir: str | os.PathLike, *, data_root: str | os.PathLike | None = None,
          config_path: str | None = None, command: str | None = None, verbose: bool = True,
          exclude_groups: frozenset[str] | None = None) -> dict:
    """Train the recipe's model into ``out_dir``; returns the model card (dict). ``exclude_groups``: example groups
    (``Example.group``) left out of every source (a combiner's cross-fitted models, ``combine.crossfit_model_logits``)."""
    from assay.classifiers.model import QualityModel, _import_fasttext, member_normalization  # noqa: PLC0415

    ft = _import_fasttext()
    t0 = time.time()
    root = Path(data_root) if data_root else default_data_root()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    norm = Normalization(**recipe.normalization.model_dump())

    def log(msg: str) -> None:
        if verbose:
            print(f"[assay.classifiers.train {recipe.name}] {msg}", file=sys.stderr, flush=True)

    # 1. data
    train_ex, test_ex, raw_of, src_cards = _holdout_examples(recipe, root, norm, log, exclude_groups)
    train_bal = expand_repeats(balance(train_ex, recipe.balance, seed=recipe.seed), seed=recipe.seed)
    n_pos_tr = sum(e.label for e in train_bal)
    log(f"train {len(train_bal)} (pos {n_pos_tr}), holdout {len(test_ex)} (pos {sum(e.label for e in test_ex)})")
    if len(train_bal) < 50:
        raise ValueError(f"too little training data ({len(train_bal)} examples after balancing)")

    # 2. fastText (one model, or one per ensemble member: the same balanced examples, re-normalised)
    members = [m.overrides() for m in recipe.ensemble] or [None]
    member_files: list[dict] = []
    full_bytes = model_bytes = 0
    with tempfile.TemporaryDirectory(prefix=f"clf_{recipe.name}_") as tmp:
        params = recipe.fasttext.model_dump()
        log(f"fastText {params}")
        nan_retries: list[float] = []
        for k, over in enumerate(members):
            mnorm = member_normalization(norm, over)
            train_file = Path(tmp) / f"train{k}.txt"
            _write_fasttext_file(train_file, [(e.label, normalize(e.text, mnorm) if mnorm else e.text) for e in train_bal])
            full_path = Path(tmp) / f"full{k}.bin"
            params_k, retries = _train_isolated(train_file, params, full_path, log)
            nan_retries += retries
            if k == 0:
                params = params_k
            model = ft.load_model(str(full_path))
            full_bytes += full_path.stat().st_size
            suffix = "" if k == 0 else f".m{k}"
            if recipe.quantize is not None:
                q = recipe.quantize
                model.quantize(input=str(train_file) if q.retrain else None, qnorm=q.qnorm, retrain=q.retrain,
                               cutoff=q.cutoff, dsub=q.dsub, thread=params["thread"], verbose=0)
                mpath = out / f"{recipe.name}{suffix}.ftz"
            else:
                mpath = out / f"{recipe.name}{suffix}.bin"
            model.save_model(str(mpath))
            model_bytes += mpath.stat().st_size
            member_files.append({"model_file": mpath.name, "model_sha256": hashlib.sha256(mpath.read_bytes()).hexdigest(),
                                 "normalization": over, "fasttext": params_k})
            if k == 0:
                model_path = mpath
    log(f"model {model_path} ({len(members)} member(s)) {model_bytes} bytes (unquantised {full_bytes})")

    qm = QualityModel(model_path, name=recipe.name, normalization=norm,
                      members=[(out / m["model_file"], m["normalization"]) for m in member_files],
                      prose_min_words=recipe.prose_view_min_words)

    # 3. evaluation on the held-out split (+ extra eval sets)
    y_test = np.array([e.label for e in test_ex], dtype=np.int8)
    s_test = qm.score_normalized([e.text for e in test_ex], raw=[raw_of[id(e)] for e in test_ex])
    threshold = recipe.threshold
    if threshold == "best_f1":
        threshold = M.best_f1_threshold(y_test, s_test)[0]
    holdout_metrics = M.evaluate(y_test, s_test, threshold=float(threshold))
    per_source = {}
    for src in sorted({e.source for e in test_ex}):
        m = np.array([e.source == src for e in test_ex])
        per_source[src] = {"n": int(m.sum()), "label": int(round(float(y_test[m].mean()))) if m.any() else None,
                           "mean_score": float(s_test[m].mean()) if m.any() else None}
    holdout_metrics["per_source"] = per_source
    log(f"holdout ROC AUC {_fmt(holdout_metrics['roc_auc'])} PR AUC {_fmt(holdout_metrics['pr_auc'])}")

    eval_results, eval_cards = {}, {}
    for name, specs in recipe.eval_sets.items():
        exs, cards = build_sources(specs, root, seed=recipe.seed)
        exs = [e for e in exs if e.label in (0, 1)]
        if not exs:
            continue
        s = qm.score([e.text for e in exs])
        y = np.array([e.label for e in exs], dtype=np.int8)
        res = M.evaluate(y, s, threshold=float(threshold))
        res.pop("reliability")
        scores_cont = [e.score for e in exs]
        if all(v is not None for v in scores_cont):
            res["spearman_vs_human_score"] = _spearman(np.array(scores_cont, dtype=float), s)
        # the anchor every quality claim is read against: document length alone (characters)
        res["baseline_length_roc_auc"] = M.roc_auc(y, np.array([len(e.text) for e in exs], dtype=float))
        langs = np.array([e.lang for e in exs])
        res["per_language"] = {
            lg: {"n": int(m.sum()), "n_negative": int((y[m] == 0).sum()), "roc_auc": M.roc_auc(y[m], s[m]),
                 "baseline_length_roc_auc": M.roc_auc(y[m], np.array([len(e.text) for e, k in zip(exs, m) if k], dtype=float))}
            for lg in sorted(set(langs.tolist())) if lg
            for m in [langs == lg] if (y[m] == 0).sum() >= 3 and (y[m] == 1).sum() >= 3}
        eval_results[name] = res
        eval_cards[name] = cards
        log(f"eval {name}: n={res['n']} ROC AUC {_fmt(res['roc_auc'])}")

    # 4. calibration table (token-weighted percentiles on a reference sample)
    table, ref_desc = _calibration_table(recipe, qm, test_ex, raw_of, norm, root)
    calib_path = out / f"{recipe.name}.calib.json"
    with open(calib_path, "w") as f:
        json.dump(table, f)
    pct_test = percentile(table, s_test)

    # 5. card
    cfg_dump = recipe.model_dump()
    cfg_sha = hashlib.sha256(json.dumps(cfg_dump, sort_keys=True).encode()).hexdigest()
    if command is None:
        cfg = shlex.quote(shown_path(Path(config_path))) if config_path else "<recipe.yaml>"
        command = f"python -m assay.classifiers train --config {cfg} --out {shlex.quote(shown_path(out))}"
    card = {
        "name": recipe.name,
        "description": recipe.description,
        "label_source": recipe.label_source,
        "model_file": model_path.name,
        "model_sha256": hashlib.sha256(model_path.read_bytes()).hexdigest(),
        **({"ensemble": member_files} if recipe.ensemble else {}),
        **({"prose_view": {"min_words": recipe.prose_view_min_words}} if recipe.prose_view_min_words else {}),
        "calibration_file": calib_path.name,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "reproduce": {"command": command, "config": shown_path(Path(config_path)) if config_path else None,
                      "config_sha256": cfg_sha, "data_root": "$ASSAY_SHARED_DATA or ../shared/data",
                      "python": platform.python_version(), "fasttext": _fasttext_version(),
                      "note": "fastText trained with thread=1 and a fixed seed: reruns on the same data give the same model"},
        "normalization": norm.to_dict(),
        "threshold": float(threshold),
        "training": {"fasttext": params, "nan_retries_lr": nan_retries, "quantize": recipe.quantize.model_dump() if recipe.quantize else None,
                     "balance": recipe.balance, "holdout_fraction": recipe.holdout, "seed": recipe.seed,
                     "seconds": round(time.time() - t0, 1)},
        "sizes": {"model_bytes": model_bytes, "unquantised_bytes": full_bytes,
                  "examples_after_dedup": len(train_ex) + len(test_ex), "train_examples": len(train_bal),
                  "train_positive": int(n_pos_tr), "holdout_examples": len(test_ex),
                  "holdout_positive": int(y_test.sum()),
                  "train_tokens": int(sum(n_tokens(e.text) for e in train_bal))},
        "data": src_cards,
        "metrics": {"holdout": holdout_metrics, "eval_sets": eval_results},
        "eval_set_data": eval_cards,
        "calibration": {"file": calib_path.name, "n_docs": table["n_docs"], "n_tokens": table["n_tokens"],
                        "reference": ref_desc,
                        "holdout_pct_by_label": {
                            "positive_mean_pct": float(np.nanmean(pct_test[y_test == 1])) if (y_test == 1).any() else None,
                            "negative_mean_pct": float(np.nanmean(pct_test[y_test == 0])) if (y_test == 0).any() else None}},
        "config": cfg_dump,
    }
    if model_bytes > recipe.max_model_bytes:
        card["warnings"] = [f"model is {model_bytes} bytes > max_model_bytes {recipe.max_model_bytes}"]
    card = _json_safe(card)
    with open(out / f"{recipe.name}.card.json", "w") as f:
        json.dump(card, f, indent=1, allow_nan=False)
    (out / f"{recipe.name}.card.md").write_text(card_markdown(card))
    log(f"done in {time.time() - t0:.1f}s")
    return card


def _calibration_table(recipe: Recipe, qm, test_ex: list, raw_of: dict[int, str], norm: Normalization,
                       root: Path) -> tuple[dict, list[dict]]:
    """Token-weighted percentile table of ``qm`` on the recipe's reference sample (the holdout examples when
    ``include_holdout``, then the calibration ``sources``); returns (table, description of the reference)."""
    ref_texts: list[str] = []
    ref_raw: list[str] = []
    ref_desc: list[dict] = []
    if recipe.calibration.include_holdout:
        ref_texts += [e.text for e in test_ex]
        ref_raw += [raw_of[id(e)] for e in test_ex]
        ref_desc.append({"name": "holdout split", "n_examples": len(test_ex)})
    if recipe.calibration.sources:
        exs, cards = build_sources(recipe.calibration.sources, root, seed=recipe.seed)
        ref_texts += [normalize(e.text, norm) for e in exs]
        ref_raw += [e.text for e in exs]
        ref_desc += cards
    keep = [i for i, t in enumerate(ref_texts) if t][: recipe.calibration.max_docs]
    ref_texts, ref_raw = [ref_texts[i] for i in keep], [ref_raw[i] for i in keep]
    ref_scores = qm.score_normalized(ref_texts, raw=ref_raw)
    table = build_table(ref_scores, [max(1, n_tokens(t)) for t in ref_texts])
    table.update({"model": recipe.name, "kind": "token_weighted_percentile", "token_unit": "whitespace words",
                  "reference": ref_desc})
    return table, ref_desc


def _holdout_examples(recipe: Recipe, root: Path, norm: Normalization, log,
                      exclude_groups: frozenset[str] | None = None) -> tuple[list, list, dict[int, str], list]:
    """Step 1 of ``train``: the recipe's examples (none of a group in ``exclude_groups``), normalised and
    deduplicated, split into (train, holdout); also ``raw_of`` (id(example) -> text before normalisation) and the
    source cards."""
    examples, src_cards = build_sources(_labelled_sources(recipe), root, seed=recipe.seed)
    examples = [e for e in examples if e.label in (0, 1) and not (exclude_groups and e.group in exclude_groups)]
    raw_of: dict[int, str] = {}  # id(example) -> its text before normalisation (the prose view needs line breaks)
    for e in examples:
        raw_of[id(e)] = e.text
        e.text = normalize(e.text, norm)
    examples = [e for e in examples if e.text]
    n_before = len(examples)
    examples = dedup(examples, key=lambda e: e.text)
    log(f"{n_before} examples, {len(examples)} after exact dedup")
    train_ex, test_ex = holdout_split(examples, recipe.holdout, seed=recipe.seed)
    return train_ex, test_ex, raw_of, src_cards


def recalibrate(recipe: Recipe, out_dir: str | os.PathLike, *, data_root: str | os.PathLike | None = None,
                config_path: str | None = None, command: str | None = None, verbose: bool = True) -> dict:
    """Rebuild ``<name>.calib.json`` for the model files already in ``out_dir`` (their sha256 must match the card),
    without training: the reference sample is the recipe's ``calibration`` (the holdout examples rebuilt by step 1 of
    ``train`` from the current data, then the calibration sources). Updates the card's calibration, config and
    reproduce entries (``reproduce.recalibrated``) and its markdown; model files, training data and metrics stay."""
    from assay.classifiers.model import QualityModel  # noqa: PLC0415

    t0 = time.time()
    root = Path(data_root) if data_root else default_data_root()
    out = Path(out_dir)
    norm = Normalization(**recipe.normalization.model_dump())

    def log(msg: str) -> None:
        if verbose:
            print(f"[assay.classifiers.recalibrate {recipe.name}] {msg}", file=sys.stderr, flush=True)

    card_path = out / f"{recipe.name}.card.json"
    card = json.loads(card_path.read_text())
    members = card.get("ensemble") or [{"model_file": card["model_file"], "model_sha256": card["model_sha256"],
                                        "normalization": None}]
    for m in members:
        got = hashlib.sha256((out / m["model_file"]).read_bytes()).hexdigest()
        if got != m["model_sha256"]:
            raise ValueError(f"{out / m['model_file']}: sha256 {got} is not the card's {m['model_sha256']}")
    if [m.get("normalization") for m in members] != ([m.overrides() for m in recipe.ensemble] or [None]):
        raise ValueError("the recipe's ensemble members differ from the card's: retrain instead")
    if card.get("normalization") != norm.to_dict():
        raise ValueError("the recipe's normalisation differs from the card's: retrain instead")
    qm = QualityModel(out / card["model_file"], name=recipe.name, normalization=norm,
                      members=[(out / m["model_file"], m.get("normalization")) for m in members],
                      prose_min_words=recipe.prose_view_min_words)
    _, test_ex, raw_of, _ = _holdout_examples(recipe, root, norm, log)
    table, ref_desc = _calibration_table(recipe, qm, test_ex, raw_of, norm, root)
    calib_path = out / f"{recipe.name}.calib.json"
    with open(calib_path, "w") as f:
        json.dump(table, f)
    y_test = np.array([e.label for e in test_ex], dtype=np.int8)
    pct_test = percentile(table, qm.score_normalized([e.text for e in test_ex], raw=[raw_of[id(e)] for e in test_ex]))
    cfg_dump = recipe.model_dump()
    if command is None:
        cfg = shlex.quote(shown_path(Path(config_path))) if config_path else "<recipe.yaml>"
        command = f"python -m assay.classifiers calibrate --config {cfg} --out {shlex.quote(shown_path(out))}"
    card["calibration"] = {
        "file": calib_path.name, "n_docs": table["n_docs"], "n_tokens": table["n_tokens"], "reference": ref_desc,
        "holdout_pct_by_label": {
            "positive_mean_pct": float(np.nanmean(pct_test[y_test == 1])) if (y_test == 1).any() else None,
            "negative_mean_pct": float(np.nanmean(pct_test[y_test == 0])) if (y_test == 0).any() else None}}
    card["config"] = cfg_dump
    card["reproduce"]["config_sha256"] = hashlib.sha256(json.dumps(cfg_dump, sort_keys=True).encode()).hexdigest()
    card["reproduce"]["recalibrated"] = {
        "command": command, "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "note": "calibration table rebuilt for the model files above (not retrained); holdout examples rebuilt "
                "from the current data by the training command's step 1"}
    card = _json_safe(card)
    with open(card_path, "w") as f:
        json.dump(card, f, indent=1, allow_nan=False)
    (out / f"{recipe.name}.card.md").write_text(card_markdown(card))
    log(f"{calib_path}: {table['n_docs']} reference docs; done in {time.time() - t0:.1f}s")
    return card


_CHILD = r"""
import json, sys
import fasttext
fasttext.FastText.eprint = lambda *a, **k: None
train_file, out, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    m = fasttext.train_supervised(input=train_file, verbose=0, **params)
except RuntimeError as e:
    if "NaN" in str(e):
        sys.exit(3)
    raise
m.save_model(out)
"""


def _train_isolated(train_file: Path, params: dict, out_bin: Path, log) -> tuple[dict, list[float]]:
    """Train in a fresh interpreter. fastText-numpy2 0.10.4 raises "Encountered NaN" at random on
    identical input, more often in a process that already trained a model; a fresh process per
    attempt makes success likely and, since a successful run is deterministic (thread=1, seed),
    keeps the model reproducible. After 4 failed attempts the learning rate is halved."""
    import subprocess  # noqa: PLC0415

    retries: list[float] = []
    params = dict(params)
    for attempt in range(10):
        r = subprocess.run([sys.executable, "-c", _CHILD, str(train_file), str(out_bin), json.dumps(params)],
                           capture_output=True, text=True)
        if r.returncode == 0 and out_bin.exists():
            return params, retries
        if r.returncode != 3:
            raise RuntimeError(f"fastText training failed (rc {r.returncode}): {r.stderr[-2000:]}")
        retries.append(params["lr"])
        if attempt >= 3:
            params["lr"] = params["lr"] / 2
        log(f"fastText raised NaN (attempt {attempt + 1}); retrying in a fresh process with lr={params['lr']}")
    raise RuntimeError("fastText kept diverging (NaN); lower fasttext.lr or add data")


def _json_safe(x):
    """NaN/inf -> None, numpy scalars -> Python (model cards are strict JSON)."""
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if np.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def _fasttext_version() -> str:
    try:
        from importlib.metadata import version  # noqa: PLC0415

        return f"fasttext-numpy2=={version('fasttext-numpy2')}"
    except Exception:  # noqa: BLE001
        return "unknown"


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from assay.classifiers.metrics import _rankdata  # noqa: PLC0415

    if len(a) < 3:
        return float("nan")
    ra, rb = _rankdata(a), _rankdata(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _recalibrated_lines(rc: dict | None) -> list[str]:
    if not rc:
        return []
    return ["", f"Calibration table rebuilt for these model files without training ({rc['created']}):", "", "```",
            rc["command"], "```"]


def split_description(source_card: dict) -> str:
    """Which split of which set a training source read (its ``split`` keys), for the card's data table."""
    p = (source_card.get("of") or {}).get("params", {}) if source_card.get("builder") == "corrupt" \
        else source_card.get("params", {})
    if not p.get("split"):
        return "all (no split: not an evaluated set)"
    split = p["split"] if isinstance(p["split"], str) else "+".join(p["split"])
    desc = f"{split} of {p.get('split_pages') or p.get('split_dataset') or source_card['name']}"
    if p.get("split_pages"):
        desc += " (pages, grouped as bench_web does)"
    elif p.get("split_by") == "site":
        desc += " (by site)"
    if p.get("exclude_test_of"):
        desc += f"; no page of the test split of {', '.join(p['exclude_test_of'])}"
    return desc


def card_markdown(card: dict) -> str:
    h = card["metrics"]["holdout"]
    t = h["at_threshold"]
    lines = [
        f"# Model card: `{card['name']}`", "",
        card.get("description", ""), "",
        f"- label source: **{card['label_source']}**",
        f"- file: `{card['model_file']}` ({card['sizes']['model_bytes']:,} bytes, sha256 `{card['model_sha256'][:16]}…`)",
        *([f"- ensemble: mean probability of {len(card['ensemble'])} fastText models on the same examples, each with its"
           " normalisation applied on top of the common one (line `normalisation` below): "
           + "; ".join(f"`{m['model_file']}` `{json.dumps(m['normalization'])}`" for m in card["ensemble"])]
          if card.get("ensemble") else []),
        *([f"- prose view: a text scores the mean of its whole-text probability and that of its lines of at least"
           f" {card['prose_view']['min_words']} words (`text.prose_view`; the whole text alone where no line or every"
           " line has that many)"] if card.get("prose_view") else []),
        f"- calibration table: `{card['calibration_file']}` ({card['calibration']['n_docs']} reference docs,"
        f" {card['calibration']['n_tokens']:,.0f} tokens)",
        f"- normalisation: `{json.dumps(card['normalization'])}`",
        f"- fastText: `{json.dumps(card['training']['fasttext'])}`; quantise: `{json.dumps(card['training']['quantize'])}`",
        f"- balance `{card['training']['balance']}`, holdout {card['training']['holdout_fraction']}, seed {card['training']['seed']},"
        f" trained in {card['training']['seconds']} s",
        "", "## Reproduce", "", "```", card["reproduce"]["command"], "```",
        f"config sha256 `{card['reproduce']['config_sha256'][:16]}…`, {card['reproduce']['fasttext']}, Python {card['reproduce']['python']}.",
        *_recalibrated_lines(card["reproduce"].get("recalibrated")),
        *([f"Rerun check ({card['reproduce']['rerun_check']['date']}): the same command run again gives"
           f" {'byte-identical' if card['reproduce']['rerun_check']['identical'] else 'DIFFERENT'} model files"
           f" (sha256 `{card['model_sha256']}`)."] if card["reproduce"].get("rerun_check") else []),
        "", "## Held-out metrics (quantised model)", "",
        "| n | positives | ROC AUC | PR AUC | threshold | precision | recall | F1 | ECE | best-F1 threshold |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {h['n']} | {h['n_positive']} | {_fmt(h['roc_auc'])} | {_fmt(h['pr_auc'])} | {t['threshold']:.3f} | {t['precision']:.3f} |"
        f" {t['recall']:.3f} | {t['f1']:.3f} | {_fmt(h['ece'])} | {h['best_f1']['threshold']:.3f} (F1 {h['best_f1']['f1']:.3f}) |",
        "", "Reliability (held-out):", "", "| bin | n | mean score | positive rate |", "|---|---|---|---|",
    ]
    for b in h["reliability"]:
        if b["n"]:
            lines.append(f"| {b['lo']:.1f}-{b['hi']:.1f} | {b['n']} | {b['mean_score']:.3f} | {b['positive_rate']:.3f} |")
    if card["metrics"]["eval_sets"]:
        lines += ["", "## Other evaluation sets (never trained on; `*_test` = test split of benchmarks/splits.py)", "",
                  "| set | n | positives | ROC AUC | length baseline ROC AUC | PR AUC | Spearman vs human score |",
                  "|---|---|---|---|---|---|---|"]
        for k, v in card["metrics"]["eval_sets"].items():
            lines.append(f"| {k} | {v['n']} | {v['n_positive']} | {_fmt(v['roc_auc'])} |"
                         f" {_fmt(v.get('baseline_length_roc_auc'))} | {_fmt(v['pr_auc'])} |"
                         f" {_fmt(v.get('spearman_vs_human_score'))} |")
        per_lang = [(k, lg, r) for k, v in card["metrics"]["eval_sets"].items()
                    for lg, r in (v.get("per_language") or {}).items()]
        if per_lang:
            lines += ["", "Per language (languages with at least 3 good and 3 bad examples):", "",
                      "| set | language | n | bad | ROC AUC | length baseline |", "|---|---|---|---|---|---|"]
            for k, lg, r in per_lang:
                lines.append(f"| {k} | {lg} | {r['n']} | {r['n_negative']} | {_fmt(r['roc_auc'])} |"
                             f" {_fmt(r['baseline_length_roc_auc'])} |")
    lines += ["", "## Training data", "", "| source | builder | label | split read (benchmarks/splits.py) | documents read |"
              " examples | files |", "|---|---|---|---|---|---|---|"]
    for s in card["data"]:
        files = s.get("files")
        fdesc = (", ".join(f"`{f['path']}` ({f['sha256'][:12]}…)" for f in files[:3]) + (" …" if len(files) > 3 else "")) if files \
            else f"{s.get('n_files', 0)} files, combined sha256 `{s.get('files_sha256', '')[:16]}…`"
        lines.append(f"| {s['name']} | {s['builder']} | {s.get('label', 'from data')} | {split_description(s)} |"
                     f" {s.get('n_documents_read', '')} | {s['n_examples']} | {fdesc} |")
    lines += ["", "Full file lists with sha256 are in the JSON card.", ""]
    return "\n".join(lines)
