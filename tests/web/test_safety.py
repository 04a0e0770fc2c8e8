"""Safety signals: UT1-format URL blocklists + banned URL words, and the LDNOOBW adult-word share,
on the real lists in ../shared/data/safety; the default recipe excludes both with their own reasons."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from assay.stages.web.safety import (AdultContent, UrlBlocklist, UrlSafety, adult_word_count, adult_word_share,
                                     load_ut1)

ADULT_EN = ("Hot sex videos and free porn every day. Watch the horny milf and the naked teen sluts suck cock, "
            "then fuck in the hardcore porn scene. Best xxx tube with pussy close ups, blowjob and anal sex clips. "
            "Join now for more nude babes and orgasm videos. ") * 3
ADULT_ZH = ("这是一个色情故事。她脱光了衣服，他们开始做爱，操逼，口交，还有很多淫荡的性交场面。"
            "成人电影，三级片，色情片，黄色网站，免费观看。") * 3
NEUTRAL_EN = ("The committee discussed the annual budget for the public library and agreed to extend the opening "
              "hours on weekends. Several members noted that visitor numbers had grown steadily since the new "
              "reading room opened, and the chair asked staff to prepare a report on staffing costs. ") * 3
HEALTH_EN = ("Sexual health clinics offer confidential testing and advice. Condoms reduce the risk of sexually "
             "transmitted infections, and the clinic staff can explain contraception options in detail. ") * 3


@pytest.fixture(scope="module")
def ut1(shared_data: Path) -> Path:
    return shared_data / "safety" / "ut1"


@pytest.mark.shared_data
def test_ut1_lists_load_and_match_domains_subdomains_and_urls(ut1: Path):
    domains, urls = load_ut1(ut1)
    assert domains and urls
    gambling = next(iter(sorted(d for d, c in domains.items() if c == "gambling")))
    adult_url = next(iter(sorted(u for u, c in urls.items() if c == "adult")))
    lists = UrlBlocklist([str(ut1)])
    assert lists.check(f"https://{gambling}/page") == ("domain", "gambling")
    assert lists.check(f"http://www.{gambling}/") == ("domain", "gambling")
    assert lists.check(f"http://shop.{gambling}/x?y=1") == ("subdomain", "gambling")
    assert lists.check(f"https://{adult_url}") == ("url", "adult")
    # sexual_education lists sites to allow: not loaded by default
    assert "sexual_education" not in set(domains.values())


@pytest.mark.shared_data
def test_banned_url_words_and_clean_urls(ut1: Path):
    lists = UrlBlocklist([str(ut1)])
    assert lists.check("https://example.com/free-porn-videos")[0] == "banned_word"
    assert lists.check("https://example.com/watch/bigtitsclips")[0] == "banned_subword"
    for ok in ("https://docs.python.org/3/library/os.html", "https://en.wikipedia.org/wiki/Sussex",
               "https://www.essex.ac.uk/courses", "https://www.bbc.co.uk/news/science", "https://example.org/"):
        assert lists.check(ok) == (None, None), ok
    assert lists.check(None) == (None, None)


def test_missing_blocklist_folder_fails_at_build_time(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        UrlSafety(blocklist_dirs=[str(tmp_path / "nope")])


def test_adult_share_per_language():
    assert adult_word_share(ADULT_EN, "en") > 0.1
    assert adult_word_share(ADULT_ZH, "zh") > 0.1  # Chinese list, matched as substrings
    assert adult_word_share(NEUTRAL_EN, "en") == 0.0
    assert adult_word_share(HEALTH_EN, "en") < 0.03  # below the default rule's threshold
    hits, n = adult_word_count("", "en")
    assert (hits, n) == (0, 0)


def test_steps_store_signals_and_pickle():
    from datatrove.data import Document

    docs = [Document(text=ADULT_EN, id="a", metadata={"source": "web", "url": "https://example.com/free-porn"}),
            Document(text=NEUTRAL_EN, id="b", metadata={"source": "web", "url": "https://example.org/library"}),
            Document(text=NEUTRAL_EN, id="c", metadata={"source": "web"}),
            Document(text="def f(): pass", id="d", metadata={"source": "code"})]
    url, adult = pickle.loads(pickle.dumps(UrlSafety())), pickle.loads(pickle.dumps(AdultContent()))
    out = list(adult.run(url.run(iter(docs))))
    m = {d.id: d.metadata for d in out}
    assert m["a"]["safety__url_blocked"] is True and m["a"]["safety__url_reason"] == "banned_word"
    assert m["b"]["safety__url_blocked"] is False
    assert m["c"]["safety__url_blocked"] is None  # no URL: the rule keeps it (when_missing)
    assert m["a"]["safety__adult_share"] > 0.1 and m["b"]["safety__adult_share"] == 0.0
    assert "safety__url_blocked" not in m["d"] and "safety__adult_share" not in m["d"]


def _warc(path: Path, pages: list[tuple[str, str]]) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, html in pages:
            body = html.encode("utf-8")
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers))


def _page(title: str, paragraphs: list[str]) -> str:
    ps = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{ps}</article></body></html>"


ARTICLE = [
    "The river flooded the lower town twice during the spring, and the council has since approved a plan to "
    "raise the embankment along its eastern bank. Engineers expect the work to take two years.",
    "Residents who lost property in the floods will be able to apply for support from a regional fund, which "
    "was set up last month with contributions from the national government and several local businesses.",
    "At a public meeting on Tuesday, the mayor said the town had learned from the experience and that new "
    "warning sirens would be installed before the next rainy season begins in the autumn.",
]


@pytest.mark.shared_data
@pytest.mark.slow
def test_assay_run_excludes_adult_page_and_blocklisted_url_with_their_reasons(shared_data: Path, ut1: Path,
                                                                               tmp_path: Path):
    domains, _ = load_ut1(ut1, ["gambling"])
    blocked_domain = sorted(domains)[0]
    warc = tmp_path / "crawl.warc.gz"
    _warc(warc, [
        ("https://news.example.org/river-flood", _page("Flood defences", ARTICLE)),
        (f"https://www.{blocked_domain}/about", _page("About the town council", [p.replace("river", "canal")
                                                                                  for p in ARTICLE])),
        ("https://stories.example.net/night", _page("Night", [ADULT_EN[:400], ADULT_EN[400:800], ARTICLE[0]])),
    ])
    recipe = yaml.safe_load((Path(__file__).resolve().parents[2] / "pipeline/recipes/default.yaml").read_text())
    web = next(s for s in recipe["sources"] if s["name"] == "web")
    web["reader"]["params"]["paths"] = [str(warc)]
    for step in web["steps"]:
        if step["kind"] == "url_safety_v1":
            step["params"] = {"blocklist_dirs": [str(ut1)]}
    recipe["sources"] = [web]
    recipe["executor"] = {"kind": "local", "tasks": 1, "workers": 1}
    rpath = tmp_path / "recipe.yaml"
    rpath.write_text(yaml.safe_dump(recipe))
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "assay.pipeline.cli", "run", str(rpath), "--output", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    excluded = pl.concat([pl.read_parquet(p) for p in (out / "excluded").rglob("*.parquet")], how="diagonal_relaxed")
    reasons = dict(zip(excluded["id"].to_list(), excluded["reason"].to_list()))
    store = pl.concat([pl.read_parquet(p) for p in (out / "signals").rglob("*.parquet")], how="diagonal_relaxed")
    url_of = dict(zip(store["id"].to_list(), store["url"].to_list())) if "url" in store.columns else {}
    by_url = {url_of.get(i, i): reason for i, reason in reasons.items()}
    assert by_url.get(f"https://www.{blocked_domain}/about") == "web_url_blocklist", by_url
    assert by_url.get("https://stories.example.net/night") == "web_adult_content", by_url
    assert "https://news.example.org/river-flood" not in by_url or not by_url[
        "https://news.example.org/river-flood"].startswith(("web_url", "web_adult")), by_url


# ---------------------------------------------------------------------------------------------
# native script: romanised list entries and English loanwords written in an Indic script
def test_roman_keys_meet_across_spellings_and_keep_distinct_sounds_apart():
    from assay.stages.web.safety import native_roman_key, roman_key

    for latin, native in [("sexy", "सेक्सी"), ("porn", "पोर्न"), ("gaand", "गांड"), ("madarchod", "मादरचोद"),
                          ("chudai", "चुदाई"), ("randi", "रंडी"), ("blowjob", "ब्लोजॉब")]:
        assert roman_key(latin) == native_roman_key(native), (latin, native)
    # ordinary words that a looser key confused with list words on the HPLT train/dev rows
    for latin, native in [("chod", "छोड़"), ("chut", "छूट"), ("shitty", "सिटी"), ("jhant", "जनता"), ("gand", "गंध")]:
        assert roman_key(latin) != native_roman_key(native), (latin, native)
    assert native_roman_key("hello") == "" and native_roman_key("Москва") == ""


def test_devanagari_adult_words_count_and_ordinary_hindi_does_not():
    from assay.stages.web.safety import roman_keys

    assert "chut" in roman_keys("hi") and "seksi" in roman_keys("en")
    adult = "यह सेक्सी वीडियो देखें, हॉट सेक्स और पोर्न क्लिप मुफ्त में। रंडी की चुदाई का वीडियो।"
    news = ("नई दिल्ली में आज बारिश के कारण कई सड़कों पर पानी भर गया। शहर की जनता को यातायात में परेशानी हुई "
            "और सिटी बसें देर से चलीं। मौसम विभाग ने कहा कि कल भी बारिश हो सकती है, इसलिए लोग घर से कम निकलें।")
    hits, n = adult_word_count(adult, "hi")
    assert hits == 4 and n == len(adult.split())  # sexy, sex, porn, randi; words keep their vowel signs (the stdlib \w splits them)
    assert adult_word_count(adult, "hi", native_script=False)[0] == 0
    assert adult_word_count(news, "hi") == (0, len(news.split()))
    assert adult_word_share(adult, "mr") > 0.03  # English loanwords count in any language written so


@pytest.mark.shared_data
def test_real_hplt_devanagari_rows_train_dev(shared_data: Path):
    """HPLT Hindi/Marathi/Bengali rows of the train+dev split (the test split is the benchmark's): the rows
    people labelled porn (written in Devanagari, English porn words as loanwords) now score above the
    others, and no row that is not porn crosses the default rule's threshold."""
    from assay.classifiers.data import build_source
    from assay.classifiers.metrics import roc_auc

    rows = []
    for split in ("train", "dev"):
        rows += build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz",
                              "label_kind": "porn", "langs": ["hin", "mar", "ben"], "split": split,
                              "split_dataset": "hplt_inspection"}, shared_data)[0]
    hi = [e for e in rows if e.lang == "hi"]
    assert len(hi) > 100 and sum(e.label for e in hi) >= 2
    share = [adult_word_share(e.text, e.lang) for e in hi]
    old = [adult_word_share(e.text, e.lang, native_script=False) for e in hi]
    y = [e.label for e in hi]
    assert roc_auc(y, share) > 0.95 > roc_auc(y, old) + 0.1
    assert not any(adult_word_share(e.text, e.lang) >= 0.03 for e in rows if e.label == 0)
    row = next(e for e in hi if e.group.endswith("a68d77e2888ff9ea597c66c324cef8d1"))  # a sex-toy raid report
    assert adult_word_count(row.text, "hi")[0] >= adult_word_count(row.text, "hi", native_script=False)[0] + 4


def test_letters_joined_by_punctuation_match_only_so_joined():
    """LDNOOBW's ``s&m`` is two one-letter words once tokenised; as a phrase it matched every ``s m`` of
    algebra and code (a ghc-doc monad transformer page, ``RWST r w s m a``, had 166 hits and was dropped)."""
    code = "evalRWST :: Monad m => RWST r w s m a -> r -> s -> m (a, w)\n" * 20
    assert adult_word_count(code, "en")[0] == 0
    assert adult_word_count("a club for s&m and bondage fans", "en")[0] == 3
    assert adult_word_count("an S & M club", "en")[0] == 2
    assert adult_word_count("S/M filmy", "cs")[0] == 2
    assert adult_word_count("el riu és més ample", "ca")[0] == 0
    assert adult_word_count("sms and mms", "en")[0] == 0


def _adult_word_count_definition(text, lang, directory=None, max_chars=50_000, native_script=True):
    """The adult-word count as first written: every token visited for every list (``_adult_word_count``
    visits only the tokens of a list's words and phrase starts, and skips the romanised-key pass on texts
    without a character of the Indic blocks), with the distinct entries found (words, phrases, romanised keys,
    joined letters, substrings)."""
    from assay.stages.web import safety as S

    t = S._norm(text[:max_chars])
    toks = S._WORD_RE.findall(t)
    lists = [S.load_wordlist("en", directory)] + ([S.load_wordlist(lang, directory)] if lang and lang != "en" else [])
    flags = [False] * len(toks)
    found = set()
    for words, phrases, _, _ in lists:
        by_first = S._phrases_by_first(phrases)
        for i, w in enumerate(toks):
            if w in words:
                flags[i] = True
                found.add(w)
            for ph in by_first.get(w, ()):
                if tuple(toks[i:i + len(ph)]) == ph:
                    flags[i:i + len(ph)] = [True] * len(ph)
                    found.add(ph)
    if native_script and not t.isascii():
        keys = S._native_keys(lang if lang and lang != "en" else None, directory)
        for i, w in enumerate(toks):
            if not flags[i] and S._INDIC_FIRST <= w[0] <= S._INDIC_LAST and S.native_roman_key(w) in keys:
                flags[i] = True
                found.add(("key", S.native_roman_key(w)))
    hits = sum(flags)
    for *_, joined_re in lists:
        if joined_re is not None:
            hits += sum(len(S._WORD_RE.findall(m.group(0))) for m in joined_re.finditer(t))
            found |= {tuple(S._WORD_RE.findall(m.group(0))) for m in joined_re.finditer(t)}
    n_words = len(toks)
    for _, _, subs, _ in lists:
        rx = S._substring_re(subs)
        if rx is not None:
            n_words = max(n_words, len(t) - sum(map(str.isspace, t)))
            hits += sum(len(m.group(0)) for m in rx.finditer(t))
            found |= {m.group(0) for m in rx.finditer(t)}
    return hits, n_words, len(found)


@pytest.mark.shared_data
def test_adult_word_count_equals_its_definition_on_real_texts(shared_data: Path):
    """On real HPLT rows (train split: Devanagari and Bengali, porn and not) in their own language and in
    English, on real web pages (their text, in English, German and Spanish), and on the phrase and
    joined-letter cases, the count (and the distinct entries) equals the every-token definition."""
    from assay.classifiers.data import build_source
    from assay.stages.web import safety as S

    rows = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz",
                         "label_kind": "porn", "langs": ["hin", "mar", "ben"], "split": "train",
                         "split_dataset": "hplt_inspection"}, shared_data)[0]
    assert len(rows) > 100 and any(e.label for e in rows)
    cases = [(e.text, lang) for e in rows for lang in (e.lang, "en")]
    root = shared_data / "html" / "readability" / "readability" / "input"
    pages = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("*.html"))]
    assert len(pages) > 50
    cases += [(p, lang) for p in pages for lang in ("en", "de", "es")]
    cases += [(ADULT_EN, "en"), (ADULT_ZH, "zh"), (NEUTRAL_EN, "en"), (HEALTH_EN, "en"),
              ("two girls one cup, s & m and S/M; ball gag", "en")]
    got = [S._adult_word_count(t, lang, None, S.ADULT_MAX_CHARS, True) for t, lang in cases]
    assert got == [_adult_word_count_definition(t, lang) for t, lang in cases]
    assert sum(h > 0 for h, *_ in got) > 20 and sum(k >= 2 for *_, k in got) > 5



# ---------------------------------------------------------------------------------------------
# one list word is no evidence: the default rule needs two distinct list words (safety__adult_distinct)
RULES = yaml.safe_load((Path(__file__).resolve().parents[2] / "pipeline/recipes/default.yaml").read_text())[
    "decisions"]["rules"]
ADULT_RULE = next(r for r in RULES if r["name"] == "adult_content")
OLD_ADULT_RULE = {k: v for k, v in ADULT_RULE.items() if k != "unless"}  # the rule as it was (ef6baca)
# a Doxygen struct page whose undocumented fields all carry the developer marker (as reglookup-doc's WINSEC_UUID)
DOXYGEN_XXX = ("Data Fields\n" + "".join(f"| uint32_t | {f} |\n|  | XXX: document this. |\n"
                                         for f in ("time_low", "time_mid", "time_hi", "clock_seq", "node"))
               + "Detailed Description\nXXX: document this.\n")


def _web_signals(docs: list, html: bool = False) -> list[dict]:
    """The default recipe's web signal steps up to the adult count (from the HTML, or on given text)."""
    from datatrove.data import Document

    from assay.stages.web.extract import HtmlExtractor
    from assay.stages.web.heuristics import WebHeuristicSignals
    from assay.stages.web.langid import LanguageId

    it = iter([Document(text=t, id=str(i), metadata={"source": "web", **({"content_type": "text/html"} if html else {})})
               for i, t in enumerate(docs)])
    it = LanguageId().run(WebHeuristicSignals().run(HtmlExtractor().run(it) if html else it))
    return [dict(d.metadata) for d in AdultContent().run(it)]


def test_adult_distinct_counts_different_entries_and_the_rule_needs_two():
    from assay.stages.decisions.rules import decide
    from assay.stages.web.safety import adult_word_stats

    assert adult_word_stats("porn " * 10 + "and sex", "en") == (11, 12, 2)
    assert adult_word_stats("a club for s&m and bondage fans, S/M", "en")[2] == 2  # s&m and S/M: one entry
    assert adult_word_stats(ADULT_ZH, "zh")[2] >= 5  # substrings of a no-space list
    assert adult_word_stats("यह सेक्सी वीडियो देखें, हॉट सेक्स और पोर्न क्लिप", "hi")[2] == 3  # romanised keys
    xxx, adult = _web_signals([DOXYGEN_XXX, ADULT_EN])
    assert xxx["safety__adult_share"] >= 0.1 and xxx["safety__adult_words"] == 6
    assert xxx["safety__adult_distinct"] == 1 and adult["safety__adult_distinct"] >= 10
    assert decide(xxx, {"rules": [OLD_ADULT_RULE]}).reason == "web_adult_content"
    assert decide(xxx, {"rules": [ADULT_RULE]}).reason is None
    assert decide(adult, {"rules": [ADULT_RULE]}).reason == "web_adult_content"
    assert decide(dict(xxx, safety__adult_distinct=2), {"rules": [ADULT_RULE]}).reason == "web_adult_content"
    old_run = {k: v for k, v in xxx.items() if k != "safety__adult_distinct"}  # a run stored before the count
    assert decide(old_run, {"rules": [ADULT_RULE]}).reason == "web_adult_content"


@pytest.mark.slow
def test_real_doxygen_pages_with_xxx_markers_are_not_adult(debian_doc):
    """reglookup-doc (bench_e2e set S, read for this): Doxygen pages of undocumented structs and files whose
    members all say "XXX: document this." / "XXX: finish documenting." (shares 0.04-0.14, one distinct list
    word); the old rule excluded 13 of its pages, the default rule now keeps them."""
    from assay.stages.decisions.rules import decide

    root = debian_doc("reglookup-doc") / "usr/share/doc/reglookup-doc/regfi"
    pages = [root / f for f in ("structWINSEC__UUID.html", "structWINSEC__ACE.html", "winsec_8h.html")]
    if not all(p.is_file() for p in pages):
        pytest.skip(f"{[p.name for p in pages]} are not all in this version of reglookup-doc")
    for m in _web_signals([p.read_text(encoding="utf-8", errors="replace") for p in pages], html=True):
        assert m["lang__code"] == "en" and m["safety__adult_share"] >= 0.03 and m["safety__adult_distinct"] == 1
        assert decide(m, {"rules": [OLD_ADULT_RULE]}).reason == "web_adult_content"
        assert decide(m, {"rules": RULES}).reason != "web_adult_content"


@pytest.mark.shared_data
def test_real_porn_row_still_excluded(shared_data: Path):
    """A real porn text (HPLT English, train split: a tube site's listing, share 0.12, 8 distinct list words)
    is still excluded by the default rule."""
    from assay.classifiers.data import build_source
    from assay.stages.decisions.rules import decide

    rows = build_source({"builder": "hplt_inspection", "path": "quality/hplt_inspection/eng_Latn__batch0.tsv.gz",
                         "label_kind": "porn", "split": "train", "split_dataset": "hplt_inspection"}, shared_data)[0]
    row = next((e for e in rows if e.group.endswith("7ac56d57ce2bd8f80d847a30550160fe")), None)
    if row is None:
        pytest.skip("the HPLT row is not in this copy of ../shared/data")
    assert row.label == 1
    (m,) = _web_signals([row.text])
    assert m["safety__adult_share"] > 0.1 and m["safety__adult_distinct"] >= 5
    assert decide(m, {"rules": RULES}).reason == "web_adult_content"
