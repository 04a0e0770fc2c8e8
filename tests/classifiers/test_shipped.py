"""The shipped default models: present, small, documented, calibrated, and sensible."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import assay.classifiers
from assay.classifiers.calibrate import percentile

MODELS = Path(assay.classifiers.__file__).parent / "models"
SHIPPED = ["web", "code", "stem", "code_corruption", "pdf", "web_ml"]
# models whose training holdout mixes human-labelled web text (a harder task than reference vs random):
# their card's test-split evaluation sets (benchmarks/splits.py) carry the guard instead
# (web: the main text of random pages is a *positive* since v2, so reference vs random is no longer its
# training task; it still separates them at 0.90 on the test split). web hplt_eng_test: 0.879 -> 0.813 when web was
# retrained on the train split of scrapinghub / readability only (issue 12 audit: it had trained on their test pages),
# 0.846 with train+dev of every source but the English judgments (round 11); the floor follows the principle, the
# figure was not tuned (33 rows, 7 bad: one row moves it by ~0.03)
HUMAN_LABELLED = {"web": {"reference_vs_random_test": 0.85, "hplt_eng_test": 0.80},
                  "web_ml": {"hplt_inspection_test": 0.78, "turku_docs_test": 0.75}}

WIKI = ("The Industrial Revolution was the transition to new manufacturing processes in Great Britain, "
        "continental Europe and the United States that occurred during the period from around 1760 to "
        "about 1820. This transition included going from hand production methods to machines, new chemical "
        "manufacturing and iron production processes, the increasing use of steam power and water power, "
        "the development of machine tools and the rise of the mechanised factory system.")
SPAM = ("Home | About | Contact | Login | Cart (0)\nFREE SHIPPING ON ORDERS OVER $50!!! Click here\n"
        "Subscribe to our newsletter\nCopyright 2021 All rights reserved | Privacy Policy | Terms\n"
        "Share on Facebook Tweet Pin it\nRelated posts: Best deals | Cheap offers | Buy now")
MATH = ("Let f be a continuous function on the closed interval [a, b]. By the mean value theorem there exists "
        "a point c in (a, b) such that f'(c) equals the difference quotient. We prove the lemma by induction "
        "on the dimension n of the vector space, using the eigenvalue decomposition of the symmetric matrix.")
NEWS = ("The mayor said on Tuesday that the festival would go ahead despite the rain, and local businesses "
        "welcomed thousands of visitors to the town centre over the weekend. Tickets sold out quickly.")
CODE = '''def binary_search(items, target):
    """Return the index of target in the sorted list items, or -1."""
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
'''
MINIFIED = ('!function(e,t){"object"==typeof exports&&"undefined"!=typeof module?module.exports=t():"function"=='
            'typeof define&&define.amd?define(t):(e=e||self).Foo=t()}(this,function(){"use strict";var e=function'
            '(e,t){return e+t},t={a:1,b:2,c:3};return function(n){for(var r=0;r<n.length;r++)t[n[r]]=e(r,1);'
            'return t}});') * 5


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_files_and_card(name):
    model = MODELS / f"{name}.ftz"
    assert model.exists(), f"missing {model}"
    assert model.stat().st_size < 3_000_000
    card = json.loads((MODELS / f"{name}.card.json").read_text())
    assert (MODELS / f"{name}.card.md").exists() and (MODELS / f"{name}.calib.json").exists()
    if name in HUMAN_LABELLED:
        for ev, floor in HUMAN_LABELLED[name].items():
            assert card["metrics"]["eval_sets"][ev]["roc_auc"] >= floor, (name, ev)
    else:
        # synthetic code corruption is the hardest task for a bag-of-n-grams model
        assert card["metrics"]["holdout"]["roc_auc"] >= (0.8 if name == "code_corruption" else 0.9)
    assert card["reproduce"]["command"] == (f"python -m assay.classifiers train --config classifiers/configs/{name}.yaml"
                                            f" --out classifiers/models/")
    import hashlib
    assert hashlib.sha256(model.read_bytes()).hexdigest() == card["model_sha256"]
    for member in card.get("ensemble") or []:  # an ensemble's other members lie beside it, pinned by the card
        f = MODELS / member["model_file"]
        assert f.stat().st_size < 3_000_000
        assert hashlib.sha256(f.read_bytes()).hexdigest() == member["model_sha256"]
    assert card["sizes"]["model_bytes"] < card["config"]["max_model_bytes"]
    for src in card["data"]:
        assert src["n_examples"] > 0 and ("files" in src or "files_sha256" in src or src.get("of"))


def test_load_and_score_shipped():
    for name, good, bad in [("web", WIKI, SPAM), ("stem", MATH, NEWS), ("code", CODE, MINIFIED)]:
        m = assay.classifiers.load(name)
        s = m.score([good, bad])
        assert s.shape == (2,) and np.all((s >= 0) & (s <= 1)), name
        assert s[0] > s[1], (name, s)
        assert assay.classifiers.load(name) is m  # cached per process
        p = percentile(name, s)
        assert p[0] > p[1]


def test_import_is_cheap_and_datatrove_free():
    code = ("import sys, classifiers, assay.classifiers.calibrate, assay.classifiers.train, assay.classifiers.data; "
            "print('fasttext' in sys.modules, 'datatrove' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
    import re

    for p in Path(assay.classifiers.__file__).parent.rglob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+datatrove", p.read_text(), re.M), p


@pytest.mark.shared_data
def test_web_model_agrees_with_human_judgments(shared_data):
    """English human judgments of the test split (never trained on): HPLT v2 English rows (porn / unnatural /
    wrong language = bad) and Turku English documents (share of clean lines < 0.5 = bad), 56 documents, 13 bad.
    A regression guard: length alone scores 0.672, the round-4 single web model 0.721, the round-5 ensemble 0.834,
    with the round-7 prose view 0.844 (benchmarks/bench_classifiers.py --quality-only; 95% bootstrap interval
    0.69-0.97: 56 rows are few; LOSO CV on the train+dev judgments: 0.898 -> 0.925), 0.810 retrained on the train
    split of scrapinghub / readability pages only (issue 12 audit; 95% bootstrap 0.64-0.94), 0.825 with train+dev of
    every source but the English judgments (round 11; 0.65-0.95), 0.852 with the English judgments of train+dev too
    (round 12, the combiner cross-fitted; 0.70-0.97). On the Turku part alone (23 documents, 6 bad) it scores 0.833
    (round 11: 0.814, audit: 0.804, round 7: 0.833, round 5: 0.775, round 4: 0.637): too few to guard separately."""
    from assay.classifiers.data import build_source
    from assay.classifiers.metrics import roc_auc

    exs = []
    for spec in ({"builder": "turku_lines", "path": "quality/turku_linewise_text_quality_annotations.tar.zst",
                  "langs": ["en"], "unit": "doc", "split": "test", "split_dataset": "turku_quality"},
                 {"builder": "hplt_inspection", "path": "quality/hplt_inspection/eng_Latn__*.tsv.gz", "split": "test",
                  "split_dataset": "hplt_inspection"}):
        exs += build_source(spec, shared_data)[0]
    y = [e.label for e in exs]
    assert len(exs) > 50 and y.count(0) > 10
    s = assay.classifiers.load("web").score([e.text for e in exs])
    assert roc_auc(y, s) > 0.8
    assert roc_auc(y, s) > roc_auc(y, [len(e.text) for e in exs]) + 0.1


@pytest.mark.shared_data
def test_web_model_scores_whole_text_and_prose_view(shared_data):
    """The shipped web model (card key ``prose_view``) scores a text as the mean of the whole text and its lines of at
    least 10 words, on real Turku English pages (train split); the signal step's path (normalised text + raw text)
    gives the same scores, and without the raw text (no line breaks left) it is the whole text alone."""
    from assay.classifiers.data import build_source
    from assay.classifiers.model import QualityModel
    from assay.classifiers.text import normalize, prose_view

    m = assay.classifiers.load("web")
    assert m.card["prose_view"] == {"min_words": 10} and m.prose_min_words == 10
    docs = build_source({"builder": "turku_lines", "path": "quality/turku_linewise_text_quality_annotations.tar.zst",
                         "langs": ["en"], "unit": "doc", "split": "train", "split_dataset": "turku_quality"},
                        shared_data)[0]
    texts = [d.text for d in docs[:40]] + ["Home\nAbout us\nContact"]
    whole = QualityModel(m.path, prose_min_words=0)
    assert whole.prose_min_words == 0
    w, v = whole.score(texts), whole.score([prose_view(t, 10) for t in texts])
    s = m.score(texts)
    assert np.allclose(s, (w + v) / 2)
    assert (np.abs(s - w) > 1e-6).sum() >= 10  # most real pages have a line or more outside the prose view
    assert s[-1] == pytest.approx(w[-1])  # no line of 10 words: the whole text alone
    norm = [normalize(t, m.normalization) for t in texts]
    assert np.allclose(m.score_normalized(norm, raw=texts), s)
    assert np.allclose(m.score_normalized(norm), w)


def test_web_quality_combiner_file_and_card():
    comb = json.loads((MODELS / "web_quality.json").read_text())
    from assay.stages.web.quality import HEURISTICS, SHAPE

    expected = list(HEURISTICS) + list(SHAPE) + [f"{m}__{k}" for m in comb["models"] for k in ("logit", "covered")]
    assert comb["features"] == expected
    # the fallback for languages no model covers uses the language-independent features only ...
    fb = comb["fallback"]
    assert fb["features"] == list(HEURISTICS) + list(SHAPE)
    # raw features, then rank(feature) for each: the empirical CDF at quantiles stored per feature (non-decreasing)
    assert len(fb["rank_quantiles"]) == len(fb["features"])
    assert all(np.all(np.diff(q) >= 0) for q in fb["rank_quantiles"])
    assert len(fb["coef"]) == 2 * len(fb["features"]) == len(fb["mean"]) == len(fb["std"])
    # ... the main regression stacks the logit of a second such regression (its own rows) with the model features
    sfb = comb["stack_fallback"]
    assert sfb["features"] == fb["features"] and len(sfb["coef"]) == len(fb["coef"])
    main = comb["main"]
    assert main["inputs"] == ["fallback__logit"] + [f"{m}__{k}" for m in comb["models"] for k in ("logit", "covered")]
    assert len(main["coef"]) == len(main["inputs"]) == len(main["mean"]) == len(main["std"])
    assert main["coef"][0] > 0 and main["coef"][main["inputs"].index("web__logit")] > 0
    for m in comb["models"]:
        assert (MODELS / f"{m}.ftz").exists()
    card = json.loads((MODELS / "web_quality.card.json").read_text())
    assert card["reproduce"]["command"] == ("python -m assay.classifiers train --config classifiers/configs/web_quality.yaml"
                                            " --out classifiers/models/")
    test = card["metrics"]["test"]
    assert test["hplt_inspection_test"]["all"]["n"] > 300
    assert test["hplt_inspection_test"]["all"]["roc_auc"] >= 0.8
    # web trains on the combiner's dev rows (round 12): their web feature was cross-fitted, 5 fold models (none the
    # shipped web) each leaving out the English rows of its fold, every covered row scored once
    cf = card["training"]["crossfit_models"]["web"]
    web_sha = json.loads((MODELS / "web.card.json").read_text())["model_sha256"]
    assert [f["fold"] for f in cf["folds"]] == list(range(5)) and cf["config"] == "web.yaml"
    assert all(f["rows_scored"] == f["groups_left_out"] > 0 and web_sha not in f["model_sha256"] for f in cf["folds"])
    assert len({f["model_sha256"][0] for f in cf["folds"]}) == 5
