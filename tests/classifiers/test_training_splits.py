"""Training sources never read the test split of a set that a benchmark or model card evaluates on.

Every labelled or reference set is split train / dev / test by benchmarks/splits.py (grouped by site, repository or
source file). A model trains on the *train* split of every set that is also evaluated somewhere (its own card,
bench_classifiers.py, bench_e2e.py, bench_web.py), so every reported figure is on text it never saw. Pages that two
benchmarks group differently (scrapinghub and readability: bench_web per corpus, bench_e2e by site over its whole
corpus; WARC pages: ``warc_pages`` and ``bench_e2e``) are kept only where neither puts them in its test split.
"""
from pathlib import Path

import pytest
import yaml

import assay.classifiers
from assay.classifiers.data import build_source, default_data_root, gold_page_splits, grouped_split_fn

REPO = Path(assay.classifiers.__file__).resolve().parents[1]
CONFIGS = REPO / "classifiers" / "configs"
# path prefix under ../shared/data -> (the benchmarks/splits.py dataset of its evaluated test split, how the source
# must name it: "split_dataset" or "split_pages"), and the other datasets whose test split holds the same pages
EVALUATED = {"quality/hplt_inspection/": ("hplt_inspection", "split_dataset", ()),
             "quality/dolma_ccnet_head/": ("ccnet_head", "split_dataset", ()),
             "quality/turku_linewise_text_quality_annotations": ("turku_quality", "split_dataset", ()),
             "multilingual/turku_register_core/": ("register_core", "split_dataset", ()),
             "quality/wikipedia_dump_snippets/enwiki-": ("enwiki_snippets", "split_dataset", ()),
             "warc/": ("warc_pages", "split_dataset", ("bench_e2e",)),
             "html/scrapinghub/": ("scrapinghub", "split_pages", ("bench_e2e",)),
             "html/readability/": ("readability", "split_pages", ("bench_e2e",)),
             "html/ir_chaos/": ("ir_chaos", "never", ())}


def _training_sources(cfg: dict) -> list[dict]:
    out = []
    for section in ("positive", "negative", "labelled"):
        for src in cfg.get(section) or []:
            out.append(src)
            if src.get("of"):  # a derived (corrupted) source reads its base text too
                out.append({**src["of"], "name": f"{src.get('name')}.of"})
    return out


def _evaluated(src: dict):
    paths = src.get("path") if isinstance(src.get("path"), list) else [src.get("path", "")]
    return next((v for p in paths for prefix, v in EVALUATED.items() if str(p).startswith(prefix)), None)


CASES = [(p.stem, s) for p in sorted(CONFIGS.glob("*.yaml")) for s in _training_sources(yaml.safe_load(p.read_text()))]


def test_the_guard_sees_the_training_sources():
    seen = {(name, _evaluated(s)[0]) for name, s in CASES if _evaluated(s)}
    assert {("web", "scrapinghub"), ("web", "readability"), ("web", "warc_pages"), ("web", "enwiki_snippets"),
            ("web_ml", "enwiki_snippets"), ("web_ml", "warc_pages"), ("web_ml", "hplt_inspection"),
            ("stem", "enwiki_snippets"), ("stem", "scrapinghub"), ("stem", "warc_pages"),
            ("pdf", "enwiki_snippets"), ("web_quality", "hplt_inspection")} <= seen


@pytest.mark.parametrize("name,src", [c for c in CASES if _evaluated(c[1])],
                         ids=lambda v: v if isinstance(v, str) else v.get("name", "?"))
def test_training_sources_exclude_test_groups(name, src):
    ds, how, others = _evaluated(src)
    assert how != "never", f"{name}: {src.get('name')} trains on {ds} (research use only, never trained on)"
    split = src.get("split")
    wanted = {split} if isinstance(split, str) else set(split or ())
    assert wanted and "test" not in wanted, f"{name}: training source {src.get('name')} reads the test split of {ds}"
    assert src.get(how) == ds, f"{name}: {src.get('name')} must split by the {ds} groups ({how}: {ds})"
    if how == "split_dataset" and ds == "warc_pages":
        assert src.get("split_by") == "site", f"{name}: {src.get('name')}: WARC pages split by site"
    missing = set(others) - set(src.get("exclude_test_of") or ())
    assert not missing, f"{name}: {src.get('name')} must also drop the test pages of {sorted(missing)}"


@pytest.mark.parametrize("corpus", ["scrapinghub", "readability"])
def test_gold_pages_of_a_test_split_are_never_trained_on(corpus):
    """Real data: the web config's full-page source of a gold corpus keeps only pages that bench_web (its own loader,
    benchmarks/_web_data.py) puts in train or dev and that bench_e2e (its Page objects) does not put in test."""
    import sys

    root = default_data_root()
    if not (root / "html" / corpus).is_dir():
        pytest.skip(f"shared data absent under {root} (html/{corpus})")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _e2e_corpus import Page, readability_url, scrapinghub_url
    from _web_data import load_gold

    cfg = yaml.safe_load((CONFIGS / "web.yaml").read_text())
    src = next(s for s in cfg["negative"] if s.get("split_pages") == corpus)
    exs, _ = build_source(src, root)
    pages = {e.group.split(":")[1] for e in exs}
    web_split = {p.name: p.split for p in load_gold(corpus, root)}
    assert pages and all(web_split[p] in ("train", "dev") for p in pages)
    assert {web_split[p] for p in pages} == {"train", "dev"}  # round 11: web reads train+dev pages
    if corpus == "scrapinghub":
        import json

        truth = json.loads((root / "html/scrapinghub/ground-truth.json").read_text())
        e2e = {p: Page(url=scrapinghub_url(p, truth[p]), site="", kind="web", body=b"") for p in pages}
    else:
        rd = root / "html/readability/readability/input"
        e2e = {p: Page(url=readability_url(p, (rd / f"{p}.html").read_bytes()), site="", kind="web", body=b"")
               for p in pages}
    _, site_of = grouped_split_fn()
    for p, page in e2e.items():
        page.site = site_of(page.url)
        assert page.split != "test", (corpus, p)
    # the filter is what keeps them out: the corpus has train pages that bench_e2e tests on, and test pages
    splits = gold_page_splits(corpus, root)
    assert any(v[corpus] == "train" and v["bench_e2e"] == "test" for v in splits.values())
    assert any(v[corpus] == "test" for v in splits.values())
    unfiltered, _ = build_source({k: v for k, v in src.items() if k not in ("split", "split_pages", "exclude_test_of")},
                                 root)
    assert len({e.group for e in unfiltered}) > len(pages)


def test_warc_training_pages_avoid_both_test_splits():
    """Real data (one WARC folder, resiliparse's samples): ``exclude_test_of: [bench_e2e]`` drops the pages whose site bench_e2e tests on,
    on top of the ``warc_pages`` split."""
    root = default_data_root()
    folder = root / "warc/resiliparse"
    if not any(folder.glob("*.warc*")):
        pytest.skip(f"shared data absent under {root} (warc/resiliparse)")
    split_of, site_of = grouped_split_fn()
    src = {"builder": "warc_html", "path": "warc/resiliparse/*.warc*", "main_content": False, "min_words": 5,
           "split": "train", "split_dataset": "warc_pages", "split_by": "site"}
    only_train, _ = build_source(src, root)
    both, _ = build_source({**src, "exclude_test_of": ["bench_e2e"]}, root)
    site = [site_of(e.group.split(":", 1)[1]) for e in both]
    assert all(split_of(s, dataset="warc_pages") == "train" and split_of(s, dataset="bench_e2e") != "test" for s in site)
    # the sample's train-split sites include some that bench_e2e tests on (4 pages): those are gone
    assert both and {e.group for e in both} < {e.group for e in only_train}


def _reads_english(src: dict) -> bool:
    paths = src["path"] if isinstance(src["path"], list) else [src["path"]]
    if src.get("langs"):  # HPLT: ISO 639-3 codes of the files read; Turku: language folders
        return ("eng" if src["builder"] == "hplt_inspection" else "en") in src["langs"]
    return any("eng_Latn" in p or p.endswith("/*.tsv.gz") for p in paths)  # an HPLT glob naming English / every file


def test_a_model_the_combiner_stacks_is_cross_fitted_where_it_trains_on_the_combiners_rows():
    """The combiner (web_quality.yaml) is fitted on the *dev* rows of its labelled sets with the web / web_ml logits as
    features. ``web`` (English) trains on the dev English judgments too (round 12), so the combiner must take its
    feature there from cross-fitted models (``crossfit_models``, its own recipe); a model not cross-fitted may read
    only the train split of those sets in the languages the combiner scores with it."""
    comb = yaml.safe_load((CONFIGS / "web_quality.yaml").read_text())
    fitted = {s["split_dataset"] for s in comb["labelled"]}
    assert {s["split"] for s in comb["labelled"]} == {"dev"}
    assert comb["models"]["web"] == ["en"]
    assert comb["crossfit_models"] == {"web": "web.yaml"} and (CONFIGS / comb["crossfit_models"]["web"]).exists()
    web = yaml.safe_load((CONFIGS / "web.yaml").read_text())
    dev_english = [s.get("name") for s in _training_sources(web) if s.get("split_dataset") in fitted and _reads_english(s)
                   and "dev" in ([s["split"]] if isinstance(s.get("split"), str) else s.get("split") or [])]
    assert dev_english == ["hplt_eng_human", "turku_en_lines"]  # the rows the cross-fitting keeps out of sample


def test_the_combiners_crossfitted_feature_comes_from_models_that_never_trained_on_the_row(tmp_path, monkeypatch):
    """combine.crossfit_model_logits on real rows (HPLT English judgments of the dev split, the rows web_quality.yaml
    fits on) with a small recipe that, like web.yaml, trains on the train+dev English judgments: every row's feature
    is scored by a fold model whose training and holdout examples (as the trainer read them) hold no example of the
    row's group, while the recipe read in full does hold every row; each covered row is scored exactly once."""
    import numpy as np

    import assay.classifiers.train as T
    from assay.classifiers.combine import CombinerRecipe, _fold, crossfit_model_logits
    from assay.classifiers.data import build_sources
    from assay.stages.web.quality import quality_features

    root = default_data_root()
    files = sorted((root / "quality" / "hplt_inspection").glob("eng_Latn__*.tsv.gz"))
    if not files:
        pytest.skip(f"shared data absent under {root} (quality/hplt_inspection/eng_Latn__*)")
    src = {"name": "hplt_eng", "builder": "hplt_inspection", "path": "quality/hplt_inspection/eng_Latn__batch0.tsv.gz",
           "split_dataset": "hplt_inspection"}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({
        "name": "m", "labelled": [dict(src, split=["train", "dev"])], "balance": "upsample", "holdout": 0.1,
        "fasttext": {"dim": 16, "epoch": 5, "lr": 0.1, "minCount": 1, "bucket": 20000, "thread": 1, "seed": 0}, "quantize": None,
        "calibration": {"include_holdout": True}}))
    comb = CombinerRecipe.model_validate({
        "kind": "combiner", "name": "c", "features": "assay.stages.web.quality:quality_features", "models": {"m": ["en"]},
        "crossfit_models": {"m": "m.yaml"}, "labelled": [dict(src, split="dev")], "crossfit_folds": 3})
    exs = [e for e in build_sources(comb.labelled, root)[0] if e.label in (0, 1) and e.text.strip()]
    assert len(exs) >= 30
    names = ["x", "m__logit", "m__covered"]
    X = np.zeros((len(exs), 3))
    X[:, 2] = 1.0
    X[::3, 2] = 0.0  # rows the model does not cover keep their feature (0)
    read: list[set[str]] = []
    real = T._holdout_examples

    def spy(*a, **k):
        out = real(*a, **k)
        read.append({e.group for e in out[0] + out[1]})
        return out
    monkeypatch.setattr(T, "_holdout_examples", spy)
    Xc, card = crossfit_model_logits(comb, exs, X, names, quality_features, root, config_path=tmp_path / "c.yaml",
                                     work_dir=tmp_path / "cf", log=lambda m: None)
    assert len(read) == 3 and [f["fold"] for f in card["m"]["folds"]] == [0, 1, 2]
    full = {e.group for e in build_sources(T.load_recipe(tmp_path / "m.yaml").labelled, root)[0]}
    fold = np.array([_fold(e.group, 3) for e in exs])
    for j in range(3):
        rows = np.flatnonzero((fold == j) & (X[:, 2] > 0))
        assert len(rows) and {exs[i].group for i in rows} <= full  # the full recipe trains on these rows ...
        assert not {exs[i].group for i in rows} & read[j]  # ... fold j's model never saw one of them
        assert {exs[i].group for i in np.flatnonzero(fold != j)} & read[j]  # it did train on the other folds
        uncovered = {exs[i].group for i in np.flatnonzero((fold == j) & (X[:, 2] == 0))}
        assert uncovered and uncovered <= read[j]  # rows it scores no feature for stay in (their feature is 0)
        assert card["m"]["folds"][j]["groups_left_out"] == len(rows)
        mp = tmp_path / "cf" / "m" / card["m"]["folds"][j]["left_out_sha256"][:16] / "m.bin"
        F, fn, _ = quality_features([exs[i].text for i in rows], {str(mp): ["en"]})
        own = F[:, fn.index(f"{mp}__logit")]
        assert Xc[rows, 1] == pytest.approx(own)  # the row's feature is that fold model's score
        assert card["m"]["folds"][j]["rows_scored"] == len(rows)
    assert np.all(Xc[X[:, 2] == 0, 1] == 0) and np.all(Xc[X[:, 2] > 0, 1] != 0)
    assert np.array_equal(Xc[:, [0, 2]], X[:, [0, 2]])
    # a second fit with the same work directory reuses the fold models (same recipe, same groups left out): no training
    Xr, card_r = crossfit_model_logits(comb, exs, X, names, quality_features, root, config_path=tmp_path / "c.yaml",
                                       work_dir=tmp_path / "cf", log=lambda m: None)
    assert len(read) == 3 and np.array_equal(Xr, Xc) and card_r == card
