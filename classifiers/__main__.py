"""``python -m assay.classifiers {train,calibrate,annotate,evaluate,score}``."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def _parse_set(items: list[str]) -> dict:
    import yaml  # noqa: PLC0415

    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        out[k] = yaml.safe_load(v)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m assay.classifiers", description="fastText quality classifiers")
    sub = p.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("train", help="train a classifier from a recipe YAML")
    t.add_argument("--config", required=True)
    t.add_argument("--out", default="classifiers/models/")
    t.add_argument("--data-root", default=None, help="default: $ASSAY_SHARED_DATA or ../shared/data")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a recipe key (dotted)")
    t.add_argument("--quiet", action="store_true")

    c = sub.add_parser("calibrate", help="rebuild a trained model's calibration table from its recipe (no training)")
    c.add_argument("--config", required=True)
    c.add_argument("--out", default="classifiers/models/", help="folder holding the model files and card")
    c.add_argument("--data-root", default=None, help="default: $ASSAY_SHARED_DATA or ../shared/data")
    c.add_argument("--quiet", action="store_true")

    a = sub.add_parser("annotate", help="score texts with an LLM rubric through an OpenAI-compatible endpoint")
    a.add_argument("--endpoint", required=True, help="base URL, e.g. http://127.0.0.1:8000/v1")
    a.add_argument("--model", required=True)
    a.add_argument("--rubric", choices=["edu", "code"], required=True)
    a.add_argument("--input", required=True, help="JSONL/Parquet with a text field")
    a.add_argument("--output", required=True, help="labelled JSONL to write")
    a.add_argument("--text-field", default="text")
    a.add_argument("--limit", type=int, default=0, help="annotate at most N documents (0 = all)")
    a.add_argument("--threshold", type=float, default=3.0, help="label = score >= threshold")
    a.add_argument("--concurrency", type=int, default=8)
    a.add_argument("--max-chars", type=int, default=6000)
    a.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY if set")
    a.add_argument("--timeout", type=float, default=60.0)

    e = sub.add_parser("evaluate", help="evaluate a model on labelled JSONL/Parquet")
    e.add_argument("--model", required=True, help="shipped name or path")
    e.add_argument("--data", required=True)
    e.add_argument("--text-field", default="text")
    e.add_argument("--label-field", default="label")
    e.add_argument("--score-field", default=None)
    e.add_argument("--score-threshold", type=float, default=None)

    s = sub.add_parser("score", help="score texts (one JSON per line on stdin with a text field)")
    s.add_argument("--model", required=True)
    s.add_argument("--text-field", default="text")

    args = p.parse_args(argv)
    if args.cmd == "train":
        from assay.classifiers.combine import is_combiner_config  # noqa: PLC0415

        if is_combiner_config(args.config):
            from assay.classifiers.combine import load_combiner_recipe, train_combiner  # noqa: PLC0415

            cmd = "python -m assay.classifiers train " + " ".join(shlex.quote(x) for x in argv[1:])
            card = train_combiner(load_combiner_recipe(args.config), args.out, data_root=args.data_root,
                                  config_path=args.config, command=cmd, verbose=not args.quiet)
            print(json.dumps({"model": str(Path(args.out) / card["file"]),
                              "test_roc_auc": {k: v["all"]["roc_auc"] for k, v in card["metrics"]["test"].items()}}))
            return 0
        from assay.classifiers.train import load_recipe, train  # noqa: PLC0415

        recipe = load_recipe(args.config, _parse_set(args.set))
        cmd = "python -m assay.classifiers train " + " ".join(shlex.quote(x) for x in argv[1:])
        card = train(recipe, args.out, data_root=args.data_root, config_path=args.config, command=cmd,
                     verbose=not args.quiet)
        h = card["metrics"]["holdout"]
        print(json.dumps({"model": str(Path(args.out) / card["model_file"]), "bytes": card["sizes"]["model_bytes"],
                          "holdout_roc_auc": h["roc_auc"], "holdout_pr_auc": h["pr_auc"],
                          "eval_sets": {k: v["roc_auc"] for k, v in card["metrics"]["eval_sets"].items()}}))
        return 0
    if args.cmd == "calibrate":
        from assay.classifiers.train import load_recipe, recalibrate  # noqa: PLC0415

        cmd = "python -m assay.classifiers calibrate " + " ".join(shlex.quote(x) for x in argv[1:])
        card = recalibrate(load_recipe(args.config), args.out, data_root=args.data_root, config_path=args.config,
                           command=cmd, verbose=not args.quiet)
        print(json.dumps({"calibration": str(Path(args.out) / card["calibration"]["file"]),
                          "n_docs": card["calibration"]["n_docs"]}))
        return 0
    if args.cmd == "annotate":
        from assay.classifiers.annotate import annotate_file  # noqa: PLC0415

        stats = annotate_file(args.input, args.output, endpoint=args.endpoint, model=args.model, rubric=args.rubric,
                              text_field=args.text_field, limit=args.limit, threshold=args.threshold,
                              concurrency=args.concurrency, max_chars=args.max_chars, api_key=args.api_key,
                              timeout=args.timeout)
        print(json.dumps(stats))
        return 0 if stats["annotated"] > 0 or stats["read"] == 0 else 1
    if args.cmd == "evaluate":
        import numpy as np  # noqa: PLC0415

        from assay.classifiers import load  # noqa: PLC0415
        from assay.classifiers.data import build_source, default_data_root  # noqa: PLC0415
        from assay.classifiers.metrics import evaluate  # noqa: PLC0415

        spec = {"builder": "labelled", "path": str(Path(args.data).resolve()), "text_field": args.text_field,
                "label_field": args.label_field}
        if args.score_field:
            spec.update(score_field=args.score_field, score_threshold=args.score_threshold)
        exs, _ = build_source(spec, default_data_root())
        exs = [x for x in exs if x.label in (0, 1)]
        m = load(args.model)
        res = evaluate(np.array([x.label for x in exs]), m.score([x.text for x in exs]), threshold=m.threshold)
        print(json.dumps(res, indent=1))
        return 0
    if args.cmd == "score":
        from assay.classifiers import load  # noqa: PLC0415

        m = load(args.model)
        recs = [json.loads(line) for line in sys.stdin if line.strip()]
        scores = m.score([r.get(args.text_field, "") for r in recs])
        pct = m.percentile(scores)
        for r, sc, pc in zip(recs, scores, pct):
            print(json.dumps({**r, f"fasttext_{m.name}__score": float(sc), f"fasttext_{m.name}__pct": float(pc)}))
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
