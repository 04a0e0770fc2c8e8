"""Scaling and memory of the executor layer (assay.pipeline.executors), measured in the same run.

    .venv/bin/python benchmarks/bench_scaling.py [--docs N] [--repeats R] [--no-ray]

Workload: one datatrove phase JsonlReader -> MinHash signature (datasketch, 128 permutations over
word 5-gram shingles: the per-document cost of near-dedup) -> ParquetWriter, 4 tasks over 4 input
files. Documents are synthetic: words drawn (seeded) from the vocabulary of the CCNet head sample in
../shared/data/quality (a built-in word list when absent), 300 words each.

Table 1 - throughput (documents/s, median of --repeats runs, wall time of run_phases):
  anchor: local executor, 1 worker;  compared: local 2 workers;  Ray (private 2-CPU instance,
  2 concurrent tasks), with Ray's start-up time (ray.init) reported separately and excluded.
Table 2 - memory: peak RSS of one task (the whole process, local executor with 1 worker, so the
  task runs in-process) over N and 10*N documents, each size in a fresh interpreter.
  anchor: the N-document run.
Table 3 - decide phase with mixture rebalancing, 2 to 64 tasks over the same signal store
  (--decide-docs code documents, ~1.5 KB of text each, 5 languages, one rule, rebalancing by language):
  anchor: every decide task plans the mixture itself from the whole store (text included), as the
  decide step did before the `plan` phase; compared: the one-task `plan` phase writes plan.json once
  and every decide task reads it (`PlannedDecide`). Per T, tasks 0, T/2 and T-1 run in-process (no
  pool: only the task's own work is timed, as CPU seconds of the process, so other load on a shared
  machine does not count), median over them and --repeats; "all tasks" = per-task x T.
  `--decide-only` runs just this table.
"""

from __future__ import annotations

import argparse
import os
import gzip
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "quality" / "dolma_ccnet_head"
FALLBACK_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but "
    "have an they you were their one all we can her has there been if more when will would who so no "
    "data model river city music energy science history system network language market water policy"
).split()


def vocabulary() -> list[str]:
    words: set[str] = set()
    for path in sorted(SHARED.glob("*.jsonl.gz")) if SHARED.is_dir() else []:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                words.update(w for w in json.loads(line).get("text", "").split() if w.isalpha())
    return sorted(words) if len(words) > 500 else FALLBACK_WORDS


def make_inputs(folder: Path, *, n_files: int, docs: int, words_per_doc: int = 300, seed: int = 0) -> None:
    vocab = vocabulary()
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_file = docs // n_files
    for f in range(n_files):
        with gzip.open(folder / f"part_{f:03d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as fh:
            for d in range(per_file):
                text = " ".join(rng.choices(vocab, k=words_per_doc))
                fh.write(json.dumps({"id": f"{f}-{d}", "text": text}) + "\n")


def minhash_signature(data, rank: int = 0, world_size: int = 1):
    """The per-document work: a 128-permutation MinHash over word 5-grams (datasketch)."""
    import numpy as np
    from datasketch import MinHash

    for doc in data:
        words = doc.text.split()
        shingles = [" ".join(words[i : i + 5]).encode() for i in range(max(1, len(words) - 4))]
        m = MinHash(num_perm=128, seed=1)
        m.update_batch(shingles)
        doc.metadata["minhash__min"] = int(np.min(m.hashvalues))
        yield doc


def build(kind: str, inputs: Path, out: Path, *, tasks: int, workers: int, settings: dict | None = None):
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import ParquetWriter

    from assay.pipeline.executors import make_executor

    steps = [
        JsonlReader(str(inputs), glob_pattern="*.jsonl.gz"),
        minhash_signature,
        ParquetWriter(str(out / "data"), output_filename="${rank}.parquet"),
    ]
    return make_executor(
        kind, steps, tasks=tasks, workers=workers, logging_dir=str(out / "logs"), name="bench", settings=settings
    )


def timed_run(kind: str, inputs: Path, work: Path, *, tasks: int, workers: int, settings=None) -> float:
    from assay.pipeline.executors import run_phases

    out = Path(tempfile.mkdtemp(dir=work))
    ex = build(kind, inputs, out, tasks=tasks, workers=workers, settings=settings)
    t0 = time.perf_counter()
    run_phases([ex])
    dt = time.perf_counter() - t0
    shutil.rmtree(out)
    return dt


def current_rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_child(inputs: str, out: str) -> None:
    """Run one task in this process and print its peak RSS (MiB)."""
    import datasketch  # noqa: F401  (imported before the baseline, like the rest of the stack)
    import pyarrow.parquet  # noqa: F401

    from assay.pipeline.executors import run_phases

    ex = build("local", Path(inputs), Path(out), tasks=1, workers=1)
    baseline = current_rss_mib()
    run_phases([ex])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": peak, "growth_mib": peak - baseline}))


def peak_rss(inputs: Path, work: Path) -> tuple[float, float]:
    """(peak RSS, peak RSS minus the RSS after imports) of one task in a fresh interpreter, MiB."""
    out = Path(tempfile.mkdtemp(dir=work))
    proc = subprocess.run(
        [sys.executable, __file__, "--rss-child", str(inputs), str(out)], capture_output=True, text=True, check=True
    )
    shutil.rmtree(out)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    return res["peak_rss_mib"], res["growth_mib"]


LANGS = ("python", "javascript", "java", "go", "rust")


def make_store(folder: Path, docs: int, *, parts: int = 128, seed: int = 0) -> None:
    """A synthetic signal store: code documents with the signals decide and planning read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from assay.stages.output.tokens import estimate_tokens

    vocab = vocabulary()
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_part = docs // parts  # 128 parts: every task of a 64-task phase gets the same share
    for part in range(parts):
        rows = []
        for i in range(per_part):
            text = "\n".join(" ".join(rng.choices(vocab, k=12)) for _ in range(rng.randint(10, 30)))
            rows.append({
                "id": f"doc-{part}-{i}", "text": text, "source": "code", "reject_reason": None,
                "code__language": rng.choice(LANGS), "code__alpha_fraction": rng.random(),
                "doc__bytes": len(text.encode()), "doc__tokens": estimate_tokens(text),
                "dedup__doc_key": (part << 32) | i,
            })
        pq.write_table(pa.Table.from_pylist(rows), folder / f"part-{part:05d}-00000.parquet")


DECIDE_SPEC = {
    "code_rules": None,
    "rules": [{"name": "alpha", "source": "code", "signal": "code__alpha_fraction", "op": ">=", "value": 0.05}],
    "rebalance": {"source": "code", "key": "code__language", "unit": "bytes",
                  "weights": {"javascript": 0.5, "java": 0.7}, "caps": {"python": 200_000}},
}


def decide_task_seconds(store: Path, plan_file: Path | None, rank: int, world: int) -> float:
    """One decide task (store reader -> decide), in-process; plan_file None: the task plans itself."""
    from assay.stages.common.store import SignalStoreReader
    from assay.stages.decisions.plan_step import PlannedDecide
    from assay.stages.decisions.step import Decide

    step = Decide(DECIDE_SPEC, store_folder=str(store)) if plan_file is None else PlannedDecide(
        DECIDE_SPEC, plan_file=str(plan_file))
    t0 = time.process_time()  # CPU seconds (all threads): robust to other processes on a shared machine
    for _ in step.run(SignalStoreReader(str(store)).run(None, rank, world), rank, world):
        pass
    return time.process_time() - t0


def decide_scaling(work: Path, docs: int, repeats: int, task_counts=(2, 4, 8, 16, 32, 64)) -> None:
    from assay.stages.decisions.plan_step import MixturePlan

    store = work / "store"
    make_store(store, docs)
    plan_file = work / "plan" / "plan.json"
    plan_times = []
    decide_task_seconds(store, None, 0, 64)  # warm-up: imports, file cache
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in MixturePlan(str(store), DECIDE_SPEC, str(plan_file)).run(None, 0, 1):
            pass
        plan_times.append(time.process_time() - t0)
    rows = []
    for world in task_counts:
        ranks = sorted({0, world // 2, world - 1})
        per = {}
        for mode, pf in (("anchor", None), ("plan", plan_file)):
            per[mode] = statistics.median(
                decide_task_seconds(store, pf, r, world) for _ in range(repeats) for r in ranks
            )
        rows.append([
            str(world), f"{per['anchor']:.3f}", f"{per['anchor'] * world:.1f}",
            f"{per['plan']:.3f}", f"{per['plan'] * world:.2f}", f"{per['plan'] * world / docs * 1e6:.1f}",
        ])
    table(
        f"decide phase, {docs} documents, median of {repeats} x ranks (0, T/2, T-1); plan phase (once): "
        f"{statistics.median(plan_times):.2f} CPU s",
        ["tasks", "anchor CPU s/task", "anchor all tasks", "plan CPU s/task", "plan all tasks", "plan CPU us/doc"],
        rows,
    )


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=8000, help="documents for the throughput runs")
    ap.add_argument("--rss-docs", type=int, default=1000, help="N for the memory runs (N and 10*N)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--decide-docs", type=int, default=20000, help="documents of the decide-scaling store")
    ap.add_argument("--decide-only", action="store_true", help="run only the decide-scaling table")
    ap.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(*args.rss_child)
        return

    from datatrove.utils.logging import logger

    logger.remove()  # keep the table readable
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bench_scaling_"))
    if args.decide_only:
        try:
            decide_scaling(work, args.decide_docs, args.repeats)
            print(f"(1-min load average: {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end, "
                  f"on {os.cpu_count()} CPUs)")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        inputs = work / "inputs"
        make_inputs(inputs, n_files=4, docs=args.docs)
        tasks = 4
        configs = [("local, 1 worker (anchor)", "local", 1, None), ("local, 2 workers", "local", 2, None)]
        results: dict[str, list[float]] = {}
        ray_init = None
        for name, kind, workers, settings in configs:
            results[name] = [timed_run(kind, inputs, work, tasks=tasks, workers=workers) for _ in range(args.repeats)]
        # fixed cost of a run (pool start-up, one task per worker): 4 tasks over 4 one-document files
        tiny = work / "tiny"
        make_inputs(tiny, n_files=4, docs=4)
        overhead = {
            w: statistics.median(timed_run("local", tiny, work, tasks=tasks, workers=w) for _ in range(args.repeats))
            for w in (1, 2)
        }
        if not args.no_ray:
            try:
                import ray
            except ImportError:
                print("ray not installed: skipping the Ray row (pip install 'assay[ray]')")
            else:
                t0 = time.perf_counter()
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                ray_init = time.perf_counter() - t0
                try:
                    name = "ray, 2 CPUs, 2 concurrent tasks"
                    settings = {"mem_per_cpu_gb": 1}
                    results[name] = [
                        timed_run("ray", inputs, work, tasks=tasks, workers=2, settings=settings)
                        for _ in range(args.repeats)
                    ]
                finally:
                    ray.shutdown()
        anchor = statistics.median(results[configs[0][0]])
        rows = []
        for name, times in results.items():
            med = statistics.median(times)
            rows.append([name, f"{med:.2f}", f"{args.docs / med:,.0f}", f"{anchor / med:.2f}x"])
        table(
            f"throughput: {args.docs} docs, {tasks} tasks, median of {args.repeats}",
            ["executor", "seconds", "docs/s", "vs anchor"],
            rows,
        )
        if ray_init is not None:
            print(f"(ray.init of the private instance: {ray_init:.1f} s, not included)")
        print(
            f"(fixed cost of a 4-task run with 4 documents: {overhead[1]:.2f} s with 1 worker, {overhead[2]:.2f} s"
            " with 2 workers: process start-up, paid once per phase)"
        )

        small, big = work / "rss_small", work / "rss_big"
        make_inputs(small, n_files=1, docs=args.rss_docs, seed=1)
        make_inputs(big, n_files=1, docs=10 * args.rss_docs, seed=1)
        runs_small = [peak_rss(small, work) for _ in range(args.repeats)]
        runs_big = [peak_rss(big, work) for _ in range(args.repeats)]
        rss_small, grow_small = (statistics.median(x) for x in zip(*runs_small))
        rss_big, grow_big = (statistics.median(x) for x in zip(*runs_big))
        table(
            f"peak RSS of one task (median of {args.repeats}); growth = peak minus the RSS before the run (after imports)",
            ["input", "peak RSS MiB", "vs anchor", "growth MiB"],
            [
                [f"{args.rss_docs} docs (anchor)", f"{rss_small:.0f}", "1.00x", f"{grow_small:.0f}"],
                [f"{10 * args.rss_docs} docs (10x)", f"{rss_big:.0f}", f"{rss_big / rss_small:.2f}x", f"{grow_big:.0f}"],
            ],
        )
        print(
            f"(1-min load average: {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end, on {os.cpu_count()} CPUs;"
            " a load above the CPU count means other processes share the machine and scaling numbers are low)"
        )
        decide_scaling(work, args.decide_docs, args.repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
