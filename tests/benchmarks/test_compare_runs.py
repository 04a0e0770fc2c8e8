"""benchmarks/compare_runs.py: two runs' signal stores and shards compared cell by cell, keyed by URL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]


def _mod():
    spec = importlib.util.spec_from_file_location("compare_runs", ROOT / "benchmarks" / "compare_runs.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _run(root: Path, ids: list[str], score: float) -> Path:
    for sub in ("signals", "output/source=web/tier=low", "excluded"):
        (root / sub).mkdir(parents=True)
    urls = [f"https://example.test/{i}" for i in range(len(ids))]
    pq.write_table(pa.table({"id": ids, "url": urls, "x": [score, 1.0]}), root / "signals" / "part-0.parquet")
    pq.write_table(pa.table({"id": ids[:1], "text": ["kept"]}), root / "output/source=web/tier=low/s.parquet")
    pq.write_table(pa.table({"id": ids[1:], "url_or_path": urls[1:], "duplicate_of": ids[:1]}),
                   root / "excluded" / "part-0.parquet")
    return root


def test_same_rows_under_other_ids_are_identical_and_a_changed_cell_is_not(tmp_path):
    m = _mod()
    a = _run(tmp_path / "a", ["uuid-1", "uuid-2"], 0.5)
    b = _run(tmp_path / "b", ["uuid-7", "uuid-8"], 0.5)  # a rebuilt corpus: new record ids
    c = _run(tmp_path / "c", ["uuid-1", "uuid-2"], 0.25)
    lines: list[str] = []
    assert m.compare(str(a), str(b), out=lines.append) == 0 and lines[-1] == "IDENTICAL"
    lines.clear()
    assert m.compare(str(a), str(c), out=lines.append) == 1
    assert any("signals https://example.test/0 x" in line for line in lines) and lines[-1] == "DIFFERENT"


def test_a_directory_without_signal_shards_is_an_error_not_identical(tmp_path):
    """bench_e2e's work directory holds the run one level down (``assay_x1_r0/run``): compared at the wrong level,
    two empty row sets must not read as IDENTICAL."""
    import pytest

    m = _mod()
    _run(tmp_path / "a" / "run", ["uuid-1", "uuid-2"], 0.5)
    _run(tmp_path / "b" / "run", ["uuid-1", "uuid-2"], 0.5)
    with pytest.raises(SystemExit, match=r"did you mean .*a/run\?"):
        m.compare(str(tmp_path / "a"), str(tmp_path / "b"), out=lambda _: None)
    assert m.compare(str(tmp_path / "a" / "run"), str(tmp_path / "b" / "run"), out=lambda _: None) == 0
