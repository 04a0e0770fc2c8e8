"""The learned web-quality combiner: routing between the main (stacked) regression and the fallback, and the
training command end to end on a small labelled file."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import yaml

from assay.classifiers.combine import fit_logistic, predict_combined, predict_logistic


def _params(k: int, coef: list[float], intercept: float = 0.0) -> dict:
    return {"mean": [0.0] * k, "std": [1.0] * k, "coef": coef, "intercept": intercept}


def test_covered_rows_use_the_stacked_main_regression_and_uncovered_rows_the_fallback():
    names = ["a", "b", "web__logit", "web__covered"]
    fb = {"features": ["a", "b"], **_params(2, [1.0, -1.0])}
    main = {"inputs": ["fallback__logit", "web__logit", "web__covered"], **_params(3, [0.5, 2.0, 0.0], 0.1)}
    comb = {"features": names, "fallback": fb, "main": main}
    X = np.array([[1.0, 0.0, 3.0, 1.0],    # English: the web model covers it
                  [1.0, 0.0, 0.0, 0.0]])   # a language no model covers
    p = predict_combined(comb, X, names)
    fb_p = 1 / (1 + np.exp(-1.0))
    assert p[1] == pytest.approx(fb_p)  # uncovered: the fallback alone
    assert p[0] == pytest.approx(1 / (1 + np.exp(-(0.5 * 1.0 + 2.0 * 3.0 + 0.1))))  # main over its logit + web
    # a separate stack fallback feeds the main regression only; uncovered rows still get the fallback
    sfb = {"features": ["a", "b"], **_params(2, [0.0, 3.0], -1.0)}
    r = predict_combined({**comb, "stack_fallback": sfb}, X, names)
    assert r[1] == pytest.approx(fb_p)
    assert r[0] == pytest.approx(1 / (1 + np.exp(-(0.5 * -1.0 + 2.0 * 3.0 + 0.1))))
    # the old single-regression format still reads (no "main": one regression over every feature)
    old = {"features": names, **_params(4, [1.0, 0.0, 1.0, 0.0]), "fallback": fb}
    q = predict_combined(old, X, names)
    assert q[0] == pytest.approx(predict_logistic(old, X[:1])[0]) and q[1] == pytest.approx(fb_p)


def test_low_language_id_confidence_routes_a_covered_row_to_the_fallback():
    names = ["lid_score", "b", "web__logit", "web__covered"]
    fb = {"features": ["lid_score", "b"], **_params(2, [1.0, -1.0])}
    main = {"inputs": ["fallback__logit", "web__logit", "web__covered"], **_params(3, [0.5, 2.0, 0.0], 0.1)}
    X = np.array([[0.9, 0.0, 3.0, 1.0],    # covered, confident language ID: the main regression
                  [0.4, 0.0, 3.0, 1.0]])   # covered, but lid.176 is unsure of the language: the fallback
    comb = {"features": names, "fallback": fb, "main": main}
    p = predict_combined(comb, X, names)
    q = predict_combined({**comb, "fallback_below_lid": 0.5}, X, names)
    assert q[0] == pytest.approx(p[0]) == pytest.approx(1 / (1 + np.exp(-(0.5 * 0.9 + 2.0 * 3.0 + 0.1))))
    assert q[1] == pytest.approx(1 / (1 + np.exp(-0.4))) != pytest.approx(p[1])


def test_fallback_with_rank_features_reads_raw_values_then_their_empirical_cdf():
    from assay.classifiers.combine import fallback_design, predict_fallback, rank_features

    q = [[0.0, 1.0, 2.0, 4.0, 8.0], [0.0, 0.5, 1.0, 1.5, 2.0]]
    X = np.array([[-1.0, 0.25], [3.0, 2.0], [100.0, 1.0]])
    R = rank_features(X, q)
    assert R[:, 0].tolist() == pytest.approx([0.0, 0.625, 1.0])  # clipped below/above, linear between quantiles
    assert R[:, 1].tolist() == pytest.approx([0.125, 1.0, 0.5])
    fb = {"features": ["a", "b"], "rank_quantiles": q, **_params(4, [0.0, 0.0, 2.0, -1.0], 0.5)}
    assert fallback_design(fb, X).shape == (3, 4)
    assert predict_fallback(fb, X) == pytest.approx(1 / (1 + np.exp(-(2.0 * R[:, 0] - R[:, 1] + 0.5))))
    # a fallback without quantiles (round-1 files) is a plain regression over the raw features
    plain = {"features": ["a", "b"], **_params(2, [1.0, -1.0])}
    assert predict_fallback(plain, X) == pytest.approx(predict_logistic(plain, X))
    names = ["a", "b"]
    assert predict_combined({"features": names, "fallback": fb, **_params(2, [0.0, 0.0])}, X, names) == \
        pytest.approx(predict_fallback(fb, X))


def test_fit_logistic_recovers_the_sign_of_a_signal():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(float)
    prm = fit_logistic(x, y, l2=1.0)
    assert prm["coef"][0] > 1.0 and abs(prm["coef"][1]) < 0.5


GOOD_EN = ["The council met on {d} to discuss the new library, and members agreed that the reading room should open "
           "longer at weekends because visitor numbers have risen steadily since spring.",
           "Researchers at the university published a study on {d} showing that the river's water quality improved "
           "after the old factory closed, although some pollutants remain in the sediment."]
GOOD_DE = ["Die Stadtverwaltung hat am {d} beschlossen, die Öffnungszeiten der Bibliothek am Wochenende zu "
           "verlängern, weil die Zahl der Besucher seit dem Frühjahr stetig gestiegen ist.",
           "Forscher der Universität haben am {d} eine Studie veröffentlicht, nach der sich die Wasserqualität des "
           "Flusses nach der Schließung der alten Fabrik deutlich verbessert hat."]
BAD = ["Home | News | Sport | {d} | Login | Cart (0) | Contact » About » Shop » Sale » Offers",
       "cheap hotel {d} cheap hotel deals cheap hotel booking best cheap hotel cheap hotel online cheap hotel"]


def test_train_combiner_writes_a_stacked_combiner_that_orders_both_languages(tmp_path: Path):
    from assay.classifiers.combine import load_combiner_recipe, train_combiner
    from assay.stages.web.quality import quality_score

    rng = random.Random(0)
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    rows = []
    for i in range(160):
        d = f"{rng.choice(days)} {rng.randint(1, 28)} {rng.choice(['May', 'June', 'July'])}"
        kind = i % 4
        if kind == 0:
            text, label = rng.choice(GOOD_EN).format(d=d), 1
        elif kind == 1:
            text, label = rng.choice(GOOD_DE).format(d=d), 1
        else:
            text, label = rng.choice(BAD).format(d=d), 0
        rows.append({"id": str(i), "text": text, "label": label})
    data = tmp_path / "labels.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    cfg = {"kind": "combiner", "name": "tiny_quality", "features": "assay.stages.web.quality:quality_features",
           "models": {"web": ["en"]}, "labelled": [{"name": "tiny", "builder": "labelled", "path": str(data)}],
           "calibration": [{"name": "tiny_cal", "builder": "labelled", "path": str(data)}], "l2": 1.0,
           "fallback_rank_quantiles": 11, "fallback_sources": ["tiny"], "stack_fallback_l2": 3.0,
           "fallback_exclude_features": ["top10_word_share"]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    card = train_combiner(load_combiner_recipe(path), tmp_path / "out", data_root=tmp_path, config_path=path,
                          verbose=False)
    comb = json.loads((tmp_path / "out" / "tiny_quality.json").read_text())
    assert comb["main"]["inputs"] == ["fallback__logit", "web__logit", "web__covered"]
    assert all("__" not in f for f in comb["fallback"]["features"])
    # an excluded feature is computed (the combiner's feature list) but no fallback reads it
    assert "top10_word_share" in comb["features"] and "top10_word_share" not in comb["fallback"]["features"]
    assert "term_punct_ratio" in comb["fallback"]["features"]
    assert [len(q) for q in comb["fallback"]["rank_quantiles"]] == [11] * len(comb["fallback"]["features"])
    assert card["training"]["fallback"]["n"] > 0 and card["training"]["fallback"]["sources"] == ["tiny"]
    assert comb["stack_fallback"]["features"] == comb["fallback"]["features"]
    assert card["training"]["stack_fallback"]["l2"] == 3.0
    assert "Fallback for languages no model covers" in (tmp_path / "out" / "tiny_quality.card.md").read_text()
    s = quality_score([GOOD_EN[0].format(d="Monday 3 May"), BAD[0].format(d="x"),
                       GOOD_DE[1].format(d="Montag"), BAD[1].format(d="y")],
                      combiner_path=str(tmp_path / "out" / "tiny_quality.json"))
    assert s[0] > s[1] and s[2] > s[3]  # English via the stacked main regression, German via the fallback
