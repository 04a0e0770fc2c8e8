from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK = REPO_ROOT / "notebooks" / "tune_thresholds.ipynb"


@pytest.mark.slow
def test_tune_thresholds_notebook_runs_end_to_end(default_run: Path, tmp_path: Path, monkeypatch):
    frag = tmp_path / "fragment.yaml"
    monkeypatch.setenv("ASSAY_RUN_DIR", str(default_run))
    monkeypatch.setenv("ASSAY_FRAGMENT_OUT", str(frag))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    data = yaml.safe_load(frag.read_text())
    assert data["decisions"]["drop_tiers"] == ["low"]
