"""Packing benchmark: best-fit decreasing vs concatenate-and-split on the default and code runs.

For each run (default recipe on the embedded sample; code recipe on ../shared/data/code) and each
sequence length, both algorithms pack the run's shards once (no repetition) with a byte-level BPE
tokenizer trained locally on this repository's sources (vocab 8,000; nothing downloaded):

  truncated share  documents whose tokens land in more than one sequence / documents
  padding share    padding tokens / tokens written
  tokens/s/core    document tokens packed per second with one task, one worker, one tokenizer thread
                   (RAYON_NUM_THREADS=1): read shards + tokenize + pack + write (the phase, as for the
                   datatrove anchor; the read-back check is not timed); median of --repeats

Anchors measured in the same run: concatenate-and-split (Megatron / datatrove DocumentTokenizer
layout: documents cut at sequence boundaries), and datatrove's own ``DocumentTokenizer`` throughput
on the same shards (tokenize + write, no packing). Nothing here is tuned: best-fit decreasing has no
parameters, so there is no train/dev/test split to report (the runs are the ones the recipes make).
The packed output of every configuration passes ``check_pack`` (datatrove reader round trip).

    .venv/bin/python benchmarks/bench_pack.py                 # both runs (the code run takes minutes)
    .venv/bin/python benchmarks/bench_pack.py --quick         # default run only, one sequence length
    .venv/bin/python benchmarks/bench_pack.py --code-run RUN  # reuse a finished code run (re-tiered with the tokenizer)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# one core per task: the tokenizers library would otherwise tokenize each batch on every core
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pack_data import local_training_texts, run_shipped, train_bpe  # noqa: E402


def _retier_with_tokenizer(src: Path, out: Path, tokenizer: Path) -> Path:
    """Exact token counts for a finished run without re-reading its inputs: decide + finalize only."""
    return run_shipped("retier", out, overrides=[f"retier_from={src}", f"output.tokenizer_path={tokenizer}"])


def _datatrove_anchor(run: Path, tokenizer: Path, work: Path) -> float:
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    t0 = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[ParquetReader(str(run / "output"), glob_pattern="**/shard-*.parquet", text_key="text", id_key="id"),
                  DocumentTokenizer(str(work / "dt"), tokenizer_name_or_path=str(tokenizer), shuffle_documents=False,
                                    eos_token="<|endoftext|>")],
        tasks=1, workers=1, logging_dir=str(work / "dt_logs"),
    ).run()
    dt = time.perf_counter() - t0
    stats = json.loads((work / "dt_logs" / "stats.json").read_text())
    tok = next(s for s in stats if "TOKENIZER" in s["name"])["stats"]["tokens"]
    return (tok["total"] if isinstance(tok, dict) else tok) / dt


def bench_run(name: str, run: Path, tokenizer: Path, seq_lens: list[int], work: Path, repeats: int) -> list[dict]:
    from statistics import median

    from assay.pipeline.manifest import load_manifest
    from assay.pipeline.pack import run_pack

    manifest = load_manifest(run)
    rows = []
    for L in seq_lens:
        speed: dict[str, list[float]] = {"best_fit": [], "concat": [], "datatrove": []}
        results = {}
        for rep in range(repeats):  # interleaved, so machine load hits every configuration alike
            speed["datatrove"].append(_datatrove_anchor(run, tokenizer, work / f"{name}-anchor-{L}-{rep}"))
            for alg in ("best_fit", "concat"):
                out = work / f"{name}-{alg}-{L}"
                if rep:
                    import shutil

                    shutil.rmtree(out)
                res = run_pack(run, out, tokenizer=str(tokenizer), seq_len=L, algorithm=alg, use_plan=False, tasks=1, workers=1)
                speed[alg].append(res["totals"]["content_tokens"] / res["seconds"]["pack"])
                results[alg] = res
        for alg in ("best_fit", "concat"):
            res, t = results[alg], results[alg]["totals"]
            rows.append({
                "run": name, "seq_len": L, "algorithm": alg, "documents": t["documents"],
                "truncated_documents": t["truncated_documents"], "truncated_share": t["truncated_share"],
                "padding_share": t["padding_share"], "sequences": t["sequences"], "content_tokens": t["content_tokens"],
                "tokens_per_s_per_core": median(speed[alg]), "datatrove_tokenizer_tokens_per_s_per_core": median(speed["datatrove"]),
                "repeats": repeats, "readback_ok": res["ok"],
                "manifest_tokens_equal": res["manifest_counts_comparable"] and t["unique_tokens"] == manifest["totals"]["tokens"],
            })
            r = rows[-1]
            print(f"{name:8s} L={L:5d} {alg:8s} docs={t['documents']:6d} truncated={100 * t['truncated_share']:6.2f}% "
                  f"padding={100 * t['padding_share']:6.3f}% tok/s/core={r['tokens_per_s_per_core']:,.0f} "
                  f"(datatrove DocumentTokenizer {r['datatrove_tokenizer_tokens_per_s_per_core']:,.0f}; medians of {repeats}) "
                  f"readback={'ok' if res['ok'] else 'FAILED'} manifest={'equal' if r['manifest_tokens_equal'] else 'DIFFERENT'}",
                  flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="default run only, seq_len 2048")
    ap.add_argument("--code-run", type=Path, help="a finished code-recipe run to reuse (re-tiered with the tokenizer)")
    ap.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    ap.add_argument("--repeats", type=int, default=3, help="timing repeats (medians reported)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_pack_"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tokenizer = train_bpe(work / "tokenizer.json", local_training_texts(), vocab_size=8000)
    print(f"tokenizer: byte-level BPE, vocab 8000, trained on this repository's sources ({time.perf_counter() - t0:.1f}s)")
    seq_lens = [2048] if args.quick else [2048, 8192]
    rows = []
    default = run_shipped("default", work / "default-run", tokenizer=tokenizer)
    reps = 1 if args.quick else args.repeats
    rows += bench_run("default", default, tokenizer, seq_lens, work, reps)
    if not args.quick:
        if args.code_run:
            code = _retier_with_tokenizer(args.code_run.resolve(), work / "code-run", tokenizer)
        else:
            code = run_shipped("code", work / "code-run", tokenizer=tokenizer)
        rows += bench_run("code", code, tokenizer, seq_lens, work, reps)
    print("\nsummary (truncated share / padding share):")
    for name in sorted({r["run"] for r in rows}):
        for L in seq_lens:
            bf = next(r for r in rows if r["run"] == name and r["seq_len"] == L and r["algorithm"] == "best_fit")
            cs = next(r for r in rows if r["run"] == name and r["seq_len"] == L and r["algorithm"] == "concat")
            ratio = cs["truncated_share"] / bf["truncated_share"] if bf["truncated_share"] else float("inf")
            print(f"  {name:8s} L={L:5d}  best-fit {100 * bf['truncated_share']:.2f}% / {100 * bf['padding_share']:.3f}%   "
                  f"concat-split (anchor) {100 * cs['truncated_share']:.2f}% / {100 * cs['padding_share']:.3f}%   "
                  f"-> {ratio:.1f}x fewer truncated documents")
    print(f"cores: 1 task, 1 worker, RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']} per configuration; "
          f"machine has {os.cpu_count()} cores (shared); total {time.perf_counter() - t0:.0f}s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
