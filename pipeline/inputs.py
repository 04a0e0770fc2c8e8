"""The input paths a recipe names: the embedded sample's `sample:` names resolved, folders expanded.

Shared by the phase builder (input checks), the runner (increments) and finalize (the manifest's inputs),
so none of them imports another for it.

Inputs are local paths or fsspec URLs (``file://``, ``memory://``, ``s3://`` ...), as the readers (datatrove's
``BaseDiskReader``) accept both: a local path is a ``Path``; a URL stays a ``str`` (``Path`` would fold its
``//``) and is checked and listed through fsspec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.pipeline.recipe import Recipe, RecipeError

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"


def resolve_value(value: Any) -> Any:
    """`sample:web` / `sample:code` / `sample:pdf` -> the embedded sample's folders."""
    if isinstance(value, str) and value.startswith("sample:"):
        p = SAMPLE_DIR / value.split(":", 1)[1]
        if not p.exists():
            raise RecipeError(f"no embedded sample named '{value}'")
        return str(p)
    if isinstance(value, list):
        return [resolve_value(v) for v in value]
    if isinstance(value, dict):
        return {k: resolve_value(v) for k, v in value.items()}
    return value


def is_url(path: str | Path) -> bool:
    """An fsspec URL (``<protocol>://...``) rather than a local path."""
    return isinstance(path, str) and "://" in path and path.split("://", 1)[0].isidentifier()


def as_input(path: str | Path) -> Path | str:
    """A local path as ``Path``, an fsspec URL as it is."""
    return path if is_url(path) else Path(path)


def url_fs(url: str):
    """``(filesystem, path inside it)`` for an fsspec URL."""
    from fsspec.core import url_to_fs

    return url_to_fs(url)


def local_path(path: Path | str) -> Path | None:
    """The local file-system path of an input (``file://`` URLs included); None for other file systems."""
    if not is_url(path):
        return Path(path)
    fs, inner = url_fs(str(path))
    from fsspec.implementations.local import LocalFileSystem

    return Path(inner) if isinstance(fs, LocalFileSystem) else None


def input_exists(path: Path | str) -> bool:
    """Does the input exist (through fsspec for URLs; a file system that cannot be reached counts as not)?"""
    if not is_url(path):
        return Path(path).exists()
    try:
        fs, inner = url_fs(str(path))
        return bool(fs.exists(inner))
    except Exception:  # noqa: BLE001 - missing driver, no credentials, no network: the input is not there
        return False


def input_paths(recipe: Recipe) -> list[Path | str]:
    """Every input path named by the recipe's readers (resolved), for checks and the manifest: local paths
    as ``Path``, fsspec URLs as ``str``."""
    out: list[Path | str] = []
    for src in recipe.sources:
        params = resolve_value(src.reader.params)
        paths = params.get("paths") or params.get("data_folder") or []
        if isinstance(paths, str):
            paths = [paths]
        out.extend(as_input(p) for p in paths)
    return out


def expand_inputs(paths: list[Path | str]) -> list[Path | str]:
    """The files under the inputs (folders expanded recursively); URL inputs are listed through fsspec and
    come back as URLs of the same protocol."""
    files: list[Path | str] = []
    for p in paths:
        if is_url(p):
            try:
                fs, inner = url_fs(str(p))
                if fs.isdir(inner):
                    found = sorted(fs.find(inner))
                elif fs.exists(inner):
                    found = [inner]
                else:
                    found = []
            except Exception:  # noqa: BLE001 - unreachable file system: nothing listed (check_inputs refused it)
                found = []
            files.extend(fs.unstrip_protocol(f) for f in found)
            continue
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        elif p.exists():
            files.append(p)
    return files
