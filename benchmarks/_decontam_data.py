"""Planted benchmark items in web-like and PDF-like text (benchmarks/bench_decontam.py, tests/pack).

``web_like(item, host)``: the item dropped into a clean article as a quiz/forum paragraph (case and
whitespace changed, a "Q:"/"Answer:" frame). ``pdf_like(item, host)``: the item set as a PDF text
layer would give it: lines wrapped at ~70 characters, words hyphenated across line breaks, fi/fl
ligatures, a running header and page number interrupting it. Items come from the eval sets
(GSM8K, MATH, MMLU), hosts from clean text (news gold text, Wikipedia snippets)."""

from __future__ import annotations

import gzip
import json
import random
import re
import textwrap
from pathlib import Path


def gsm8k_items(root: Path) -> list[dict]:
    return [{"benchmark": "gsm8k", "id": f"gsm8k#{i}", "text": r["question"] + "\n" + r["answer"]}
            for i, r in enumerate(map(json.loads, open(root / "eval_sets/gsm8k/test.jsonl", encoding="utf-8")))]


def math_items(root: Path) -> list[dict]:
    rows = map(json.loads, gzip.open(root / "eval_sets/math/math-test.jsonl.gz", "rt", encoding="utf-8"))
    return [{"benchmark": "math", "id": f"math#{i}", "text": r["problem"] + "\n" + r["solution"]} for i, r in enumerate(rows)]


def mmlu_items(root: Path, limit: int = 3000) -> list[dict]:
    from assay.stages.signals.decontam import load_eval_items

    out = []
    for it in load_eval_items([str(root / "eval_sets/mmlu")]):
        out.append({"benchmark": "mmlu", "id": it.item_id, "text": it.text})
        if len(out) >= limit:
            break
    return out


def clean_hosts(root: Path, limit: int = 200) -> list[tuple[str, str]]:
    """(group, text): human gold main text of real news pages (cp1252), one group per page."""
    out = []
    for p in sorted((root / "html/ir_chaos/gold").glob("*.txt"))[:limit]:
        text = p.read_bytes().decode("cp1252", errors="replace")
        if len(text.split()) >= 150:
            out.append((p.stem, text))
    return out


def web_like(item: str, host: str, rng: random.Random) -> str:
    paras = [p for p in host.split("\n") if p.strip()]
    k = rng.randint(0, len(paras))
    q = " ".join(item.split())
    q = rng.choice([q, q.lower(), q.upper()[:1] + q[1:]])
    framed = rng.choice([f"Q: {q}", f"Homework question (can anyone help?)\n{q}", f"Practice problem. {q} Thanks!"])
    return "\n".join(paras[:k] + [framed] + paras[k:])


_LIG = {"fi": "\ufb01", "fl": "\ufb02", "ff": "\ufb00"}


def pdf_like(item: str, host: str, rng: random.Random, *, width: int = 70) -> str:
    text = " ".join((host[:1500] + " " + item + " " + host[1500:3000]).split())
    for a, b in _LIG.items():
        text = text.replace(a, b)
    lines = []
    for line in textwrap.wrap(text, width):
        words = line.split(" ")
        last = words[-1]
        if len(last) >= 8 and last.isalpha() and rng.random() < 0.5:  # hyphenate across the break
            cut = rng.randint(3, len(last) - 3)
            lines.append(" ".join(words[:-1] + [last[:cut] + "-"]))
            lines.append(last[cut:] + " ")
            continue
        lines.append(line)
    pos = rng.randint(5, max(6, len(lines) - 5)) if len(lines) > 10 else len(lines) // 2
    lines[pos:pos] = [f"{rng.randint(2, 300)}", "Journal of Applied Studies, Vol. 12"]
    return re.sub(r" \n", "\n", "\n".join(lines))


def hplt_english(root: Path) -> list[tuple[str, str]]:
    """(id, text): real random English web text from HPLT v2 (two 500-character excerpts per row)."""
    import csv

    out = []
    for p in sorted((root / "quality/hplt_inspection").glob("eng_Latn__batch*.tsv.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                if row.get("text_show"):
                    out.append((row["id"], row["text_show"]))
    return out
