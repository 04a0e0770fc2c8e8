"""Keep the process that launches a run (``assay run``) free of pandas.

pyarrow imports pandas the first time it converts anything (``pa.array``, ``pa.Table.from_pylist``,
``pa.table``...): its lazy pandas shim looks whether the value is a pandas object, and to know that it
imports pandas (about 47 MiB of resident memory and 0.3 CPU-s). The launching process runs the small
phases inline (dedup, decisions, output shards), converts plain Python lists and NumPy arrays only, and
never needs pandas; with pandas loaded it was the run's largest process.
"""

from __future__ import annotations

import os
import sys

__all__ = ["keep_pandas_unloaded", "lean_launcher", "lean_worker"]


def keep_pandas_unloaded() -> bool:
    """Have pyarrow treat this process as one without pandas, unless pandas is loaded already (then
    nothing changes). pyarrow's shim tries the import once per process and remembers the answer: the try
    runs here with ``pandas`` made unimportable (an import hook), and so does the one of arrow's C++
    conversions (inferred types: ``pa.array([1, None])``); then ``pandas`` is importable again for code that
    imports it itself. Conversions of lists and NumPy arrays give the same arrays either way; what changes is that pyarrow's pandas methods (``Table.to_pandas``) raise
    ImportError in this process. Returns whether the shim was set so."""
    if "pandas" in sys.modules:
        return False
    import pyarrow as pa

    shim = getattr(pa.lib, "_pandas_api", None)
    if shim is None:
        return False
    sys.meta_path.insert(0, _NoPandas)
    try:
        have = shim.have_pandas  # the shim's one import attempt (it remembers the answer)
        # and arrow's C++ conversions' own one attempt (their type inference looks for pandas' NA): made by
        # the first conversion of Python objects, remembered as well
        pa.array([None])
    finally:
        sys.meta_path.remove(_NoPandas)
    return not have


class _NoPandas:
    """Import hook under which ``import pandas`` raises ImportError (meta path finders are asked first)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"no {name} while pyarrow's pandas shim is set", name=name)
        return None


# jemalloc configuration of polars' allocator (tikv-jemallocator reads it when polars loads): freed pages go
# back to the system at once instead of after jemalloc's default 10 s decay, which outlasts the inline phases
POLARS_JEMALLOC_ENV = "_RJEM_MALLOC_CONF"
POLARS_JEMALLOC_LEAN = "dirty_decay_ms:0,muzzy_decay_ms:0"


def lean_launcher() -> dict:
    """Settings for the process that launches a run and runs its small phases inline (dedup, decisions,
    output): no pandas (``keep_pandas_unloaded``); pyarrow allocating through the system allocator, whose
    freed memory the phases' ``malloc_trim`` hands back (pyarrow's default pool keeps it); polars' jemalloc
    returning freed pages at once (unless ``_RJEM_MALLOC_CONF`` is set already, or polars is loaded).
    Results do not change: only where the memory comes from and when it is returned. Returns what was set."""
    done = {}
    if "polars" not in sys.modules and POLARS_JEMALLOC_ENV not in os.environ:
        os.environ[POLARS_JEMALLOC_ENV] = POLARS_JEMALLOC_LEAN
        done["polars_jemalloc"] = POLARS_JEMALLOC_LEAN
    # arrow's C++ default pool (used by the Parquet and IPC readers and writers whatever pyarrow's own
    # default is) is chosen from ARROW_DEFAULT_MEMORY_POOL when pyarrow loads: set for that moment only (the
    # pool of the workers started later is executors.arrow_modules' choice)
    saved = os.environ.get(ARROW_POOL_ENV)
    os.environ[ARROW_POOL_ENV] = "system"
    try:
        import pyarrow as pa

        if pa.default_memory_pool().backend_name != "system":  # pyarrow was loaded before: its own default only
            pa.set_memory_pool(pa.system_memory_pool())
    finally:
        if saved is None:
            del os.environ[ARROW_POOL_ENV]
        else:
            os.environ[ARROW_POOL_ENV] = saved
    done["arrow_pool"] = pa.default_memory_pool().backend_name
    done["no_pandas"] = keep_pandas_unloaded()
    return done


ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def lean_worker() -> dict:
    """Settings of the processes that run a local pool's tasks, applied once in the forkserver they are
    forked from (``assay.pipeline.lean_worker`` is among the modules it preloads): pyarrow told there is no
    pandas (``keep_pandas_unloaded``: about 50 MiB and 0.5 CPU-s that every worker held for pyarrow's pandas
    shim), and pandas' hash tables (what the web heuristics' and quality steps' grouping uses) loaded
    without the pandas package (``pandas_hashtables``). Results do not change; pyarrow's pandas methods
    (``Table.to_pandas``) raise ImportError in these processes. Returns what was set."""
    from assay.stages.common.codes import pandas_hashtables

    done = {"no_pandas": keep_pandas_unloaded()}
    pandas_hashtables()
    done["hashtables"] = "pandas" not in sys.modules
    return done
