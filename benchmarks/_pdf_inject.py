"""Seeded corruptions of clean page text, one per artifact detector (for bench_pdf.py).

Each injector returns ``(text, kwargs for detect_artifacts)``; the expected detector is the key.
They mimic real VLM OCR failure modes (olmOCR / FinePDFs reports): tail loops, repeated lines and
sentences, max-token truncation, character runs, degenerate low-entropy output, text invented on a
blank page, the answer of another page, broken tables, replacement glyphs, wrong script.
"""

from __future__ import annotations

import random
import re


def _sentences(text: str) -> list[str]:
    s = [x.strip() for x in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if len(x.strip()) > 20]
    return s or [" ".join(text.split()[:12])]


def tail_loop(text, rng, other):
    unit = rng.choice([" " + rng.choice(_sentences(text)), " \\cdot x", " | 0 | 0 |", " the the", "\n- item"])
    return text[: rng.randint(len(text) // 3, len(text))] + unit * rng.randint(8, 40), {}


def repeated_lines(text, rng, other):
    lines = [ln for ln in text.splitlines() if len(ln.strip()) >= 15] or [text[:40]]
    ln = rng.choice(lines)
    body = text.splitlines()
    k = max(6, len(body) // 2)
    pos = rng.randint(0, len(body))
    return "\n".join(body[:pos] + [ln] * k + body[pos:]), {}


def repeated_sentences(text, rng, other):
    s = rng.choice(_sentences(text))
    n = max(4, len(_sentences(text)) // 2)
    return text + " " + " ".join([s] * n), {}


def truncation(text, rng, other):
    cut = text[: rng.randint(len(text) // 4, max(len(text) // 4 + 1, len(text) - 10))]
    if rng.random() < 0.5:
        return cut, {"finish_reason": "length"}
    return cut + "\n\n<table><tr><th>Year</th><th>Value</th></tr><tr><td>2019</td><td>4.", {}


def char_run(text, rng, other):
    ch = rng.choice(["0", ".", "_", "x", "1", "=", "*", "\u2014"])
    pos = rng.randint(0, len(text))
    return text[:pos] + ch * rng.randint(45, 400) + text[pos:], {}


def low_entropy(text, rng, other):
    w = rng.choice(["ab", "the", "0 1", "la la", "= ="])
    return " ".join([w] * rng.randint(150, 600)), {}


def blank_hallucination(text, rng, other):
    return text, {"ink": 0.0}


def text_layer_disagreement(text, rng, other):
    return other, {"text_layer": text}


def table_garbage(text, rng, other):
    n = rng.randint(4, 12)
    if rng.random() < 0.5:
        rows = "".join("<tr>" + "<td></td>" * rng.randint(3, 6) + "</tr>" for _ in range(n))
        table = f"<table>{rows}</table>"
    else:
        table = "<table>" + "<tr><td>1</td><td>2" * n + "</table>"
    return text + "\n\n" + table, {}


def bad_chars(text, rng, other):
    chars = list(text)
    for _ in range(rng.randint(3, 30)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(["\ufffd", "\x07", "\x1b", "\x00"]))
    return "".join(chars), {}


_CYR = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                     "абцдефгхийклмнопярстуввхызАБЦДЕФГХИЙКЛМНОПЯРСТУВВХЫЗ")


def script_mismatch(text, rng, other):
    if rng.random() < 0.5:
        return text.translate(_CYR), {"text_layer": text}
    return text + "\n" + "模型输出了错误的语言内容" * rng.randint(60, 120), {"text_layer": text}


INJECTORS = {
    "tail_loop": tail_loop,
    "repeated_lines": repeated_lines,
    "repeated_sentences": repeated_sentences,
    "truncation": truncation,
    "char_run": char_run,
    "low_entropy": low_entropy,
    "blank_hallucination": blank_hallucination,
    "text_layer_disagreement": text_layer_disagreement,
    "table_garbage": table_garbage,
    "bad_chars": bad_chars,
    "script_mismatch": script_mismatch,
}


def make_cases(pages: list[str], seed: int = 0, per_page: int = 1) -> list[tuple[str, str, dict]]:
    """[(expected detector, corrupted text, detect kwargs)] over all pages and injectors."""
    rng = random.Random(seed)
    cases = []
    for i, text in enumerate(pages):
        for name, fn in INJECTORS.items():
            for _ in range(per_page):
                other = pages[(i + rng.randint(1, len(pages) - 1)) % len(pages)] if len(pages) > 1 else "x"
                t, kw = fn(text, rng, other)
                cases.append((name, t, kw))
    return cases
