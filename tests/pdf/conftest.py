"""Fixtures for the PDF tests: the PDF factory and the fake OpenAI-compatible server.

The helper modules live next to this file (``pdf_factory.py``, ``fake_openai.py``); they are loaded
by file location so no ``sys.path`` change is needed under any pytest import mode.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"assay_tests_pdf_{name}", _HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_factory = _load("pdf_factory")
_fake = _load("fake_openai")


@pytest.fixture(scope="session")
def pf():
    """PDF factory module (text_pdf, scanned_pdf, two_column_pdf, encrypted_pdf, page_text, ...)."""
    return _factory


@pytest.fixture(scope="session")
def fake_openai():
    """The fake server module (FakeOpenAIServer, olmocr_answer, image_key)."""
    return _fake


@pytest.fixture()
def ocr_server():
    srv = _fake.FakeOpenAIServer().start()
    try:
        yield srv
    finally:
        srv.stop()
