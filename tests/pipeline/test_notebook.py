"""The threshold-tuning notebook: runs from the repository root and from notebooks/, keeps its figures,
and the command it prints applies exactly the decisions it wrote, with the outcome it predicted."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO_ROOT / "notebooks" / "tune_thresholds.ipynb"


def execute(cwd: Path, env: dict[str, str], monkeypatch) -> nbformat.NotebookNode:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("ASSAY_RUN", "ASSAY_RUN_DIR", "ASSAY_FRAGMENT_OUT", "ASSAY_TUNED_OUT"):
        if k not in env:
            monkeypatch.delenv(k, raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def outputs(nb, kind: str | None = None) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if kind is None or o.output_type == kind]


def stdout_of(nb) -> str:
    return "".join(o.get("text", "") for o in outputs(nb, "stream") if o.get("name") == "stdout")


def test_notebook_renders_inline():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    src = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "matplotlib.use" not in src and "Agg" not in src
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and "RUN = None" in tagged[0].source


@pytest.mark.slow
def test_notebook_from_root_applies_what_it_predicts(default_run: Path, tmp_path: Path, monkeypatch):
    frag = tmp_path / "tuned.yaml"
    tuned = tmp_path / "tuned-run"
    nb = execute(REPO_ROOT, {"ASSAY_RUN": str(default_run), "ASSAY_FRAGMENT_OUT": str(frag),
                             "ASSAY_TUNED_OUT": str(tuned)}, monkeypatch)
    assert not outputs(nb, "error")
    images = [o for o in outputs(nb) if "image/png" in o.get("data", {})]
    assert len(images) >= 3, "histograms, retention curves and the tier curve are kept in the executed notebook"
    out = stdout_of(nb)
    data = yaml.safe_load(frag.read_text())
    assert data["decisions"]["drop_tiers"] == ["low"]
    assert next(r for r in data["decisions"]["rules"] if r["name"] == "min_words")["value"] == 100

    # the last line printed is the one command; it names exactly the fragment written
    command = out.strip().splitlines()[-1]
    argv = shlex.split(command)
    assert argv[:3] == ["assay", "run", "retier"], command
    assert f"decisions=@{frag}" in argv and f"retier_from={default_run}" in argv
    r = subprocess.run([sys.executable, "-m", "assay.pipeline.cli", *argv[1:]], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]

    applied = yaml.safe_load((tuned / "recipe.resolved.yaml").read_text())["decisions"]
    assert applied == data["decisions"], "the run applied exactly the fragment the notebook wrote"
    prediction = json.loads(next(ln for ln in out.splitlines() if ln.startswith("prediction: "))[len("prediction: "):])
    manifest = json.loads((tuned / "manifest.json").read_text())
    kept = {f"{s}/{t}": v["documents"] for s, tiers in manifest["by_source_tier"].items() for t, v in tiers.items()}
    excluded = {r: v["documents"] for r, v in manifest["excluded"]["by_reason"].items()}
    assert kept == prediction["kept"]
    assert excluded == prediction["excluded"]
    assert "tier_low" in excluded or not any(k.endswith("/low") for k in kept)


@pytest.mark.slow
def test_notebook_from_notebooks_dir_finds_a_repo_relative_run(default_run: Path, tmp_path: Path, monkeypatch):
    runs = REPO_ROOT / "runs"
    runs.mkdir(exist_ok=True)
    link = runs / f"_nbtest-{uuid.uuid4().hex[:8]}"
    link.symlink_to(default_run, target_is_directory=True)
    try:
        nb = execute(REPO_ROOT / "notebooks", {"ASSAY_RUN": f"runs/{link.name}",
                                                "ASSAY_FRAGMENT_OUT": str(tmp_path / "f.yaml")}, monkeypatch)
    finally:
        link.unlink()
    assert not outputs(nb, "error")
    assert f"run {link.resolve()}" in stdout_of(nb) or f"run {default_run.resolve()}" in stdout_of(nb)
    assert len([o for o in outputs(nb) if "image/png" in o.get("data", {})]) >= 3
    assert (tmp_path / "f.yaml").exists()


def test_make_notebook_installs_the_extra_and_starts_jupyterlab():
    r = subprocess.run(["make", "-n", "notebook"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ".[notebooks]" in r.stdout and "jupyter lab notebooks/tune_thresholds.ipynb" in r.stdout
    import re

    line = re.search(r"^notebooks = \[(.*)\]$", (REPO_ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    extra = [e.strip().strip('"') for e in line.split(",")]
    names = {e.split("==")[0] for e in extra}
    assert {"jupyterlab", "nbconvert", "matplotlib"} <= names and all("==" in e for e in extra)
