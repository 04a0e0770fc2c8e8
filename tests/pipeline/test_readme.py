"""Every command in the README's ```bash blocks runs, in order, from a fresh working directory
(`assay ...` for real; `make TARGET` as a dry run of the repository's Makefile, since `make test` would run
this suite inside itself and `make run`/`make notebook` install into .venv)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    cmds = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):
                cmds.append(line)
    return cmds


def test_readme_has_commands_in_bash_blocks():
    cmds = readme_commands()
    assert any(c.startswith("make run") for c in cmds)
    assert sum(c.startswith("assay ") for c in cmds) >= 5
    unknown = [c for c in cmds if not c.startswith(("assay ", "make ")) and c != "assay"]
    assert not unknown, f"README bash commands this test does not know how to run: {unknown}"


@pytest.mark.slow
def test_every_readme_command_runs(tmp_path: Path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("COLUMNS", None)
    for cmd in readme_commands():
        argv = shlex.split(cmd)
        if argv[0] == "make":
            r = subprocess.run(["make", "-n", *argv[1:]], cwd=REPO, capture_output=True, text=True, env=env)
            assert r.returncode == 0, (cmd, r.stderr)
            continue
        r = subprocess.run([sys.executable, "-m", "assay.pipeline.cli", *argv[1:]], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, (cmd, r.stdout[-2000:], r.stderr[-3000:])
        if argv[1] == "show":
            assert not r.stdout.startswith("no "), (cmd, r.stdout)
            assert "── text ──" in r.stdout, (cmd, r.stdout[:2000])
        if argv[1] == "run":
            out = Path(argv[argv.index("--output") + 1]) if "--output" in argv else Path("runs") / (
                argv[2] if len(argv) > 2 and not argv[2].startswith("-") else "default")
            assert (tmp_path / out / "manifest.json").exists(), cmd
    # the README's tuning example did what it says
    import yaml

    stricter = yaml.safe_load((tmp_path / "runs" / "stricter" / "recipe.resolved.yaml").read_text())["decisions"]
    assert next(r for r in stricter["rules"] if r["name"] == "min_words")["value"] == 100
    assert next(t for t in stricter["tiers"] if t["name"] == "high")["min_bucket"] == 16
