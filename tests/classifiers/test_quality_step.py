import pickle

import pytest
from datatrove.data import Document

from assay.stages.signals.quality import QualityScores, signal_name


def _docs():
    prose = ("The assignment statement evaluates the expression list and assigns the single resulting object "
             "to each of the target lists, from left to right, as the language reference describes.")
    code = "def _helper(self, x):\n    if x is None:\n        return self._cache.get(x, [])\n    return x + 1\n"
    return [
        Document(text=prose, id="w1", metadata={"source": "web"}),
        Document(text=code, id="c1", metadata={"source": "code"}),
        Document(text=prose, id="p1", metadata={"source": "pdf"}),
        Document(text=prose, id="r1", metadata={"source": "web", "reject_reason": "warc_truncated_record"}),
        Document(text="", id="e1", metadata={"source": "web"}),
        Document(text="   \n ", id="e2", metadata={"source": "pdf"}),
        Document(text=code, id="u1", metadata={}),  # no source: every model applies
    ]


def test_scores_written_per_source_never_drops(tiny_model):
    path = str(tiny_model)
    step = QualityScores(models=[path], batch_size=2, sources={"web": [path], "pdf": [path], "code": []})
    step = pickle.loads(pickle.dumps(step))  # executors pickle steps
    out = list(step.run(iter(_docs())))
    assert [d.id for d in out] == [d.id for d in _docs()]
    key = signal_name(path)
    assert key == "fasttext_tiny"
    by = {d.id: d.metadata for d in out}
    for i in ("w1", "p1", "u1"):
        assert 0.0 <= by[i][f"{key}__score"] <= 1.0 and 0.0 <= by[i][f"{key}__pct"] <= 1.0
    assert by["w1"][f"{key}__score"] > 0.5 > by["u1"][f"{key}__score"]
    assert by["w1"][f"{key}__pct"] > by["u1"][f"{key}__pct"]
    for i in ("c1", "r1", "e1", "e2"):
        assert by[i][f"{key}__score"] is None and by[i][f"{key}__pct"] is None
    assert by["r1"]["reject_reason"] == "warc_truncated_record"
    # stats: every doc counted, scored ones per model
    assert step.stats["documents"].total == 7
    assert step.stats[f"scored/{path}"].total == 3
    # the model was loaded once and kept for the worker
    assert step._loaded is not None and len(step._loaded) == 1


def test_default_source_map_with_shipped_models():
    step = QualityScores(models=["web", "stem", "code"])
    assert step.models_for("web") == ["web", "stem"]
    assert step.models_for("code") == ["code"]
    assert step.models_for("pdf") == ["web", "stem"]
    assert step.models_for(None) == ["web", "stem", "code"]
    full = QualityScores(models=["web", "stem", "code", "code_corruption", "pdf"])
    assert full.models_for("pdf") == ["web", "stem", "pdf"]
    assert full.models_for("code") == ["code", "code_corruption"]
    out = list(step.run(iter(_docs())))
    by = {d.id: d.metadata for d in out}
    assert by["w1"]["fasttext_web__score"] is not None and by["w1"]["fasttext_stem__score"] is not None
    assert by["w1"]["fasttext_code__score"] is None
    assert by["c1"]["fasttext_code__score"] is not None and by["c1"]["fasttext_web__score"] is None
    # scalar signal values only (CONTRACT)
    for md in by.values():
        assert all(v is None or isinstance(v, (int, float, str, bool)) for v in md.values())


def test_rejects_empty_models():
    with pytest.raises(ValueError):
        QualityScores(models=[])


def test_runs_in_datatrove_local_executor(tiny_model, tmp_path):
    """Two tasks through datatrove's local executor: the step pickles, loads its model per worker,
    and writes every document with its signals."""
    import gzip
    import json

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    inp = tmp_path / "in"
    inp.mkdir()
    docs = _docs()
    for k in range(2):
        with open(inp / f"part{k}.jsonl", "w") as f:
            for d in docs:
                f.write(json.dumps({"id": f"{d.id}-{k}", "text": d.text, "metadata": d.metadata}) + "\n")
    out = tmp_path / "out"
    ex = LocalPipelineExecutor(
        pipeline=[JsonlReader(str(inp)), QualityScores(models=[str(tiny_model)], batch_size=3), JsonlWriter(str(out))],
        tasks=2, workers=1, logging_dir=str(tmp_path / "logs"))
    ex.run()
    rows = []
    for p in sorted(out.glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            rows += [json.loads(x) for x in f]
    assert len(rows) == 2 * len([d for d in docs if d.text])  # datatrove's reader skips empty-text records
    key = "fasttext_tiny__score"
    scored = sorted(r["id"] for r in rows if r["metadata"].get(key) is not None)
    # a model the default source map does not mention applies to every source; rejected/blank docs get None
    assert scored == sorted(f"{i}-{k}" for i in ("w1", "c1", "p1", "u1") for k in range(2))
    assert all(key in r["metadata"] for r in rows)


def test_models_load_only_for_the_sources_seen():
    """The default recipe lists five models; a worker that sees only web documents loads the two that
    apply to web (web, stem), never the code and PDF ones."""
    from datatrove.data import Document

    step = QualityScores(models=["web", "stem", "code", "code_corruption", "pdf"])
    docs = [Document(text="The council decided on Monday to extend the opening hours of the library.", id="w",
                     metadata={"source": "web"})]
    out = list(step.run(iter(docs)))
    assert sorted(step._loaded) == ["stem", "web"]
    assert out[0].metadata["fasttext_web__score"] is not None and out[0].metadata["fasttext_code__score"] is None
