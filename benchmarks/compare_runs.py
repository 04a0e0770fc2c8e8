"""Are two `assay run` outputs the same? Signal store, output shards and excluded shards, every column,
cell by cell, rows keyed by URL (the record ids of bench_e2e's WARC files change each time the corpus is
built, so ids are mapped to URLs; ``dedup__doc_key`` is derived from them and left out).

    .venv/bin/python benchmarks/compare_runs.py RUN_A RUN_B      # exit status 0 when identical

Used to show that speed changes leave the stored signals and the decisions unchanged: run the same recipe
on the same corpus before and after a change, then compare."""

from __future__ import annotations

import glob
import math
import sys


def _rows(run: str, sub: str) -> list[dict]:
    import pyarrow.parquet as pq

    rows = []
    for f in sorted(glob.glob(f"{run}/{sub}/**/*.parquet", recursive=True)):
        part = "/".join(f[len(run):].split("/")[:-1])
        for r in pq.read_table(f).to_pylist():
            if sub != "signals":
                r["_partition"] = part
            rows.append(r)
    return rows


def _keyed(run: str, sub: str) -> dict:
    urls = {r["id"]: r.get("url") for r in _rows(run, "signals")}
    out = {}
    for r in _rows(run, sub):
        key = r.get("url") or r.get("url_or_path") or urls.get(r["id"]) or r["id"]
        for c in ("id", "record_id", "dedup__doc_key"):
            r.pop(c, None)
        if r.get("duplicate_of"):
            r["duplicate_of"] = urls.get(r["duplicate_of"], r["duplicate_of"])
        if key in out:
            raise SystemExit(f"{run}/{sub}: two rows for {key}")
        out[key] = r
    return out


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def compare(run_a: str, run_b: str, out=print) -> int:
    """Number of differences (0: identical), each reported through ``out``. A directory without signal shards
    is not an ``assay run`` output (e.g. bench_e2e's ``assay_x1_r0`` instead of ``assay_x1_r0/run``): two such
    directories would compare as 0 identical rows, so that stops with an error instead."""
    for run in (run_a, run_b):
        if not glob.glob(f"{run}/signals/**/*.parquet", recursive=True):
            hint = f" (did you mean {run}/run?)" if glob.glob(f"{run}/run/signals/**/*.parquet", recursive=True) else ""
            raise SystemExit(f"{run}: no signal shards under signals/, not an assay run output directory{hint}")
    bad = 0
    for sub in ("signals", "output", "excluded"):
        A, B = _keyed(run_a, sub), _keyed(run_b, sub)
        if set(A) != set(B):
            out(f"{sub}: row sets differ ({len(A)} vs {len(B)}), e.g. {sorted(set(A) ^ set(B))[:3]}")
            bad += 1
            continue
        cells, cols = 0, set()
        for k, ra in A.items():
            rb = B[k]
            for c in set(ra) | set(rb):
                if not _same(ra.get(c), rb.get(c)):
                    cells += 1
                    cols.add(c)
                    if cells <= 5:
                        out(f"{sub} {k} {c}: {ra.get(c)!r:.100} != {rb.get(c)!r:.100}")
        out(f"{sub}: {len(A)} rows, {cells} differing cells{' in ' + ', '.join(sorted(cols)[:20]) if cols else ''}")
        bad += cells
    out("IDENTICAL" if not bad else "DIFFERENT")
    return bad


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(1 if compare(sys.argv[1], sys.argv[2]) else 0)
