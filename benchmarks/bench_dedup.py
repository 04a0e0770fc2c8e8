"""Dedup benchmark: assay's exact + MinHash dedup vs datatrove 0.10.1's four-phase MinHash.

    .venv/bin/python benchmarks/bench_dedup.py [--quick]

Corpus: real text (../shared/data readability/scrapinghub articles, Lee news background, CCNet
head documents when present; Python's pydoc topics, installed packages' METADATA descriptions and
/usr/share/common-licenses everywhere), long texts cut into <= 40k-char documents, plus injected
near-duplicates of ~45% of them: 5-30% word substitutions, reordered paragraphs, appended
boilerplate, edits + boilerplate. Ground truth: exact all-pairs Jaccard of assay's 5-word shingle
sets (sparse matrix product), so natural duplicates in the real text count too.

What datatrove runs (its defaults cannot run here, stated exactly):
- `MinhashDedupSignature(config=MinhashConfig())`: 5-grams, 14 buckets x 8 hashes, 64-bit xxhash,
  `simplify_text` normalisation: all its defaults;
- its default word tokenizer for English is `SpaCyTokenizer("en")` (`load_word_tokenizer("eng")`)
  and spaCy is not installed (its `WhitespaceTokenizer` fallback also calls spaCy "xx"): we pass a
  `WordTokenizer` that does `text.split()`, which on simplify_text's output (punctuation removed,
  whitespace collapsed) gives the same words as spaCy, without spaCy's cost (the issue measured
  spaCy-tokenized datatrove at 0.2-0.3 MB/s/core): the datatrove numbers here are an upper bound;
- its default `xxhash64` passes `str` to xxhash, which xxhash>=4 rejects; we hash the UTF-8 bytes.

Phases run sequentially in one process per pipeline (per-core numbers), 2 signature ranks, one task
per bucket (datatrove 14, assay 14 bands + 1 exact), 1 cluster task, 2 filter/annotate ranks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # benchmarks/ helpers (script directory, as when run directly)

from _dedup_corpus import build_corpus, scale_corpus, true_pairs  # noqa: E402
from _dedup_run import datatrove_signature_step  # noqa: E402

BINS = [0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0001]


def write_parts(docs: list[dict], folder: Path, n_ranks: int = 2) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(n_ranks):
        with open(folder / f"part{r}.jsonl", "w") as f:
            for d in docs[r::n_ranks]:
                f.write(json.dumps({"id": d["id"], "text": d["text"]}) + "\n")


def run_child(impl: str, corpus_dir: Path, work: Path, assignments: bool) -> dict:
    cmd = [sys.executable, str(HERE / "_dedup_run.py"), impl, str(corpus_dir), str(work)]
    if assignments:
        cmd.append("--assignments")
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{impl} run failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up (imports, caches)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def signature_throughput(docs: list[dict], repeats: int, tmp: Path) -> dict[str, float]:
    from collections import deque

    from datatrove.data import Document

    from assay.stages.dedup.config import DedupConfig
    from assay.stages.dedup.minhash import MinhashSignatures
    from assay.stages.dedup.shingles import band_hashes, compute_signatures

    texts = [d["text"] for d in docs]
    mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    cfg = DedupConfig()
    k = {"n": 0}

    def ours_step():
        k["n"] += 1
        step = MinhashSignatures(str(tmp / f"o{k['n']}"), cfg)
        deque(step.run((Document(text=t, id=str(i)) for i, t in enumerate(texts)), 0, 1), maxlen=0)

    def dt_step():
        k["n"] += 1
        step = datatrove_signature_step(str(tmp / f"d{k['n']}"))
        step.run((Document(text=t, id=str(i)) for i, t in enumerate(texts)), 0, 1)

    def ours_kernel():
        for s in range(0, len(texts), cfg.batch_docs):
            band_hashes(compute_signatures(texts[s : s + cfg.batch_docs], cfg).sigs, cfg)

    dt = datatrove_signature_step(str(tmp / "unused"))

    def dt_kernel():
        for t in texts:
            sh = dt.get_shingles(t)
            if sh.size:
                dt.get_signature(sh)

    return {
        "mb": mb,
        "assay_step": mb / median_time(ours_step, repeats),
        "datatrove_step": mb / median_time(dt_step, repeats),
        "assay_kernel": mb / median_time(ours_kernel, repeats),
        "datatrove_kernel": mb / median_time(dt_kernel, repeats),
    }


def estimator_error(docs: list[dict], pairs: dict, tmp: Path, seeds=(1, 2, 3)) -> dict[str, tuple[float, float, int]]:
    """Bias and RMSE of signature-estimated Jaccard vs true Jaccard (each method against the true
    Jaccard of its own shingle sets) over related pairs (true assay Jaccard >= 0.3), pooled over
    several permutation seeds (pairs share documents, so one seed's bias is noisy)."""
    from datatrove.pipeline.dedup.minhash import MinhashConfig

    from assay.stages.dedup.config import DedupConfig
    from assay.stages.dedup.shingles import compute_signatures

    texts = [d["text"] for d in docs]
    need = sorted({i for p in pairs for i in p})
    ours_err, dt_err = [], []
    for seed in seeds:
        sigs = compute_signatures(texts, DedupConfig(seed=seed)).sigs
        dt = datatrove_signature_step(str(tmp / "unused2"))
        dt.config = MinhashConfig(seed=seed)
        dt._parameters = None
        dt_sh = {i: dt.get_shingles(texts[i]) for i in need}
        dt_sig = {i: np.concatenate(dt.get_signature(dt_sh[i])) if dt_sh[i].size else None for i in need}
        dt_set = {i: set(dt_sh[i].ravel().tolist()) for i in need}
        for (i, j), jac in pairs.items():
            ours_err.append(float(np.mean(sigs[i] == sigs[j])) - jac)
            if dt_sig[i] is not None and dt_sig[j] is not None:
                a, b = dt_set[i], dt_set[j]
                dt_err.append(float(np.mean(dt_sig[i] == dt_sig[j])) - len(a & b) / len(a | b))
    f = lambda e: (float(np.mean(e)), float(np.sqrt(np.mean(np.square(e)))), len(e))  # noqa: E731
    return {"assay": f(ours_err), "datatrove": f(dt_err)}


def quality(docs: list[dict], pairs: dict, res: dict) -> dict:
    """Recall of true pairs (J >= 0.8) put in one cluster; precision of removed documents, where a
    removal is right when the document has, in its cluster, its injected original/variant or a
    document with true Jaccard >= 0.7 (the 14x8 S-curve midpoint is 0.72); strict variant: >= 0.8."""
    idx = {d["id"]: i for i, d in enumerate(docs)}
    cluster_of = {idx[k]: v for k, v in res["cluster"].items()}
    same = lambda i, j: i in cluster_of and cluster_of.get(i) == cluster_of.get(j)  # noqa: E731
    true8 = [p for p, j in pairs.items() if j >= 0.8]
    recall = sum(same(*p) for p in true8) / max(1, len(true8))
    best = defaultdict(float)  # best true Jaccard of a doc with another member of its cluster
    for (i, j), jac in pairs.items():
        if same(i, j):
            best[i] = max(best[i], jac)
            best[j] = max(best[j], jac)
    orig = {d["base"]: i for i, d in enumerate(docs) if d["kind"] == "original"}
    injected = set()
    for i, d in enumerate(docs):
        if d["kind"] != "original" and same(i, orig[d["base"]]):
            injected.update((i, orig[d["base"]]))
    removed = [idx[k] for k in res["removed"]]
    ok = [i in injected or best[i] >= 0.7 for i in removed]
    prec = sum(ok) / max(1, len(removed))
    prec8 = sum(best[i] >= 0.8 for i in removed) / max(1, len(removed))
    wrong = [docs[i]["id"] for i, good in zip(removed, ok) if not good]
    curve = []
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        ps = [p for p, j in pairs.items() if lo <= j < hi]
        curve.append((lo, hi, len(ps), sum(same(*p) for p in ps) / len(ps) if ps else float("nan")))
    return {"recall": recall, "n_true": len(true8), "removed": len(removed), "prec": prec, "prec8": prec8,
            "wrong": wrong, "curve": curve}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 repeat, 3x instead of 10x scaling")
    args = ap.parse_args()
    repeats = 1 if args.quick else 3
    scale = 3 if args.quick else 10

    from assay.stages.dedup.shingles import detection_probability, shingle_set

    t_start = time.perf_counter()
    docs = build_corpus(seed=0)
    mb1 = sum(len(d["text"].encode("utf-8", "surrogatepass")) for d in docs) / 1e6
    sets = [shingle_set(d["text"]) for d in docs]
    pairs = true_pairs([d["text"] for d in docs], sets, min_jaccard=0.3)
    big = scale_corpus(docs, scale)
    mbx = sum(len(d["text"].encode("utf-8", "surrogatepass")) for d in big) / 1e6
    kinds = defaultdict(int)
    for d in docs:
        kinds[d["kind"]] += 1
    print(f"corpus 1x: {len(docs)} docs, {mb1:.1f} MB ({dict(kinds)}); {scale}x: {len(big)} docs, {mbx:.1f} MB")
    print(f"true pairs with Jaccard >= 0.8: {sum(j >= 0.8 for j in pairs.values())}; >= 0.3: {len(pairs)}")

    with tempfile.TemporaryDirectory(prefix="bench_dedup_") as tmp_s:
        tmp = Path(tmp_s)
        write_parts(docs, tmp / "c1")
        write_parts(big, tmp / f"c{scale}")
        tp = signature_throughput(docs, repeats, tmp / "tp")
        err = estimator_error(docs, pairs, tmp)
        runs = {}
        for impl in ("assay", "datatrove"):
            runs[(impl, 1)] = run_child(impl, tmp / "c1", tmp / f"w_{impl}_1", assignments=True)
            runs[(impl, scale)] = run_child(impl, tmp / f"c{scale}", tmp / f"w_{impl}_{scale}", assignments=False)

    q = {impl: quality(docs, pairs, runs[(impl, 1)]) for impl in ("assay", "datatrove")}

    print("\n## Signature throughput, MB/s per core (1 process, medians of %d)" % repeats)
    print("| what | assay | datatrove | ratio |")
    print("|---|---|---|---|")
    print(f"| phase-1 step (hash + write + sort) | {tp['assay_step']:.2f} | {tp['datatrove_step']:.2f} | "
          f"{tp['assay_step'] / tp['datatrove_step']:.1f}x |")
    print(f"| signature kernel only | {tp['assay_kernel']:.2f} | {tp['datatrove_kernel']:.2f} | "
          f"{tp['assay_kernel'] / tp['datatrove_kernel']:.1f}x |")

    print("\n## Signature accuracy vs true Jaccard (pairs with true J >= 0.3, seeds 1-3 pooled; each vs its own shingles)")
    print("| impl | bias | RMSE | pair-seeds |")
    print("|---|---|---|---|")
    for impl in ("assay", "datatrove"):
        b, r, n = err[impl]
        print(f"| {impl} | {b:+.4f} | {r:.4f} | {n} |")

    print("\n## Detection quality, default settings (1x corpus; truth = assay 5-word shingle Jaccard)")
    print("| impl | recall of pairs J>=0.8 | removed | precision (injected or J>=0.7) | precision (J>=0.8 only) | wrong removals |")
    print("|---|---|---|---|---|---|")
    for impl in ("assay", "datatrove"):
        x = q[impl]
        print(f"| {impl} | {x['recall']:.3f} ({x['n_true']} pairs) | {x['removed']} | {x['prec']:.3f} | "
              f"{x['prec8']:.3f} | {len(x['wrong'])} |")

    print("\n## S-curve: share of pairs put in one cluster, by true Jaccard")
    print("| Jaccard | pairs | assay | datatrove | theory 1-(1-s^8)^14 at bin middle |")
    print("|---|---|---|---|---|")
    for (lo, hi, n, pa), (_, _, _, pd) in zip(q["assay"]["curve"], q["datatrove"]["curve"]):
        mid = (lo + min(hi, 1.0)) / 2
        print(f"| {lo:.2f}-{min(hi, 1.0):.2f} | {n} | {pa:.3f} | {pd:.3f} | {detection_probability(mid, 14, 8):.3f} |")

    print("\n## End-to-end four phases (1 process each, 1 run): wall seconds and peak RSS")
    print("| corpus | impl | signatures | buckets | clusters | filter/annotate | total s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for s, mb in ((1, mb1), (scale, mbx)):
        for impl in ("assay", "datatrove"):
            r = runs[(impl, s)]
            t = r["times"]
            print(f"| {s}x ({mb:.0f} MB) | {impl} | {t['signatures']:.2f} | {t['buckets']:.2f} | {t['clusters']:.2f} | "
                  f"{t['filter']:.2f} | {r['total']:.2f} | {r['peak_rss_mb']:.0f} |")
    for s in (1, scale):
        a, d = runs[("assay", s)], runs[("datatrove", s)]
        print(f"ratio {s}x: datatrove/assay wall {d['total'] / a['total']:.1f}x, "
              f"peak RSS assay/datatrove {a['peak_rss_mb'] / d['peak_rss_mb']:.2f}")
    a1, ax = runs[("assay", 1)], runs[("assay", scale)]
    print(f"assay peak RSS {scale}x / 1x: {ax['peak_rss_mb'] / a1['peak_rss_mb']:.2f} (corpus x{mbx / mb1:.1f})")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        xs = np.linspace(0, 1, 101)
        fig, ax_ = plt.subplots(figsize=(6, 4))
        ax_.plot(xs, detection_probability(xs, 14, 8), label="theory 14x8")
        for impl in ("assay", "datatrove"):
            c = q[impl]["curve"]
            ax_.plot([(lo + min(hi, 1)) / 2 for lo, hi, _, _ in c], [p for *_, p in c], "o-", label=impl)
        ax_.set_xlabel("true Jaccard")
        ax_.set_ylabel("detected")
        ax_.legend()
        out = HERE.parent / "out" / "bench_dedup_scurve.png"  # /out/ is git-ignored
        out.parent.mkdir(exist_ok=True)
        fig.savefig(out, dpi=100)
        print(f"S-curve plot: {out}")
    except ImportError:
        print("(matplotlib not installed: S-curve printed as a table only)")
    print(f"\nbenchmark wall time: {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
