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


@pytest.fixture(scope="session")
def debian_doc():
    """``debian_doc(name)``: the unpacked Debian package ``name`` (``apt-get download``, cached like bench_e2e's);
    the test skips with the reason when apt-get/dpkg are missing or the download fails."""
    import shutil
    import sys

    def fetch(name: str) -> Path:
        if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
            pytest.skip("apt-get/dpkg not available: Debian documentation packages cannot be fetched")
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        import _e2e_corpus

        got = _e2e_corpus.fetch_doc_packages(packages=(name,), log=lambda *a: None)
        if name not in got:
            pytest.skip(f"{name} could not be fetched with apt-get download")
        return got[name]

    return fetch
