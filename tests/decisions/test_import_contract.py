"""The import contract (docs/CONTRACT.md), checked in CI: import-linter's contracts from pyproject.toml, and
no bare top-level `pipeline` / `stages` / `classifiers` imports anywhere in the repository."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOPS = ("pipeline", "stages", "classifiers")


def _lint_root(tmp_path: Path) -> Path:
    """A tree where `assay` is the installed layout (assay/{pipeline,stages,classifiers}), as grimp needs it:
    the editable install maps the folders through an import hook that a static graph builder cannot see."""
    root = tmp_path / "root"
    (root / "assay").mkdir(parents=True)
    (root / "assay" / "__init__.py").write_text((REPO / "assay" / "__init__.py").read_text())
    for top in TOPS:
        os.symlink(REPO / top, root / "assay" / top)
    os.symlink(REPO / "assay" / "io", root / "assay" / "io")  # assay.io lives inside assay/
    return root


def _lint_imports(tmp_path: Path, config: Path) -> subprocess.CompletedProcess:
    root = _lint_root(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), sysconfig.get_paths()["purelib"]])}
    code = ("import sys\nfrom importlinter.cli import lint_imports_command\n"
            f"sys.argv = ['lint-imports', {str(config)!r}, '--no-cache']\nlint_imports_command()\n")
    # -S: no site hooks, so `assay` resolves to the tree above and not to the editable install
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def test_import_contracts_are_kept(tmp_path):
    pytest.importorskip("importlinter")
    res = _lint_imports(tmp_path, REPO / "pyproject.toml")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "BROKEN" not in out and "Contracts: 5 kept, 0 broken." in out, out[-3000:]


def test_the_contract_catches_a_violation(tmp_path):
    """A contract that the code breaks is reported broken (the check can fail)."""
    pytest.importorskip("importlinter")
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "assay"\n\n[[tool.importlinter.contracts]]\n'
        'name = "stages never import the decision layer"\ntype = "forbidden"\n'
        'source_modules = ["assay.stages.code"]\nforbidden_modules = ["assay.stages.decisions"]\n'
    )
    res = _lint_imports(tmp_path, config)
    assert res.returncode != 0 and "BROKEN" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]


def _bare_imports(source: str) -> list[str]:
    bad = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        bad += [n for n in names if n.split(".")[0] in TOPS]
    return bad


def _python_files() -> list[Path]:
    skip = {".venv", ".git", "node_modules", "runs", "build", "dist"}
    out = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = [d for d in dirnames if d not in skip and not d.endswith(".egg-info") and not d.startswith(".")]
        out += [Path(dirpath) / f for f in filenames if f.endswith((".py", ".ipynb"))]
    return sorted(out)


def test_no_bare_top_level_imports():
    """`pipeline`, `stages`, `classifiers` exist as other distributions on the package index, and a user's
    own `pipeline.py` would shadow them: the project imports only `assay.<name>`."""
    found = {}
    files = _python_files()
    assert len(files) > 50
    for f in files:
        if f.suffix == ".ipynb":
            cells = json.loads(f.read_text(encoding="utf-8")).get("cells", [])
            src = "\n".join("".join(c.get("source", [])) for c in cells if c.get("cell_type") == "code")
            src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
        else:
            src = f.read_text(encoding="utf-8")
        bad = _bare_imports(src)
        if bad:
            found[str(f.relative_to(REPO))] = bad
    assert not found, f"bare imports (use assay.<name>): {found}"


def test_the_bare_import_check_can_fail():
    assert _bare_imports("import pipeline.recipe\nfrom stages.web import x\nimport assay.stages") == [
        "pipeline.recipe", "stages.web"]
    assert _bare_imports("from . import stages\nimport classifiers") == ["classifiers"]
