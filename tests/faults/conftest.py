"""Fixtures for the fault suite. The input generators live in ``faultgen.py`` next to this file and are
loaded by file location (no ``sys.path`` change, works under ``--import-mode=importlib``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("assay_tests_faults_faultgen", Path(__file__).with_name("faultgen.py"))
_faultgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_faultgen)


@pytest.fixture(scope="session")
def fg():
    """The generator module: bad and good inputs, recipe writer, run readers, fake OCR servers."""
    return _faultgen
