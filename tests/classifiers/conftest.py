"""Session fixtures: a small realistic labelled set (files every CPython has) and a model trained
on it through the real CLI."""
from __future__ import annotations

import json
import re
import sysconfig
from pathlib import Path

import pytest


def _prose_and_code() -> tuple[list[str], list[str]]:
    import pydoc_data.topics as topics

    prose = []
    for _, v in sorted(topics.topics.items()):
        for para in re.split(r"\n\s*\n", v):
            para = " ".join(para.split())
            if len(para.split()) >= 25:
                prose.append(para)
    code = []
    std = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(std.glob("[a-s]*.py"))[:80]:
        txt = p.read_text(encoding="utf-8", errors="replace")
        for i in range(0, min(len(txt), 12_000), 1500):
            chunk = txt[i:i + 1500]
            if len(chunk.split()) >= 25:
                code.append(chunk)
    return prose, code


@pytest.fixture(scope="session")
def labelled_jsonl(tmp_path_factory) -> Path:
    """~1.5k real examples: Python language-reference paragraphs (label 1) vs stdlib source chunks (label 0)."""
    prose, code = _prose_and_code()
    d = tmp_path_factory.mktemp("labelled")
    path = d / "train.jsonl"
    with open(path, "w") as f:
        for i, t in enumerate(prose[:700]):
            f.write(json.dumps({"id": f"p{i}", "text": t, "label": "hq"}) + "\n")
        for i, t in enumerate(code[:700]):
            f.write(json.dumps({"id": f"c{i}", "text": t, "label": 0}) + "\n")
        f.write("{broken json\n")  # bad rows are skipped, not fatal
        f.write(json.dumps({"id": "x", "text": None, "label": 1}) + "\n")
    return path


RECIPE = """
name: tiny
description: test model
label_source: human
labelled:
  - {{name: file_labels, builder: labelled, path: "{data}"}}
eval_sets:
  same_file: [{{builder: labelled, path: "{data}", max_docs: 200}}]
calibration: {{include_holdout: true}}
holdout: 0.25
seed: 3
fasttext: {{dim: 16, epoch: 8, lr: 0.3, wordNgrams: 2, minCount: 1, bucket: 20000, thread: 1, seed: 0}}
quantize: {{cutoff: 5000, qnorm: true}}
"""


@pytest.fixture(scope="session")
def tiny_recipe(labelled_jsonl, tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("recipe") / "tiny.yaml"
    p.write_text(RECIPE.format(data=labelled_jsonl))
    return p


@pytest.fixture(scope="session")
def tiny_model(tiny_recipe, tmp_path_factory, ) -> Path:
    from assay.classifiers.__main__ import main

    out = tmp_path_factory.mktemp("models")
    assert main(["train", "--config", str(tiny_recipe), "--out", str(out), "--quiet"]) == 0
    return out / "tiny.ftz"
