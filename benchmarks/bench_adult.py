"""The default recipe's adult_content rule against pages that are not adult and rows people labelled porn.

1. ``--docs``: every HTML page (over 2 KB, as bench_e2e takes them) of the cached documentation packages
   (``~/.cache/assay/bench_e2e/pkgs``; never fetched here), less the ones ``--exclude`` names (the lead's unseen set
   of the session, and any rehearsal set not to be read), through the default recipe's web signal steps
   (extraction, heuristics, language ID, adult count). Documentation is essentially never adult: every page the
   rule excludes is a false positive. Printed: pages excluded by the rule as it is and by the rule without its
   ``unless`` (share only), per package, and the list words on them. A page whose raw HTML holds no token of any
   LDNOOBW list (lower-cased ``\\w+`` words, phrase heads, no-space substrings, Indic letters) is not extracted:
   its text cannot hold one.
2. ``--hplt train,dev``: HPLT inspection rows (``label_kind: porn``, benchmarks/splits.py split), language as
   the pipeline detects it: per HPLT language, porn and good rows, the share's ROC AUC (porn vs good), porn rows
   the rule excludes, good rows and all non-porn rows it excludes; the rule as it is and without its ``unless``.

    ASSAY_SHARED_DATA=/work/shared/data .venv/bin/python benchmarks/bench_adult.py --hplt train,dev
    .venv/bin/python benchmarks/bench_adult.py --docs --exclude liblwip-doc,python-ipywidgets-doc,...  # ~25 min
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _e2e_corpus as C  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def rules() -> tuple[list, list]:
    """(the recipe's adult_content rule, the same without its ``unless``), each as a one-rule list."""
    rs = yaml.safe_load((ROOT / "pipeline/recipes/default.yaml").read_text())["decisions"]["rules"]
    rule = next(r for r in rs if r["name"] == "adult_content")
    return [rule], [{k: v for k, v in rule.items() if k != "unless"}]


def adult_signals(texts: list[str], langs: list[str | None] | None = None, html: bool = False) -> list[dict]:
    """The stored signals of each text as the default recipe's web steps write them, up to the adult count."""
    from datatrove.data import Document

    from assay.stages.web.extract import HtmlExtractor
    from assay.stages.web.heuristics import WebHeuristicSignals
    from assay.stages.web.langid import LanguageId
    from assay.stages.web.safety import AdultContent

    meta = [{"source": "web", **({"content_type": "text/html"} if html else {}),
             **({"lang__code": lg} if langs and lg else {})} for lg in (langs or [None] * len(texts))]
    it = iter([Document(text=t, id=str(i), metadata=m) for i, (t, m) in enumerate(zip(texts, meta))])
    if html:
        it = LanguageId().run(WebHeuristicSignals().run(HtmlExtractor().run(it)))
    out = AdultContent().run(it)
    return [dict(d.metadata, _text=d.text) for d in out]


def _prefilter():
    from assay.stages.web import safety as S

    keys, subs = set(), []
    for f in os.listdir(S.LDNOOBW_DIR):
        if re.fullmatch(r"[a-z]{2,3}", f):
            words, phrases, sb, _ = S.load_wordlist(f)
            keys |= words | {p[0] for p in phrases}
            subs += sb
    sub_re = re.compile("|".join(map(re.escape, sorted(set(subs), key=len, reverse=True))))
    joined = re.compile(r"(?<!\w)\w\s*[&/+]\s*\w(?!\w)")
    indic = re.compile("[\u0900-\u0d7f]")

    def maybe(html: str) -> bool:
        t = S._norm(html)
        return bool(keys & set(S._WORD_RE.findall(t)) or sub_re.search(t) or joined.search(t) or indic.search(t))
    return maybe


def bench_docs(exclude: set[str], packages: list[str] | None = None) -> None:
    from assay.stages.decisions.rules import decide
    from assay.stages.web import safety as S

    now, old = rules()
    root = C.cache_dir() / "pkgs"
    names = packages or sorted(p.name for p in root.iterdir() if p.is_dir())
    names = [n for n in names if n not in exclude and not C.RESERVED_PACKAGE_RE.match(n)]
    maybe = _prefilter()
    seen = excl_now = excl_old = 0
    by_pkg, words = collections.Counter(), collections.Counter()
    for name in names:
        for p in sorted((root / name).rglob("*.html")):
            if not p.is_file() or p.stat().st_size <= 2048:
                continue
            seen += 1
            html = p.read_bytes().decode("utf-8", errors="replace")
            if not maybe(html):
                continue
            (m,) = adult_signals([html], html=True)
            if m.get("reject_reason") or not m.get("safety__adult_words"):
                continue
            a, b = decide(m, {"rules": now}).reason, decide(m, {"rules": old}).reason
            excl_now += a is not None
            excl_old += b is not None
            if b is not None:
                by_pkg[name] += 1
                t = S._WORD_RE.findall(S._norm(m["_text"][:S.ADULT_MAX_CHARS]))
                listed = S.load_wordlist("en")[0] | S.load_wordlist(m.get("lang__code") or "en")[0]
                words.update({w for w in t if w in listed})
                print(f"  {name} {p.relative_to(root / name)} share {m['safety__adult_share']:.3f} "
                      f"distinct {m['safety__adult_distinct']} {'EXCLUDED' if a else 'kept'}", flush=True)
    print(f"documentation pages {seen} ({len(names)} packages): excluded as adult by the rule {excl_now}, "
          f"by the share alone {excl_old} {dict(by_pkg)}; list words on those: {dict(words)}")


def bench_hplt(splits: list[str]) -> None:
    import numpy as np

    from assay.classifiers.data import build_source, default_data_root
    from assay.classifiers.metrics import roc_auc
    from assay.stages.decisions.rules import decide
    from assay.stages.web.langid import detect_language

    now, old = rules()
    root = default_data_root()
    rows = []
    for split in splits:
        spec = {"builder": "hplt_inspection", "path": "quality/hplt_inspection/*.tsv.gz", "split": split,
                "split_dataset": "hplt_inspection"}
        good = {e.group for e in build_source(dict(spec, label_kind="quality"), root)[0] if e.label == 1}
        rows += [(e, e.group in good) for e in build_source(dict(spec, label_kind="porn"), root)[0]]
    texts = [e.text for e, _ in rows]
    sig = adult_signals(texts, [detect_language(t)[0] for t in texts])
    share = np.array([m["safety__adult_share"] for m in sig])
    ex_now = np.array([decide(m, {"rules": now}).reason is not None for m in sig])
    ex_old = np.array([decide(m, {"rules": old}).reason is not None for m in sig])
    porn = np.array([e.label == 1 for e, _ in rows])
    good = np.array([g for _, g in rows])
    lang = np.array([e.lang for e, _ in rows])
    print(f"HPLT {'+'.join(splits)}: {len(rows)} rows; per language: porn, good, share ROC AUC (porn vs good); "
          "excluded porn / good / not porn, by the rule and (share alone)")
    for lg in ["all"] + sorted(set(lang[porn].tolist())):
        m = np.ones(len(rows), bool) if lg == "all" else lang == lg
        pg = m & (porn | good)
        auc = roc_auc(porn[pg].astype(int), share[pg]) if 0 < porn[pg].sum() < pg.sum() else float("nan")
        cell = lambda ex: f"{(ex & m & porn).sum()}/{(ex & m & good).sum()}/{(ex & m & ~porn).sum()}"  # noqa: E731
        print(f"  {lg:4} porn {int((m & porn).sum()):3d} good {int((m & good).sum()):5d} AUC {auc:.3f} "
              f"excluded {cell(ex_now)} ({cell(ex_old)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", action="store_true", help="every cached documentation page (less --exclude)")
    ap.add_argument("--packages", default="", help="with --docs: only these packages (comma-separated)")
    ap.add_argument("--exclude", default="", help="with --docs: packages never to read (comma-separated)")
    ap.add_argument("--hplt", default="", help="HPLT splits, e.g. train,dev (read test once, at the end)")
    a = ap.parse_args()
    if a.hplt:
        bench_hplt(a.hplt.split(","))
    if a.docs:
        bench_docs({x for x in a.exclude.split(",") if x}, [x for x in a.packages.split(",") if x] or None)


if __name__ == "__main__":
    main()
