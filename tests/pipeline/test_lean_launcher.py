"""The process that launches a run (``assay run``) stays light: no pandas (pyarrow's conversions import it
otherwise), pyarrow on the system allocator, polars' jemalloc returning freed pages at once; the workers it
starts get their arrow pool from the environment the pool starts them with (``executors.arrow_modules``);
conversions give the same arrays as in a process with pandas."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _py(code: str, cwd: Path | None = None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         cwd=cwd, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split("\n")


# rows as the shard and store writers build them: typed columns, and a column left to pyarrow's inference
_ROWS = """[{"id": "a", "n": 3, "x": 0.5, "ok": True, "tags": ["p", "q"], "s": None},
            {"id": "b\\u00e9", "n": None, "x": float("nan"), "ok": False, "tags": [], "s": {"k": 1}}]"""


def test_lean_launcher_converts_as_before_without_pandas():
    """Typed conversions (as the shard and store writers make them: lists with a schema, NumPy arrays) and
    inferred ones: the same Arrow IPC bytes with and without the launcher settings; with them, pandas not
    loaded by the typed ones (an inferred conversion still loads it: arrow's C++ type inference looks for
    pandas' NA), importable by code that asks for it, and the arrow pool variable left as it was for the
    processes started later."""
    code = f"""
        import os, sys
        LEAN = {{}}
        if sys.argv[-1] == "lean":
            from assay.pipeline.lean import lean_launcher
            LEAN = lean_launcher()
        import numpy as np, pyarrow as pa
        rows = {_ROWS}
        def ipc(t):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            return sink.getvalue().to_pybytes().hex()
        schema = pa.schema([("id", pa.string()), ("n", pa.int64()), ("x", pa.float64()), ("ok", pa.bool_()),
                            ("tags", pa.list_(pa.string())), ("s", pa.struct([("k", pa.int64())]))])
        t = pa.Table.from_pylist(rows, schema=schema)
        t = t.append_column("arr", pa.array(np.arange(2, dtype=np.uint64)))
        t = t.append_column("lst", pa.array([[1, 2], None], type=pa.list_(pa.int8())))
        print(ipc(t.take(pa.array(np.array([1, 0])))))
        print("pandas" in sys.modules, LEAN, os.environ.get("ARROW_DEFAULT_MEMORY_POOL"))
        print(ipc(pa.Table.from_pylist(rows)))
        import pandas
        print(pandas.__name__)
    """
    import os

    # as a fresh shell starts it (a run earlier in this process set the variable for its workers: arrow_modules)
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    plain = subprocess.run([sys.executable, "-c", textwrap.dedent(code), "plain"], capture_output=True, text=True,
                           env=env)
    lean = subprocess.run([sys.executable, "-c", textwrap.dedent(code), "lean"], capture_output=True, text=True,
                          env=env)
    assert plain.returncode == 0 and lean.returncode == 0, plain.stderr[-2000:] + lean.stderr[-2000:]
    p, q = plain.stdout.split("\n"), lean.stdout.split("\n")
    assert p[0] == q[0] and p[2] == q[2]  # the same tables, byte for byte
    assert p[1].startswith("True")  # pyarrow imports pandas on its own
    assert q[1].startswith("False ") and "'no_pandas': True" in q[1] and "'arrow_pool': 'system'" in q[1]
    assert q[1].endswith(" None")  # ARROW_DEFAULT_MEMORY_POOL not left set (the workers' pool: arrow_modules)
    assert q[3] == "pandas"


def test_int_column_equals_to_numpy():
    """The shard writer's integer columns read from their buffers: the values of ``to_numpy`` for chunked,
    sliced and empty columns, signed and unsigned; a column with nulls goes through ``to_numpy``."""
    from assay.stages.output.shards import _int_column

    schema = pa.schema([pa.field("k", pa.uint64(), nullable=False), pa.field("b", pa.int64(), nullable=False),
                        pa.field("m", pa.int64())])
    b = pa.RecordBatch.from_pylist([{"k": 2**64 - 1 - i, "b": -i, "m": i if i % 2 else None} for i in range(7)],
                                   schema=schema)
    table = pa.Table.from_batches([b, b.slice(3), b.slice(1, 2)])
    for t in (table, table.slice(4), table.slice(5, 3), table.slice(0, 0)):
        for name in ("k", "b"):
            got, want = _int_column(t, name), t.column(name).to_numpy()
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
    nulls = _int_column(table, "m")
    assert nulls.dtype.kind == "f" and nulls.tolist()[:2] != [0, 1]


@pytest.mark.slow
def test_assay_run_main_process_never_imports_pandas(tmp_path):
    """``assay run`` of the default recipe's web source on the embedded sample: the launching process runs
    the dedup, decision and output phases and ends without pandas loaded, with arrow's system pool."""
    from assay.pipeline.recipe import load_recipe

    data = load_recipe(None).to_dict()
    data["sources"] = [s for s in data["sources"] if s["name"] == "web"]
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    out = _py(f"""
        import sys
        from assay.pipeline import cli
        sys.argv = ["assay", "run", {str(recipe)!r}, "--output", {str(tmp_path / 'run')!r}, "-q"]
        try:
            cli.main()
        except SystemExit as e:
            assert not e.code, e.code
        import pyarrow as pa
        print("MAIN", "pandas" in sys.modules, "polars" in sys.modules, pa.default_memory_pool().backend_name)
    """, cwd=REPO)
    line = next(x for x in out if x.startswith("MAIN"))
    assert line == "MAIN False True system", line
    assert list((tmp_path / "run" / "output").rglob("*.parquet"))


class _Prep:
    def __init__(self, log: Path, fail: bool = False):
        self.log, self.fail = log, fail

    def prepare_run(self):
        import os

        with open(self.log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        if self.fail:
            raise RuntimeError("prepare failed")
        return True


def test_prepare_steps_run_once_in_a_child_and_raise_here_when_it_fails(tmp_path):
    """``prepare_run`` (the decontamination index build) runs in a forked child, so the launching process
    does not keep what it built; a prepare that fails in the child runs again here and raises here."""
    import os

    from assay.pipeline.executors import prepare_steps

    log = tmp_path / "ok.txt"
    prepare_steps([[_Prep(log), object()], [_Prep(log)]])
    pids = log.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 1 and int(pids[0]) != os.getpid()
    bad = tmp_path / "bad.txt"
    with pytest.raises(RuntimeError, match="prepare failed"):
        prepare_steps([[_Prep(bad, fail=True)]])
    pids = bad.read_text().split()
    assert len(pids) == 2 and int(pids[0]) != os.getpid() and int(pids[1]) == os.getpid()


def test_worker_settings_keep_pandas_unloaded_and_group_as_pandas():
    """What the forkserver applies for its workers (``assay.pipeline.lean_worker``): pyarrow's conversions,
    inferred ones included, load no pandas; the web steps' grouping (``group_codes``, ``first_seen_codes``)
    runs on pandas' hash tables without the pandas package and numbers as ``pandas.factorize``; pandas is
    whole and usable when code imports it afterwards."""
    code = f"""
        import sys
        import assay.pipeline.lean_worker as lw
        import numpy as np, pyarrow as pa
        from assay.stages.common.codes import first_seen_codes
        from assay.stages.web.heuristics import group_codes
        rows = {_ROWS}
        pa.Table.from_pylist(rows)
        pa.array([1, None, 2.5])
        rng = np.random.default_rng(0)
        values = rng.integers(0, 50, 3000).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        words = [str(w) for w in rng.integers(0, 300, 2000)] + ["\\u00e9t\\u00e9", "a b"] * 40
        mixed = ["a", 3, "b", "a"] * 40
        got = [group_codes(values), first_seen_codes(words), first_seen_codes(mixed)]
        print(lw.SETTINGS, "pandas" in sys.modules)
        import pandas as pd
        want_v = pd.factorize(values)[0]
        def fs(items):
            arr = np.empty(len(items), dtype=object)
            arr[:] = items
            codes, uniques = pd.factorize(arr)
            return uniques.tolist(), codes
        ok = [np.array_equal(got[0][0], want_v), np.array_equal(got[0][1], np.bincount(want_v)),
              got[1][0] == fs(words)[0], np.array_equal(got[1][1], fs(words)[1]),
              got[2][0] == fs(mixed)[0], np.array_equal(got[2][1], fs(mixed)[1])]
        import io
        csv = pd.read_csv(io.StringIO("a,b\\n1,2020-01-03\\n"), parse_dates=["b"])
        print(ok, str(pd.to_datetime("2020-01-02").date()), len(pd.DataFrame({{"a": [1, 2]}})), str(csv.b[0].date()))
    """
    out = _py(code)
    assert out[0] == "{'no_pandas': True, 'hashtables': True} False"
    assert out[1] == "[True, True, True, True, True, True] 2020-01-02 2 2020-01-03"
