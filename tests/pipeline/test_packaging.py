"""The wheel installs one top-level package, `assay` (issue 13): a user's own `pipeline.py` or `stages/`
can never shadow assay, and assay never shadows another distribution named `pipeline` or `classifiers`."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_puts_only_assay_in_site_packages(tmp_path: Path):
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = tmp_path.glob("assay-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"assay"}, sorted(tops)
    # the three layers, their data files and the shipped models are inside the namespace
    for must in ("assay/pipeline/cli.py", "assay/stages/decisions/spec.py", "assay/classifiers/model.py",
                 "assay/pipeline/recipes/default.yaml", "assay/classifiers/models/web.ftz",
                 "assay/stages/code/rules/default.yaml", "assay/io/warc.py"):
        assert must in names, must
    assert not any(n.startswith(("pipeline/", "stages/", "classifiers/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "assay = assay.pipeline.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_bare_layer_names_do_not_import_outside_the_checkout(tmp_path: Path):
    """From another directory, `import pipeline` fails and `import assay.pipeline` works."""
    code = ("import importlib.util as u; import assay.pipeline.cli, assay.stages, assay.classifiers;"
            "print(u.find_spec('pipeline') is None, u.find_spec('stages') is None, u.find_spec('classifiers') is None)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"]
