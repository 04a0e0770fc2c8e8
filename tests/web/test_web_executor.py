from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from assay.stages.web.extract import HtmlExtractor
from assay.stages.web.heuristics import WebHeuristicSignals
from assay.stages.web.langid import LanguageId
from assay.stages.web.warc import WarcReader


def test_steps_pickle():
    for step in (WarcReader(["/nonexistent"]), HtmlExtractor(), LanguageId(), WebHeuristicSignals()):
        clone = pickle.loads(pickle.dumps(step))
        assert type(clone) is type(step)


@pytest.mark.shared_data
@pytest.mark.slow
def test_local_executor_two_tasks_accounts_for_every_record(shared_data: Path, tmp_path: Path):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.writers import JsonlWriter
    from warcio.archiveiterator import ArchiveIterator

    warc = shared_data / "warc"
    files = WarcReader([str(warc)]).list_files()
    expected_records = 0
    for f in files:
        with open(f, "rb") as fh:
            expected_records += sum(1 for _ in ArchiveIterator(fh, arc2warc=True))

    executor = LocalPipelineExecutor(
        pipeline=[
            WarcReader([str(warc)]),
            HtmlExtractor(),
            LanguageId(),
            WebHeuristicSignals(),
            JsonlWriter(str(tmp_path / "out"), compression=None),
        ],
        tasks=2,
        workers=1,
        logging_dir=str(tmp_path / "logs"),
        start_method="spawn",
    )
    executor.run()
    stats = json.loads((tmp_path / "logs/stats.json").read_text())
    reader_stats = stats[0]["stats"]

    def total(key):
        v = reader_stats.get(key, 0)
        return v["total"] if isinstance(v, dict) else v

    assert total("records") == expected_records
    outcomes = sum(total(k) for k in reader_stats if k == "emitted" or k.startswith(("skipped/", "reject/")))
    assert outcomes - total("files/aborted") == expected_records
    written = []
    for p in sorted((tmp_path / "out").glob("*.jsonl")):
        written += [json.loads(line) for line in p.read_text().splitlines()]
    assert len(written) == total("documents")
    kept = [d for d in written if not d["metadata"].get("reject_reason")]
    assert kept and all("lang__code" in d["metadata"] and "prose__gopher__n_words" in d["metadata"] for d in kept)
