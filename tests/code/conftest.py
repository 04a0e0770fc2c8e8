"""Helpers for code tests: locate real files at test time (never copied into the repo)."""

from __future__ import annotations

import io
import sysconfig
import tarfile
from functools import lru_cache
from pathlib import Path

import pytest

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def stdlib_file(rel: str) -> tuple[str, bytes]:
    p = STDLIB / rel
    if not p.is_file():
        pytest.skip(f"stdlib file {rel} not present on this machine")
    return rel, p.read_bytes()


@lru_cache(maxsize=32)
def _archive(path: str) -> dict[str, bytes]:
    import zstandard

    with open(path, "rb") as fh:
        data = zstandard.ZstdDecompressor().stream_reader(fh).read()
    tf = tarfile.open(fileobj=io.BytesIO(data))
    return {m.name.removeprefix("./"): tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}


def archive_member(shared: Path, rel_archive: str, member: str) -> tuple[str, bytes]:
    files = _archive(str(shared / rel_archive))
    if member not in files:
        pytest.skip(f"{member} not in {rel_archive}")
    return member, files[member]


def shared_file(shared: Path, rel: str) -> tuple[str, bytes]:
    p = shared / rel
    if not p.is_file():
        pytest.skip(f"{rel} missing from shared data")
    return p.name, p.read_bytes()
