"""End to end: datatrove local executor, 2 tasks, real shared code sets -> JSONL with code signals."""

from __future__ import annotations

import gzip
import json

import pytest


@pytest.mark.shared_data
@pytest.mark.slow
def test_local_executor_two_tasks(tmp_path, shared_data):
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    from assay.stages.code.decontam import Decontamination
    from assay.stages.code.reader import CodeReader
    from assay.stages.code.signals import CodeSignals

    inputs = [str(shared_data / "code/real_repo_snapshot/chatnoir-resiliparse_src.tar.zst"),
              str(shared_data / "code/clean_multilang/TheAlgorithms-Kotlin.tar.zst"),
              str(shared_data / "code/minified"), str(shared_data / "code/lockfiles")]
    out = tmp_path / "out"
    ex = LocalPipelineExecutor(
        pipeline=[
            CodeReader(inputs),
            CodeSignals(),
            Decontamination([str(shared_data / "eval_sets/humaneval")]),
            JsonlWriter(str(out), output_filename="${rank}.jsonl.gz"),
        ],
        tasks=2, workers=1, logging_dir=str(tmp_path / "logs"), start_method="spawn",
    )
    ex.run()
    rows = [json.loads(l) for f in sorted(out.glob("*.jsonl.gz")) for l in gzip.open(f, "rt")]
    # conservation: 195 repo files + 56 Kotlin files + LICENSE + 5 minified + 6 lockfiles
    assert len(rows) == 195 + 57 + 5 + 6
    assert len({r["id"] for r in rows}) == len(rows)
    meta = [r["metadata"] for r in rows]
    assert all(m["source"] == "code" and "decont__match" in m for m in meta)
    by_path = {m["path"]: m for m in meta}
    assert by_path["jquery.min.js"]["code__minified"] and by_path["Cargo.lock"]["code__lockfile"]
    assert by_path["jquery.min.js"]["repo"] == "minified"
    stats = json.loads((tmp_path / "logs" / "stats.json").read_text())
    reader_stats = stats[0]["stats"]
    total = lambda v: v if isinstance(v, (int, float)) else v["total"]  # noqa: E731 - stats are ints or dicts
    assert total(reader_stats["documents"]) == len(rows)
    assert total(reader_stats["reject/code_oversized"]) == 1  # vueui.bundle.js is over the 1 MB default
