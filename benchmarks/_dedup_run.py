"""Run one four-phase dedup (assay or datatrove) over a JSONL corpus in this process and print a JSON
line with per-phase wall time, peak RSS and the result. Used by bench_dedup.py in a subprocess per
run so that peak memory is measured per pipeline.

    python benchmarks/_dedup_run.py {assay|datatrove} CORPUS_DIR WORK_DIR [--assignments]
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import deque
from pathlib import Path


def read_rank(corpus_dir: Path, rank: int):
    from datatrove.data import Document

    with open(corpus_dir / f"part{rank}.jsonl") as f:
        for line in f:
            d = json.loads(line)
            yield Document(text=d["text"], id=d["id"], metadata={})


def datatrove_signature_step(output_folder: str):
    """datatrove's MinhashDedupSignature with its default MinhashConfig (5-grams, 14x8, 64-bit
    xxhash) and the closest runnable word tokenizer (see bench_dedup.py for why)."""
    import xxhash
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
    from datatrove.utils.word_tokenizers import WordTokenizer

    class SplitTokenizer(WordTokenizer):
        # datatrove's default for English is SpaCyTokenizer("en") (spaCy not installed); its
        # simplify_text() already removed punctuation and collapsed whitespace, so splitting on
        # whitespace is what spaCy's tokenizer does on that text, minus spaCy's cost
        def word_tokenize(self, text: str) -> list[str]:
            return text.split()

        def sent_tokenize(self, text: str) -> list[str]:
            return [text]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            return [(0, len(text))]

    step = MinhashDedupSignature(output_folder, MinhashConfig(), language=SplitTokenizer())
    # datatrove 0.10.1's default xxhash64 passes str, which xxhash>=4 refuses: hash the UTF-8 bytes
    step._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8", "surrogatepass"))
    return step


def run_datatrove(corpus_dir: Path, work: Path, n_ranks: int, assignments: bool) -> dict:
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
    )

    cfg = MinhashConfig()
    t = {}
    t0 = time.perf_counter()
    step = datatrove_signature_step(str(work / "sigs"))
    for r in range(n_ranks):
        step.run(read_rank(corpus_dir, r), r, n_ranks)
    t["signatures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in range(cfg.num_buckets):
        MinhashDedupBuckets(str(work / "sigs"), str(work / "buckets"), config=cfg).run(None, b, cfg.num_buckets)
    t["buckets"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    MinhashDedupCluster(str(work / "buckets"), str(work / "clusters"), config=cfg, save_cluster_id=True).run(None, 0, 1)
    t["clusters"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = {"cluster": {}, "removed": []}
    for r in range(n_ranks):
        seen: list = []

        def tap(docs, seen=seen):  # (id, cluster id) of every document once the filter is done with it
            for d in docs:
                yield d
                seen.append((d.id, d.metadata.get("minhash_cluster_id", -1)))

        kept_ids = {d.id for d in MinhashDedupFilter(str(work / "clusters"), load_cluster_ids=True).run(
            tap(read_rank(corpus_dir, r)), r, n_ranks)}
        for doc_id, cid in seen:
            if cid != -1 and assignments:
                out["cluster"][doc_id] = str(cid)  # datatrove cluster ids are global
            if doc_id not in kept_ids:
                out["removed"].append(doc_id)
    t["filter"] = time.perf_counter() - t0
    return {"times": t, **(out if assignments else {"n_removed": len(out["removed"])})}


def run_assay(corpus_dir: Path, work: Path, n_ranks: int, assignments: bool) -> dict:
    from assay.stages.dedup.config import DedupConfig
    from assay.stages.dedup.minhash import DedupAnnotate, MinhashBuckets, MinhashClusters, MinhashSignatures

    cfg = DedupConfig()
    t = {}
    t0 = time.perf_counter()
    sig = MinhashSignatures(str(work / "sigs"), cfg)
    for r in range(n_ranks):
        # the signals phase stores each document's signals (here only the dedup ones, as JSON lines)
        with open(work / f"signals{r}.jsonl", "w") as f:
            for d in sig.run(read_rank(corpus_dir, r), r, n_ranks):
                f.write(json.dumps({k: v for k, v in d.metadata.items() if k.startswith("dedup__")}) + "\n")
    t["signatures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for task in range(cfg.n_units):
        deque(MinhashBuckets(str(work / "sigs"), str(work / "buckets"), cfg).run(None, task, cfg.n_units), maxlen=0)
    t["buckets"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    deque(MinhashClusters(str(work / "buckets"), str(work / "clusters"), cfg).run(None, 0, 1), maxlen=0)
    t["clusters"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = {"cluster": {}, "removed": []}
    ann = DedupAnnotate(str(work / "clusters"), cfg)
    def with_signals(r):
        with open(work / f"signals{r}.jsonl") as f:
            for d, line in zip(read_rank(corpus_dir, r), f):
                d.metadata.update(json.loads(line))
                yield d

    for r in range(n_ranks):
        for d in ann.run(with_signals(r), r, n_ranks):
            if d.metadata["dedup__cluster_size"] > 1:
                out["cluster"][d.id] = str(d.metadata["dedup__cluster_id"])
            if d.metadata["dedup__is_duplicate"]:
                out["removed"].append(d.id)
    t["filter"] = time.perf_counter() - t0
    return {"times": t, **(out if assignments else {"n_removed": len(out["removed"])})}


def main() -> None:
    impl, corpus_dir, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    assignments = "--assignments" in sys.argv
    n_ranks = len(list(corpus_dir.glob("part*.jsonl")))
    import logging

    import datatrove.utils.logging  # noqa: F401  (installs datatrove's handler, removed below)
    from loguru import logger

    logger.remove()
    work.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    res = (run_assay if impl == "assay" else run_datatrove)(corpus_dir, work, n_ranks, assignments)
    res["total"] = time.perf_counter() - t0
    # VmHWM: this process's own peak (ru_maxrss would include the parent's RSS inherited at fork)
    with open("/proc/self/status") as f:
        hwm = [line for line in f if line.startswith("VmHWM:")]
    res["peak_rss_mb"] = int(hwm[0].split()[1]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


if __name__ == "__main__":
    main()
