from __future__ import annotations

from pathlib import Path

import pytest

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> Path:
    """The default recipe on the embedded sample, local executor, two tasks and two workers."""
    out = tmp_path_factory.mktemp("run") / "default"
    recipe = load_recipe(None, ["executor.tasks=2", "executor.workers=2"])
    result = run_recipe(recipe, out)
    assert [p.name for p in result.phases] == ["signals", "dedup_signatures", "dedup_buckets", "dedup_clusters", "decide_plan", "decide", "finalize"]
    return out
