"""``assay.io.paths.shown_path``: the one way the CLI and the model cards print a path."""

from __future__ import annotations

from pathlib import Path

from assay.io.paths import shown_path


def test_shown_path_is_relative_inside_the_working_directory_and_as_given_outside(tmp_path, monkeypatch):
    inside = tmp_path / "runs" / "a"
    inside.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert shown_path(inside) == str(Path("runs") / "a")
    assert shown_path("runs/a") == str(Path("runs") / "a")
    outside = tmp_path.parent / "elsewhere"
    assert shown_path(outside) == str(outside)
