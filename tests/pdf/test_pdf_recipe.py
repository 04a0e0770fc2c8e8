"""The PDF recipe end to end through `assay`, on shared PDFs, against a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe
from assay.stages.common.store import read_signals


@pytest.mark.slow
@pytest.mark.shared_data
def test_pdf_recipe_routes_ocr_and_text_layer(shared_data: Path, tmp_path: Path, ocr_server, fake_openai):
    base = shared_data / "pdf"
    body = ("# Scanned page\n\nThe committee met on Tuesday and approved the budget for the new library "
            "wing, after a long discussion about the reading rooms and the archive. The architect presented "
            "two plans; the second keeps the old facade and adds a glass hall for the study rooms, which the "
            "members preferred because it costs less to heat in winter.\n")
    ocr_server.default = {"text": fake_openai.olmocr_answer(body)}
    paths = [base / "docling" / "normal_4pages.pdf", base / "docling" / "2305.03393v1-pg9.pdf",
             base / "ocrmypdf_scanned" / "skew.pdf",
             base / "pypdf_sample_files" / "005-libreoffice-writer-password"]
    recipe = load_recipe("pdf", [
        f"sources.0.reader.params.paths={json.dumps([str(p) for p in paths])}",
        f"sources.0.steps.2.params.endpoint={ocr_server.url}",
        "sources.0.steps.2.params.model=olmocr-test",
        "sources.0.steps.2.params.max_side=512",
        "sources.0.steps.2.params.request_timeout_s=10",
        "executor.tasks=1", "executor.workers=1",
    ])
    out = tmp_path / "pdf"
    run_recipe(recipe, out)
    store = read_signals(out / "signals")
    statuses = [s for v in store["pdf__page_status"].drop_nulls().to_list() for s in json.loads(v)]
    assert "ocr" in statuses and "text" in statuses  # both routes exercised
    assert len(ocr_server.requests) >= 1
    excluded = pl.concat([pl.read_parquet(p) for p in (out / "excluded").glob("*.parquet")], how="diagonal_relaxed")
    kept = pl.concat([pl.read_parquet(p) for p in (out / "output").rglob("*.parquet")], how="diagonal_relaxed")
    assert kept.height + excluded.height == store.height == len(paths)
    assert "pdf_encrypted" in set(excluded["reason"].to_list())
    assert kept.filter(pl.col("text").str.contains("approved the budget")).height >= 1
    # the routing share is stored per document
    assert store["pdf__ocr_share"].drop_nulls().max() > 0
