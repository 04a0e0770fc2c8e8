"""Calibration (percentile) tables never read text of a test split (benchmarks/splits.py).

A calibration table is label-free, but it is still fitted on its reference text: a reference sample that holds
test-split rows of a set that a benchmark or model card evaluates on is tuning on test inputs. Every shipped config
that calibrates on such a set restricts it to the train and dev groups, and the shipped tables were built that way.
"""
import json
from pathlib import Path

import pytest
import yaml

import assay.classifiers
from assay.classifiers.data import build_source, default_data_root, grouped_split_fn

REPO = Path(assay.classifiers.__file__).resolve().parents[1]
CONFIGS = REPO / "classifiers" / "configs"
MODELS = REPO / "classifiers" / "models"
# (path prefix under ../shared/data, the benchmarks/splits.py dataset its test split belongs to): sets that a
# benchmark or model card evaluates on by their test split
EVALUATED = {"quality/hplt_inspection/": "hplt_inspection", "quality/dolma_ccnet_head/": "ccnet_head",
             "quality/turku_linewise_text_quality_annotations": "turku_quality",
             "multilingual/turku_register_core/": "register_core",
             "quality/wikipedia_dump_snippets/enwiki-": "enwiki_snippets", "warc/": "warc_pages"}


def _calibration_sources(cfg: dict) -> list[dict]:
    cal = cfg.get("calibration") or {}
    return list(cal) if isinstance(cal, list) else list(cal.get("sources") or [])


def _evaluated_dataset(src: dict) -> str | None:
    paths = src.get("path") if isinstance(src.get("path"), list) else [src.get("path", "")]
    for p in paths:
        for prefix, ds in EVALUATED.items():
            if str(p).startswith(prefix):
                return ds
    return None


CASES = [(p.stem, s) for p in sorted(CONFIGS.glob("*.yaml")) for s in _calibration_sources(yaml.safe_load(p.read_text()))]


def test_the_guard_sees_the_calibration_sources():
    # the shipped web, web_ml, web_quality and stem configs calibrate on HPLT / CCNet text: if this list came out
    # empty, the test below would check nothing
    seen = {(name, _evaluated_dataset(s)) for name, s in CASES if _evaluated_dataset(s)}
    assert {("web", "hplt_inspection"), ("web_ml", "hplt_inspection"), ("web_quality", "hplt_inspection"),
            ("web_quality", "ccnet_head"), ("stem", "ccnet_head")} <= seen


@pytest.mark.parametrize("name,src", [c for c in CASES if _evaluated_dataset(c[1])],
                         ids=lambda v: v if isinstance(v, str) else v.get("name", "?"))
def test_calibration_sources_exclude_test_groups(name, src):
    ds = _evaluated_dataset(src)
    split = src.get("split")
    wanted = {split} if isinstance(split, str) else set(split or ())
    assert wanted and "test" not in wanted, f"{name}: calibration source {src.get('name')} reads the test split of {ds}"
    assert src.get("split_dataset") == ds, f"{name}: {src.get('name')} must split by the {ds} groups"


def test_shipped_calibration_tables_hold_no_test_row():
    """Real data: rebuild the web_quality calibration sources (HPLT all languages, CCNet head) and check that no
    group is in the test split and that the shipped table was built on exactly these rows."""
    root = default_data_root()
    if not (root / "quality/hplt_inspection").is_dir() or not (root / "quality/dolma_ccnet_head").is_dir():
        pytest.skip(f"shared data absent under {root} (quality/hplt_inspection, quality/dolma_ccnet_head)")
    split_of, _ = grouped_split_fn()
    cfg = yaml.safe_load((CONFIGS / "web_quality.yaml").read_text())
    n_docs = 0
    for src in _calibration_sources(cfg):
        exs, _ = build_source(src, root)
        assert exs, src["name"]
        assert all(split_of(e.group, dataset=src["split_dataset"]) in ("train", "dev") for e in exs)
        # and the unfiltered source does hold test rows, so the filter is what keeps them out
        unfiltered, _ = build_source({k: v for k, v in src.items() if k not in ("split", "split_dataset")}, root)
        assert len(unfiltered) > len(exs)
        n_docs += sum(1 for e in exs if e.text.strip())
    card = json.loads((MODELS / "web_quality.card.json").read_text())
    assert card["calibration"]["n_docs"] == n_docs
    for name in ("web", "web_ml"):
        ref = json.loads((MODELS / f"{name}.card.json").read_text())["calibration"]["reference"]
        hplt = [r for r in ref if r.get("builder") == "hplt_inspection"]
        assert hplt and all(set(r["params"]["split"]) == {"train", "dev"} for r in hplt), name


def test_calibrate_command_rebuilds_the_table_without_training(tiny_model, tiny_recipe, labelled_jsonl, tmp_path):
    """``python -m assay.classifiers calibrate`` rebuilds the percentile table of the model files already there (same
    bytes before and after), from the recipe's calibration sources, and updates the card's calibration section."""
    import hashlib
    import shutil

    from assay.classifiers.__main__ import main

    out = tmp_path / "models"
    shutil.copytree(tiny_model.parent, out)
    model = out / "tiny.ftz"
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    before = json.loads((out / "tiny.calib.json").read_text())
    # the same recipe plus a reference source: the first 100 rows of the labelled file (prose only)
    cfg = yaml.safe_load(tiny_recipe.read_text())
    cfg["calibration"] = {"include_holdout": True,
                          "sources": [{"name": "prose_rows", "builder": "labelled", "path": str(labelled_jsonl),
                                       "max_docs": 100}]}
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(yaml.safe_dump(cfg))
    assert main(["calibrate", "--config", str(recipe), "--out", str(out), "--quiet"]) == 0
    assert hashlib.sha256(model.read_bytes()).hexdigest() == sha  # no training
    after = json.loads((out / "tiny.calib.json").read_text())
    assert after["n_docs"] == before["n_docs"] + 100
    card = json.loads((out / "tiny.card.json").read_text())
    assert card["calibration"]["n_docs"] == after["n_docs"]
    assert [r["name"] for r in card["calibration"]["reference"]] == ["holdout split", "prose_rows"]
    assert card["reproduce"]["recalibrated"]["command"].startswith("python -m assay.classifiers calibrate")
    assert card["reproduce"]["command"].startswith("python -m assay.classifiers train")  # how the model was made
    # a model file that is not the card's is refused (retrain instead)
    model.write_bytes(model.read_bytes() + b"\0")
    with pytest.raises(ValueError, match="sha256"):
        main(["calibrate", "--config", str(recipe), "--out", str(out), "--quiet"])
