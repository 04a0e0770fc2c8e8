"""`stages.web.quality_score` is the order by which the default recipe tiers web documents, it is
language-aware, and it agrees with held-out human labels."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from assay.stages.web import quality_score
from assay.stages.web.quality import WebQualityScore, load_combiner, quality_features, quality_percentile

ZH_ADULT_STORY = ("她脱光了衣服躺在床上，他们开始做爱。这是一个色情故事，充满了淫荡的性交场面，口交和操逼。"
                  "成人小说，三级片情节，每一章都有露骨的性描写。") * 4
DE_PROSE = ("Die Stadtverwaltung hat am Montag beschlossen, die Öffnungszeiten der öffentlichen Bibliothek am "
            "Wochenende zu verlängern. Mehrere Mitglieder des Ausschusses wiesen darauf hin, dass die Zahl der "
            "Besucher seit der Eröffnung des neuen Lesesaals stetig gestiegen ist.") * 2
EN_PROSE = ("The council decided on Monday to extend the opening hours of the public library at weekends. Several "
            "members of the committee pointed out that visitor numbers had risen steadily since the new reading "
            "room opened, and staff were asked to prepare a report on costs.") * 2


def test_models_apply_only_to_their_languages():
    comb = load_combiner()
    X, names, langs = quality_features([EN_PROSE, DE_PROSE, ZH_ADULT_STORY], comb["models"])
    assert langs == ["en", "de", "zh"]
    col = {n: X[:, i] for i, n in enumerate(names)}
    assert col["web__covered"].tolist() == [1.0, 0.0, 0.0]
    assert col["web__logit"][1] == 0.0 and col["web__logit"][2] == 0.0  # English model never sees de/zh
    for m, covered in comb["models"].items():
        assert "zh" not in covered  # no model was trained on Chinese: zh gets the neutral treatment
        assert col[f"{m}__logit"][2] == 0.0 and col[f"{m}__covered"][2] == 0.0


def test_uncovered_language_is_ordered_by_the_language_independent_fallback():
    from assay.classifiers.combine import predict_fallback, predict_logistic

    comb = load_combiner()
    X, names, langs = quality_features([EN_PROSE, ZH_ADULT_STORY], comb["models"])
    s = quality_score([EN_PROSE, ZH_ADULT_STORY])
    fb = comb["fallback"]
    cols = [names.index(f) for f in fb["features"]]
    assert all("__" not in f for f in fb["features"])
    # zh: no model covers it -> exactly the fallback regression; en: the main regression
    assert s[1] == pytest.approx(predict_fallback(fb, X[1:, cols])[0], abs=1e-12)
    # en: the main regression over the logit of its own fallback (``stack_fallback``, covered languages only)
    sfb = comb.get("stack_fallback", fb)
    p_en = predict_fallback(sfb, X[:1, [names.index(f) for f in sfb["features"]]])
    fb_logit = np.log(p_en / (1 - p_en))
    main = comb["main"]
    Z = np.hstack([fb_logit[:, None], X[:1, [names.index(n) for n in main["inputs"][1:]]]])
    assert s[0] == pytest.approx(predict_logistic(main, Z)[0], abs=1e-9)


def test_shape_features_see_navigation_mixed_scripts_and_keyword_stuffing():
    from assay.stages.web.quality import SHAPE, shape_features

    f = dict(zip(SHAPE, shape_features(EN_PROSE)))
    nav = dict(zip(SHAPE, shape_features("Home | News | Sport » Posted 6 days ago - Login - Cart » Contact | About")))
    mixed = dict(zip(SHAPE, shape_features("डाउनलोड करा Android साठी बॉबी MovieBox APK नवीनतम आवृत्ती, मॅक, पीसी")))
    stuffed = dict(zip(SHAPE, shape_features("painting a vanity painting bathroom vanity gray. painting a vanity "
                                             "girls vanity painted vanity pink painting marble vanity top.")))
    assert f["script_mix"] == 0.0 and mixed["script_mix"] > 0.2
    assert nav["separator_ratio"] > 0.3 > f["separator_ratio"]
    assert stuffed["top_word_share"] > 2 * f["top_word_share"]
    assert dict(zip(SHAPE, shape_features("StĂžrst Ã© â€™ ok")))["mojibake"] > 0 == f["mojibake"]
    assert shape_features("") == [0.0] * len(SHAPE)


def test_sentence_ends_in_any_script_and_function_word_mass():
    """Round-3 shape signals: sentence-final punctuation counts in every script (the Devanagari danda too, which
    C4's sentence count misses), and running text spends more of its words on its ten most frequent words
    (function words, whatever the language) than a keyword / product list does."""
    from assay.stages.web.quality import SHAPE, shape_features

    hi = dict(zip(SHAPE, shape_features("यह एक अच्छा दिन है। हम पार्क में गए। बच्चे खेल रहे थे।")))
    hi_list = dict(zip(SHAPE, shape_features("मोबाइल फोन सस्ते दाम ऑनलाइन खरीदें ऑफर डील सेल नया मॉडल")))
    assert hi["term_punct_ratio"] > 0.2 and hi_list["term_punct_ratio"] == 0.0
    prose = dict(zip(SHAPE, shape_features(
        "When the river rose in the spring, the people of the village moved their animals to the hills. The "
        "older farmers said that the water had never come so close to the church, and that it was the fault of "
        "the new dam in the valley. Some of the young men went down to the bank to see how high it was, and one "
        "of them took a boat to the house of a widow who lived alone at the edge of the fields.")))
    listing = dict(zip(SHAPE, shape_features(
        "Samsung Galaxy A54 128GB black smartphone Apple iPhone 15 Pro Max titanium Xiaomi Redmi Note 13 "
        "Motorola Edge 40 Neo Google Pixel 8a Nokia G42 OnePlus Nord CE3 Sony Xperia 10 Huawei Nova 11i "
        "Oppo Reno 10 Realme GT Honor Magic5 Lite Asus Zenfone 10 Fairphone 5 Nothing Phone 2 Vivo X100 "
        "Lenovo Tab M10 Acer Iconia Garmin Venu wireless earbuds charger cable case screen protector "
        "Bluetooth speaker power bank smartwatch strap tablet stylus keyboard mouse headset webcam")))
    assert prose["top10_word_share"] > listing["top10_word_share"] + 0.05, (prose, listing)


def test_chinese_adult_story_ranks_low_and_scores_are_deterministic():
    s = quality_score([EN_PROSE, DE_PROSE, ZH_ADULT_STORY])
    assert s.shape == (3,) and np.all((s >= 0) & (s <= 1))
    pct = quality_percentile(s)
    assert pct[2] < 0.25, pct  # was tier high under max(web, stem)
    assert s[2] < s[0] and s[2] < s[1]
    np.testing.assert_array_equal(s, quality_score([EN_PROSE, DE_PROSE, ZH_ADULT_STORY]))
    assert quality_score([]).shape == (0,)


def test_step_stores_the_same_number_and_pickles():
    from datatrove.data import Document

    step = pickle.loads(pickle.dumps(WebQualityScore()))
    docs = [Document(text=t, id=str(i), metadata={"source": "web"}) for i, t in enumerate([EN_PROSE, DE_PROSE])]
    docs.append(Document(text="", id="empty", metadata={"source": "web"}))
    docs.append(Document(text="x = 1", id="code", metadata={"source": "code"}))
    out = {d.id: d.metadata for d in step.run(iter(docs))}
    np.testing.assert_allclose([out["0"]["quality__web_score"], out["1"]["quality__web_score"]],
                               quality_score([EN_PROSE, DE_PROSE]), rtol=0, atol=1e-12)
    assert out["empty"]["quality__web_score"] is None
    assert "quality__web_score" not in out["code"]


@pytest.mark.shared_data
@pytest.mark.slow
def test_agrees_with_held_out_human_labels(shared_data: Path):
    """A guard, not the target: the benchmark (bench_classifiers.py) reports the full per-language table."""
    from assay.classifiers.data import build_source
    from assay.classifiers.metrics import roc_auc

    ex, _ = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz", "split": "test",
                          "split_dataset": "hplt_inspection"}, shared_data)
    y = np.array([e.label for e in ex])
    assert len(y) > 300 and (y == 0).sum() > 30
    assert roc_auc(y, quality_score([e.text for e in ex])) > 0.75


def _warc(path: Path, pages: list[tuple[str, str]]) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, html in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(html.encode("utf-8")),
                                                http_headers=headers))


TIER_RANK = {"low": 0, "medium": 1, "medium_high": 2, "high": 3}


@pytest.mark.shared_data
@pytest.mark.slow
def test_default_pipeline_tiers_follow_quality_score(shared_data: Path, tmp_path: Path):
    from assay.classifiers.data import build_source
    from assay.pipeline.recipe import Recipe
    from assay.pipeline.runner import run_recipe

    # real web text in several languages (HPLT test split), good and bad, as HTML pages
    ex, _ = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz", "split": "test",
                          "split_dataset": "hplt_inspection"}, shared_data)
    picked, seen = [], {}
    for e in ex:
        key = (e.lang, e.label)
        if seen.get(key, 0) < (3 if e.label else 1) and len(e.text.split()) > 60:
            seen[key] = seen.get(key, 0) + 1
            picked.append(e)
    pages = []
    for i, e in enumerate(picked):
        # each row is two excerpts joined by "..."; as two paragraphs (the ellipsis would trip a Gopher rule)
        paras = "".join(f"<p>{p.strip()}</p>" for p in e.text.split("...") if p.strip())
        pages.append((f"https://site{i}.example.org/page", f"<html><body><article>{paras}</article></body></html>"))
    warc = tmp_path / "pages.warc.gz"
    _warc(warc, pages)
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "pipeline/recipes/default.yaml").read_text())
    web = next(s for s in raw["sources"] if s["name"] == "web")
    web["reader"]["params"]["paths"] = [str(warc)]
    raw["sources"] = [web]
    raw["executor"] = {"kind": "local", "tasks": 1, "workers": 1}
    recipe = Recipe.model_validate(raw)
    out = tmp_path / "run"
    run_recipe(recipe, out)

    shards = sorted((out / "output").rglob("*.parquet"))
    assert shards
    df = pl.concat([pl.read_parquet(p) for p in shards], how="diagonal_relaxed").filter(pl.col("source") == "web")
    store = pl.concat([pl.read_parquet(p) for p in (out / "signals").rglob("*.parquet")], how="diagonal_relaxed")
    df = df.join(store.select("id", "quality__web_score", "quality__web_pct"), on="id", how="left")
    assert df.height >= 5, df.height
    texts = df["text"].to_list()
    ours = quality_score(texts)
    # the stored signal is exactly quality_score of the written text ...
    np.testing.assert_allclose(df["quality__web_score"].to_numpy(), ours, rtol=0, atol=1e-9)
    np.testing.assert_allclose(df["quality__web_pct"].to_numpy(), quality_percentile(ours), rtol=0, atol=1e-9)
    # ... and the tiers follow its order: a higher score never lands in a lower tier
    ranks = np.array([TIER_RANK[t] for t in df["tier"].to_list()])
    order = np.argsort(ours, kind="stable")
    assert np.all(np.diff(ranks[order]) >= 0), list(zip(ours[order].round(3), ranks[order]))
    assert len(set(ranks.tolist())) >= 2  # the test sees more than one tier
