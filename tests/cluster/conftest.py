"""Fixtures and helpers for the cluster tests: deterministic JSONL inputs and two-phase datatrove pipelines
built only from datatrove's own steps (a Slurm job unpickles the executor in a fresh interpreter,
so every step must be importable there)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest


def make_inputs(folder: Path, *, n_files: int, docs_per_file: int, words: int = 40) -> list[str]:
    """Write ``n_files`` gzipped JSONL files; return all document ids."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for f in range(n_files):
        with gzip.open(folder / f"part_{f:03d}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for d in range(docs_per_file):
                doc_id = f"f{f:03d}-d{d:05d}"
                h = hashlib.sha256(doc_id.encode()).hexdigest()
                text = " ".join(h[(i * 7) % 56 : (i * 7) % 56 + 8] for i in range(words))
                fh.write(json.dumps({"id": doc_id, "text": text, "metadata": {"n": d}}) + "\n")
                ids.append(doc_id)
    return ids


def two_phase_pipelines(inputs: Path, work: Path) -> tuple[list, list]:
    """Phase 1: JSONL -> Parquet (one file per task). Phase 2: that Parquet -> JSONL.

    Phase 2 lists its input files when it starts, so if it started before phase 1 had finished
    documents would be missing from its output."""
    from datatrove.pipeline.readers import JsonlReader, ParquetReader
    from datatrove.pipeline.writers import JsonlWriter, ParquetWriter

    phase1 = [
        JsonlReader(str(inputs), glob_pattern="*.jsonl.gz"),
        ParquetWriter(str(work / "stage1"), output_filename="${rank}.parquet"),
    ]
    phase2 = [
        ParquetReader(str(work / "stage1"), glob_pattern="*.parquet"),
        JsonlWriter(str(work / "final"), output_filename="${rank}.jsonl.gz"),
    ]
    return phase1, phase2


def read_jsonl_ids(folder: Path) -> list[str]:
    ids = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            ids.extend(json.loads(line)["id"] for line in fh if line.strip())
    return ids


def read_parquet_ids(folder: Path) -> list[str]:
    ids = []
    for path in sorted(folder.glob("*.parquet")):
        ids.extend(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    return ids


def file_checksums(folder: Path, pattern: str = "*") -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob(pattern))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def ch() -> SimpleNamespace:
    """The helpers above, for test modules (pytest runs with --import-mode=importlib, so test
    files cannot import a sibling module)."""
    return SimpleNamespace(
        make_inputs=make_inputs,
        two_phase_pipelines=two_phase_pipelines,
        read_jsonl_ids=read_jsonl_ids,
        read_parquet_ids=read_parquet_ids,
        file_checksums=file_checksums,
    )


@pytest.fixture
def cluster_inputs(tmp_path: Path) -> tuple[Path, list[str]]:
    ids = make_inputs(tmp_path / "inputs", n_files=6, docs_per_file=150)
    return tmp_path / "inputs", ids
