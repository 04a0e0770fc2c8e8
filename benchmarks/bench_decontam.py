"""Decontamination of web-like and PDF-like text: recall on planted benchmark items, collateral on clean text.

Items: GSM8K (question + answer), MATH (problem + solution), MMLU (question + choices), the test
split of each by item (``splits.select(..., dataset="decontam_items")``). Hosts: human gold main
text of real news pages (ir_chaos), test split by page topic group; collateral also on the test
split of HPLT v2 English web text (quality/hplt_inspection). Each test item is planted into
a host as web text (quiz/forum framing, case changes) and as a PDF text layer (line wrapping,
hyphenation across line breaks, fi/fl/ff ligatures, a running header and page number inside).

  recall      planted documents flagged (excluded by the default recipe's rule) / planted documents
              (MMLU STEM questions also sit in math/mmlu_stem-test, so attribution may name either)
  collateral  clean hosts flagged (web form and PDF form, no item planted) / clean hosts

Step: the default recipe's ``decontamination_v1`` (all six eval-set folders, default thresholds).
Anchor measured in the same run: the same index without the prose normalisation of
stages/signals/decontam.py (what the code-only step did before it was generalised).

    .venv/bin/python benchmarks/bench_decontam.py            # 200 test items per benchmark
    .venv/bin/python benchmarks/bench_decontam.py --quick    # 40 per benchmark
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _decontam_data import clean_hosts, gsm8k_items, hplt_english, math_items, mmlu_items, pdf_like, web_like  # noqa: E402
from _web_data import shared_data_dir  # noqa: E402
from splits import select  # noqa: E402

EVAL_SETS = ["gsm8k", "math", "mmlu", "humaneval", "humaneval_multilang", "mbpp"]


def _rates(step, planted: list[tuple[str, str]], clean: list[str]) -> tuple[float, float, dict[str, float]]:
    per: dict[str, list[int]] = {}
    for bench, text in planted:
        sig = step.check(text)
        per.setdefault(bench, []).append(int(sig["decont__match"]))
    recall = sum(sum(v) for v in per.values()) / max(1, sum(len(v) for v in per.values()))
    fp = sum(step.check(t)["decont__match"] for t in clean) / max(1, len(clean))
    return recall, fp, {k: sum(v) / len(v) for k, v in per.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--per-benchmark", type=int, default=200)
    args = ap.parse_args()
    n = 40 if args.quick else args.per_benchmark
    root = shared_data_dir()
    t0 = time.perf_counter()
    from assay.stages.signals import decontam
    from assay.stages.signals.decontam import Decontamination

    step = Decontamination([str(root / "eval_sets" / e) for e in EVAL_SETS], missing="skip")
    _ = step.index
    print(f"index: {len(step.index):,} items ({time.perf_counter() - t0:.1f}s)")
    rng = random.Random(0)
    items = []
    for loader, bench in ((gsm8k_items, "gsm8k"), (math_items, "math"), (mmlu_items, "mmlu")):
        test = select(loader(root), lambda it: it["id"], "test", dataset="decontam_items")
        rng.shuffle(test)
        items += [(bench, it["text"]) for it in test[:n]]
    hosts = select(clean_hosts(root, limit=400), lambda h: h[0].rsplit("_", 1)[0], "test", dataset="ir_chaos")
    hosts = [h for _, h in hosts]
    web = [(b, web_like(t, rng.choice(hosts), rng)) for b, t in items]
    pdf = [(b, pdf_like(t, rng.choice(hosts), rng)) for b, t in items]
    hplt = [t for _, t in select(hplt_english(root), lambda r: r[0], "test", dataset="hplt_inspection")]
    clean_web = hosts + hplt
    clean_pdf = [pdf_like("", h, rng) for h in hosts]
    print(f"test split: {len(items)} items ({n} per benchmark), {len(hosts)} clean news pages (hosts), "
          f"{len(hplt)} HPLT English web texts (collateral only)")

    rows = []
    for label in ("generalised (prose normalisation)", "anchor: code-step matching (no normalisation)"):
        if label.startswith("anchor"):
            decontam.normalize_prose = lambda s: s  # the tokenizers look the function up at call time
            step._index = decontam.build_index(step.eval_sets, missing="skip")
        t1 = time.perf_counter()
        wr, wfp, wper = _rates(step, web, clean_web)
        pr, pfp, pper = _rates(step, pdf, clean_pdf)
        dt = time.perf_counter() - t1
        rows.append((label, wr, wfp, pr, pfp, wper, pper, dt))
    for label, wr, wfp, pr, pfp, wper, pper, dt in rows:
        print(f"\n{label}  ({dt:.0f}s)")
        print(f"  web-like  recall {100 * wr:5.1f}%  " + "  ".join(f"{k} {100 * v:.1f}%" for k, v in wper.items())
              + f"   collateral {100 * wfp:.2f}% of {len(clean_web)} clean texts (news + HPLT)")
        print(f"  PDF-like  recall {100 * pr:5.1f}%  " + "  ".join(f"{k} {100 * v:.1f}%" for k, v in pper.items())
              + f"   collateral {100 * pfp:.2f}% of {len(clean_pdf)} clean pages")
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
