import json

import numpy as np
import pytest

from assay.classifiers.calibrate import load_table
from assay.classifiers.data import balance, chunk_text, dedup, holdout_split, Example, parse_label


def test_train_writes_model_card_and_calibration(tiny_model):
    out = tiny_model.parent
    card = json.loads((out / "tiny.card.json").read_text())
    assert tiny_model.exists() and tiny_model.stat().st_size < 3_000_000
    assert (out / "tiny.card.md").read_text().startswith("# Model card: `tiny`")
    h = card["metrics"]["holdout"]
    assert h["n"] > 100 and 0 < h["n_positive"] < h["n"]
    assert h["roc_auc"] > 0.95 and h["pr_auc"] > 0.9
    assert set(h["at_threshold"]) >= {"precision", "recall", "f1"}
    assert 0 <= h["ece"] <= 1
    assert card["reproduce"]["command"].startswith("python -m assay.classifiers train --config ")
    assert card["data"][0]["files"][0]["sha256"] and len(card["data"][0]["files"][0]["sha256"]) == 64
    assert card["sizes"]["train_examples"] > 500
    # balanced training set
    assert card["sizes"]["train_positive"] * 2 == card["sizes"]["train_examples"]
    assert "same_file" in card["metrics"]["eval_sets"]
    xs, ys = load_table(tiny_model)
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(ys) >= 0) and ys[0] == 0 and 0.9 < ys[-1] <= 1


def test_loaded_model_scores(tiny_model):
    import assay.classifiers

    m = assay.classifiers.load(str(tiny_model))
    prose = ("The assignment statement evaluates the expression list and assigns the single resulting "
             "object to each of the target lists, from left to right, as described in the reference.")
    code = "def _helper(self, x):\n    if x is None:\n        return self._cache.get(x, [])\n    return x + 1\n"
    s = m.score([prose, code, "", None])
    assert s.shape == (4,) and s.dtype == np.float64
    assert np.all((s >= 0) & (s <= 1))
    assert s[0] > 0.5 > s[1]
    assert m.score([]).shape == (0,)
    p = m.percentile(s)
    assert np.all((p >= 0) & (p <= 1)) and p[0] > p[1]


def test_training_is_reproducible(tiny_recipe, tiny_model, tmp_path):
    from assay.classifiers.__main__ import main

    assert main(["train", "--config", str(tiny_recipe), "--out", str(tmp_path), "--quiet"]) == 0
    a = json.loads((tiny_model.parent / "tiny.card.json").read_text())["model_sha256"]
    b = json.loads((tmp_path / "tiny.card.json").read_text())["model_sha256"]
    assert a == b


def test_train_rejects_single_class(tmp_path, labelled_jsonl):
    from assay.classifiers.train import load_recipe, train

    cfg = tmp_path / "one.yaml"
    cfg.write_text(f"name: one\npositive: [{{builder: labelled, path: '{labelled_jsonl}'}}]\n")
    with pytest.raises(ValueError, match="both classes"):
        train(load_recipe(cfg), tmp_path, verbose=False)


def test_recipe_validation_rejects_unknown_keys(tmp_path):
    from pydantic import ValidationError

    from assay.classifiers.train import load_recipe

    cfg = tmp_path / "bad.yaml"
    cfg.write_text("name: x\nfasttext: {dims: 3}\n")
    with pytest.raises(ValidationError):
        load_recipe(cfg)
    assert load_recipe(cfg.with_name("ok.yaml") if False else _write(tmp_path / "ok.yaml", "name: x\n"),
                       {"fasttext.dim": 8}).fasttext.dim == 8


def _write(p, s):
    p.write_text(s)
    return p


def test_data_helpers():
    assert parse_label("hq") == 1 and parse_label(0) == 0 and parse_label("maybe") is None and parse_label(True) == 1
    chunks = chunk_text("a" * 50 + "\n" + "b" * 30 + "\n" + "c" * 250, 100)
    assert all(len(c) <= 100 for c in chunks) and "".join(chunks).count("c") == 250
    exs = [Example(text=f"t{i}", label=int(i < 30), group=f"g{i // 3}") for i in range(100)]
    tr, te = holdout_split(exs, 0.3, seed=1)
    assert {e.group for e in tr}.isdisjoint({e.group for e in te}) and 10 < len(te) < 50
    b = balance(exs, "downsample")
    assert sum(e.label for e in b) == 30 and len(b) == 60
    u = balance(exs, "upsample")
    assert sum(e.label for e in u) == 70 and len(u) == 140
    d = dedup([Example("x", 1), Example("x", 1), Example("y", 1), Example("y", 0)], key=lambda e: e.text)
    assert [e.text for e in d] == ["x"]


def test_corruptions_change_text():
    import random

    from assay.classifiers.data import corrupt_code, corrupt_ocr

    code = "\n".join(f"    value_{i} = compute_something({i})" for i in range(20))
    prose = "The quick brown fox jumps over the lazy dog.\n" * 10
    rng = random.Random(0)
    assert sum(corrupt_code(code, rng) != code for _ in range(20)) >= 18
    assert sum(corrupt_ocr(prose, rng) != prose for _ in range(20)) >= 18


@pytest.mark.shared_data
def test_turku_windows_carry_the_clean_word_share_of_their_lines(shared_data):
    """``unit: window``: runs of ``window_lines`` consecutive lines of a Turku document, labelled like a document
    (share of clean words >= 0.5), every window in its document's group."""
    from assay.classifiers.data import build_source

    spec = {"builder": "turku_lines", "path": "quality/turku_linewise_text_quality_annotations.tar.zst",
            "langs": ["en"], "splits": ["dev"]}
    docs = build_source({**spec, "unit": "doc"}, shared_data)[0]
    wins = build_source({**spec, "unit": "window", "window_lines": 4, "min_words": 1}, shared_data)[0]
    assert len(wins) > len(docs) > 10
    assert all(len(w.text.split("\n")) <= 4 for w in wins)
    assert {w.group for w in wins} <= {d.group for d in docs}
    assert all(w.label == int(w.score >= 0.5) for w in wins) and {w.label for w in wins} == {0, 1}


@pytest.mark.shared_data
def test_train_from_human_line_labels(shared_data, tmp_path):
    """Label source 3: human labels from a file (Turku clean/noise lines), evaluated on its test split."""
    from assay.classifiers.train import load_recipe, train

    tar = shared_data / "quality" / "turku_linewise_text_quality_annotations.tar.zst"
    cfg = tmp_path / "turku.yaml"
    cfg.write_text(f"""
name: turku_lines
label_source: human
labelled: [{{builder: turku_lines, path: "{tar}", langs: [en, de, es, fi], splits: [train, dev]}}]
eval_sets:
  en_test: [{{builder: turku_lines, path: "{tar}", langs: [en], splits: [test], min_words: 3}}]
holdout: 0.2
fasttext: {{dim: 16, epoch: 10, lr: 0.2, wordNgrams: 2, minCount: 1, bucket: 50000}}
quantize: null
""")
    card = train(load_recipe(cfg), tmp_path / "out", data_root=shared_data, verbose=False)
    assert card["label_source"] == "human"
    assert card["metrics"]["holdout"]["roc_auc"] > 0.7
    assert card["metrics"]["eval_sets"]["en_test"]["roc_auc"] > 0.7
    assert card["data"][0]["files"][0]["sha256"]


def test_ensemble_recipe_trains_one_model_per_member_and_scores_their_mean(tiny_recipe, tmp_path):
    """``ensemble``: one fastText model per member on the same examples, each with its normalisation on top of the
    recipe's; the card lists every file with its sha256, and the loaded model's score is the members' mean."""
    import hashlib

    import assay.classifiers
    from assay.classifiers.model import QualityModel
    from assay.classifiers.text import Normalization
    from assay.classifiers.train import load_recipe, train

    cfg = tmp_path / "ens.yaml"
    cfg.write_text(tiny_recipe.read_text().replace("name: tiny", "name: ens") +
                   "normalization: {digits: null, split_punct: false}\n"
                   "ensemble:\n  - {normalization: {digits: '0', split_punct: true}}\n  - {normalization: {}}\n")
    card = train(load_recipe(cfg), tmp_path / "out", verbose=False)
    out = tmp_path / "out"
    assert [m["model_file"] for m in card["ensemble"]] == ["ens.ftz", "ens.m1.ftz"]
    for m in card["ensemble"]:
        assert hashlib.sha256((out / m["model_file"]).read_bytes()).hexdigest() == m["model_sha256"]
    assert card["ensemble"][0]["normalization"] == {"digits": "0", "split_punct": True}
    assert card["metrics"]["holdout"]["roc_auc"] > 0.95
    texts = ["The assignment statement evaluates the expression list, from left to right (see 7.2).",
             "def _helper(self, x):\n    return self._cache.get(x, [1, 2])\n"]
    ens = assay.classifiers.load(str(out / "ens.ftz"), cache=False)
    base = Normalization(digits=None, split_punct=False)
    first = QualityModel(out / "ens.ftz", normalization=base, members=[(out / "ens.ftz", card["ensemble"][0]["normalization"])])
    second = QualityModel(out / "ens.ftz", normalization=base, members=[(out / "ens.m1.ftz", None)])
    a, b = first.score(texts), second.score(texts)
    assert not np.allclose(a, b)  # two different models ...
    assert np.allclose(ens.score(texts), (a + b) / 2)  # ... and the ensemble is their mean
    with pytest.raises(ValueError, match="unknown keys"):
        load_recipe(_write(tmp_path / "bad_ens.yaml", "name: x\nensemble:\n  - {normalization: {nope: 1}}\n"))
