"""kill -9 a writer while it writes shards: no partial shard may look whole."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.stages.output.shards import list_shards

WRITER = r"""
import random, sys
from datatrove.data import Document
from assay.stages.output.shards import ShardWriter
rng = random.Random(0)
docs = [Document(text=rng.randbytes(12_000).hex(), id=f"d{i}",
                 metadata={"source": "web", "tier": "high", "lang__code": "en", "decision__reason": None})
        for i in range(int(sys.argv[2]))]
w = ShardWriter(sys.argv[1], max_shard_bytes=1_000_000, row_group_rows=4)
for _ in w.run(iter(docs), rank=0):
    pass
print("done", flush=True)
"""

N_DOCS = 2500  # ~60 MB of text, ~60 shards


def _run(out: Path, n: int = N_DOCS, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(n)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in list_shards(folder)}


@pytest.mark.slow
def test_kill_during_write_leaves_no_partial_shard(tmp_path):
    ref = tmp_path / "ref"
    p = _run(ref)
    assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    reference = _digest(ref)
    assert len(reference) > 20

    # the kill lands at a random point: between seeing a temporary file and the SIGKILL the writer may have
    # renamed it already, so try a few times until one kill leaves a shard mid-write
    for attempt in range(5):
        out = tmp_path / f"out{attempt}"
        p = _run(out)
        deadline = time.time() + 120
        tmp_seen: list[Path] = []
        while time.time() < deadline and p.poll() is None:
            tmp_seen = list(out.rglob(".shard-*.parquet.tmp")) if out.exists() else []
            if tmp_seen and len(list_shards(out)) >= 3:
                os.kill(p.pid, signal.SIGKILL)
                break
            time.sleep(0.002)
        p.wait(timeout=30)
        assert p.returncode == -signal.SIGKILL, "the writer finished before it could be killed"
        assert tmp_seen, "never caught the writer mid-shard"

        finished = list_shards(out)
        assert 3 <= len(finished) < len(reference)
        for shard in finished:  # every shard with a final name is whole and identical to a clean run's
            t = pq.read_table(shard)
            assert t.num_rows == pq.ParquetFile(shard).metadata.num_rows > 0
            rel = shard.relative_to(out).as_posix()
            assert hashlib.sha256(shard.read_bytes()).hexdigest() == reference[rel]
        partial = list(out.rglob(".shard-*.parquet.tmp"))
        if partial:
            break
    assert partial, "the interrupted shard should be left under its temporary name"
    assert not set(partial) & set(finished)  # temporary names are never listed as shards...
    import pyarrow.dataset as ds

    # ...nor discovered by dataset readers (dot files are ignored)
    assert all(not Path(f).name.startswith(".") for f in ds.dataset(str(out), format="parquet").files)

    # rerunning the rank cleans up and reproduces the clean run exactly
    p = _run(out)
    assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    assert _digest(out) == reference
    assert not list(out.rglob("*.tmp"))
