"""Tiny end-to-end run of the four dedup phases with datatrove's LocalPipelineExecutor (2 tasks)."""

from __future__ import annotations

import gzip
import json
import random

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.filters import LambdaFilter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter

from assay.stages.dedup import dedup_phase_tasks
from assay.stages.dedup.config import DedupConfig
from assay.stages.dedup.minhash import DedupAnnotate, MinhashBuckets, MinhashClusters, MinhashSignatures, dedup_reason


def _read_jsonl(folder):
    rows = []
    for p in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            rows += [json.loads(line) for line in f]
    return rows


def test_four_phases_with_local_executor(tmp_path, corpus):
    rng = random.Random(4)
    base = [corpus.random_text(rng, 200, corpus.vocab) for _ in range(40)]
    rows = [{"id": f"b{i:02d}", "text": t, "score": rng.random()} for i, t in enumerate(base)]
    rows += [{"id": f"n{i:02d}", "text": corpus.edit_words(rng, base[i], 0.01, corpus.vocab), "score": 2.0}
             for i in range(0, 40, 4)]  # 10 near duplicates with the highest priority
    rows += [{"id": f"e{i:02d}", "text": base[i], "score": -1.0} for i in range(1, 40, 8)]  # 5 exact copies
    rng.shuffle(rows)
    inp = tmp_path / "input"
    inp.mkdir()
    for k in range(2):
        with open(inp / f"part{k}.jsonl", "w") as f:
            for r in rows[k::2]:
                f.write(json.dumps({"id": r["id"], "text": r["text"], "metadata": {"score": r["score"]}}) + "\n")

    cfg = DedupConfig()
    tasks = dedup_phase_tasks(cfg)
    d = tmp_path / "dedup"
    common = dict(workers=1)
    LocalPipelineExecutor(
        [JsonlReader(str(inp)), MinhashSignatures(str(d / "sigs"), cfg, priority_signal="score"),
         JsonlWriter(str(tmp_path / "signals"))],
        tasks=2, logging_dir=str(tmp_path / "logs/signals"), **common).run()
    LocalPipelineExecutor([MinhashBuckets(str(d / "sigs"), str(d / "buckets"), cfg)], tasks=2,
                          logging_dir=str(tmp_path / "logs/buckets"), **common).run()
    assert tasks["clusters"] == 1
    LocalPipelineExecutor([MinhashClusters(str(d / "buckets"), str(d / "clusters"), cfg, "highest_priority")],
                          tasks=tasks["clusters"], logging_dir=str(tmp_path / "logs/clusters"), **common).run()
    LocalPipelineExecutor(
        [JsonlReader(str(tmp_path / "signals")), DedupAnnotate(str(d / "clusters"), cfg),
         LambdaFilter(lambda doc: dedup_reason(doc.metadata) is None,
                      exclusion_writer=JsonlWriter(str(tmp_path / "excluded"))),
         JsonlWriter(str(tmp_path / "kept"))],
        tasks=2, logging_dir=str(tmp_path / "logs/decide"), **common).run()

    kept, excluded = _read_jsonl(tmp_path / "kept"), _read_jsonl(tmp_path / "excluded")
    assert len(kept) + len(excluded) == len(rows) == 55  # conservation
    kept_ids = {r["id"] for r in kept}
    excl = {r["id"]: r["metadata"] for r in excluded}
    # near duplicates carry the highest priority: they are kept, their originals removed
    for i in range(0, 40, 4):
        assert f"n{i:02d}" in kept_ids
        assert excl[f"b{i:02d}"]["dedup__duplicate_of"] == f"n{i:02d}"
        assert dedup_reason(excl[f"b{i:02d}"]) == "dedup_minhash"
    for i in range(1, 40, 8):
        assert excl[f"e{i:02d}"]["dedup__duplicate_of"] == f"b{i:02d}"
        assert excl[f"e{i:02d}"]["dedup__exact_duplicate"] is True
    assert len(excluded) == 15
    for r in kept + excluded:
        assert {"dedup__cluster_id", "dedup__cluster_size", "dedup__is_duplicate"} <= set(r["metadata"])
    stats = json.loads((tmp_path / "logs/clusters/stats.json").read_text())
    flat = json.dumps(stats)
    assert "dedup/duplicates" in flat
