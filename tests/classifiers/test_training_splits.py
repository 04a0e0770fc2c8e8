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


def test_models_the_combiner_stacks_never_train_on_its_rows():
    """The combiner (web_quality.yaml) is fitted on the *dev* rows of its labelled sets with the web / web_ml logits as
    features, so those logits must be out of sample there: a stacked model's source that reads one of those sets reads
    its train split only for the languages the combiner scores with that model. ``web`` covers English only, so its
    other-language HPLT rows and Turku lines may read train+dev (round 11), its English judgments never dev."""
    comb = yaml.safe_load((CONFIGS / "web_quality.yaml").read_text())
    fitted = {s["split_dataset"] for s in comb["labelled"]}
    assert comb["models"]["web"] == ["en"]
    web = yaml.safe_load((CONFIGS / "web.yaml").read_text())
    checked = 0
    for src in _training_sources(web):
        if src.get("split_dataset") not in fitted:
            continue
        paths = src["path"] if isinstance(src["path"], list) else [src["path"]]
        if src.get("langs"):  # HPLT: ISO 639-3 codes of the files read; Turku: language folders
            english = ("eng" if src["builder"] == "hplt_inspection" else "en") in src["langs"]
        else:  # an HPLT glob reads English where it names the English files or every file
            english = any("eng_Latn" in p or p.endswith("/*.tsv.gz") for p in paths)
        if english:
            checked += 1
            assert src.get("split") == "train", f"web: {src.get('name')} reads {src.get('split')}: the combiner's rows"
    assert checked == 2  # HPLT English rows, Turku English lines
