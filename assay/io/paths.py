"""Paths as people read them in messages and reports."""

from __future__ import annotations

from pathlib import Path

__all__ = ["shown_path"]


def shown_path(path: str | Path) -> str:
    """``path`` as the user would type it: relative to the working directory when inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
