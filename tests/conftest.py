from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _shared_data_dir() -> Path | None:
    env = os.environ.get("ASSAY_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data; skips the test with a clear reason when absent."""
    d = _shared_data_dir()
    if d is None:
        pytest.skip("../shared/data is absent (set ASSAY_SHARED_DATA to point at it)")
    return d
