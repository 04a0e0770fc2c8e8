"""Integer codes of repeated strings (words, tokens), numbered in first-seen order."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import sys
import types

import numpy as np

__all__ = ["first_seen_codes", "pandas_hashtables"]


def first_seen_codes(items: list[str]) -> tuple[list[str], np.ndarray]:
    """``(distinct, codes)``: the distinct items (strings) in first-seen order and each item's index in it
    (int64), as ``distinct = list(dict.fromkeys(items))`` and ``codes = [distinct.index(x) for x in items]``
    define them. By pandas' string hash table (what ``pandas.factorize`` uses for an array of strings: it
    numbers in first-seen order; about 30% faster than a dict pass on the words of web pages; loaded without
    the pandas package, see ``pandas_hashtables``) for lists of strings, called directly: ``factorize`` first
    scans the array to learn that it holds strings only, and the table itself tells, as it codes anything
    else as missing (-1). Other lists by one dict pass (``_dict_codes``)."""
    if len(items) >= _FACTORIZE_MIN and type(items[0]) is str:
        hashtable, _lib = pandas_hashtables()
        arr = np.fromiter(items, dtype=object, count=len(items))
        uniques, codes = hashtable.StringHashTable(len(items)).factorize(arr, na_sentinel=-1, na_value=None)
        if codes.min() >= 0:  # (a value that is not a string is coded -1)
            return uniques.tolist(), codes.astype(np.int64, copy=False)
    return _dict_codes(items)


def pandas_hashtables() -> tuple[types.ModuleType, types.ModuleType]:
    """pandas' hash tables and type checks (its C extensions ``pandas._libs.hashtable`` and
    ``pandas._libs.lib``), loaded once per process. Where pandas is not loaded, without running the pandas
    package: the extensions (and the few pure-Python pandas modules they import) are imported under a bare
    stand-in for ``pandas`` (about 11 MiB of resident memory and 0.07 CPU-s instead of the whole package's
    50 MiB and 0.5 CPU-s); the stand-in then leaves ``sys.modules`` and code that imports pandas later gets
    the whole package as usual, on the submodules already loaded (``_PandasAfterStandIn``). Any failure:
    an ordinary ``import pandas``."""
    if _PANDAS_HASHTABLES:
        return _PANDAS_HASHTABLES[0]
    found = None
    if "pandas" not in sys.modules:
        try:
            found = _hashtables_without_pandas()
        except Exception:  # noqa: BLE001 - another pandas layout: the ordinary import below
            found = None
    if found is None:
        import pandas  # noqa: F401, PLC0415

        found = (importlib.import_module("pandas._libs.hashtable"), importlib.import_module("pandas._libs.lib"))
    _PANDAS_HASHTABLES[:] = [found]
    return found


_PANDAS_HASHTABLES: list = []


def _hashtables_without_pandas() -> tuple[types.ModuleType, types.ModuleType]:
    spec = importlib.util.find_spec("pandas")
    if spec is None or not spec.origin or spec.loader is None:
        raise ImportError("no pandas")
    loaded = set(sys.modules)
    stand_in = types.ModuleType("pandas")
    stand_in.__path__ = [os.path.dirname(spec.origin)]
    sys.modules["pandas"] = stand_in
    try:
        found = importlib.import_module("pandas._libs.hashtable"), importlib.import_module("pandas._libs.lib")
    except BaseException:
        for name in set(sys.modules) - loaded:  # as before the attempt
            if name == "pandas" or name.startswith("pandas."):
                del sys.modules[name]
        raise
    finally:
        if sys.modules.get("pandas") is stand_in:
            del sys.modules["pandas"]
    # what pandas' extensions set on the package while loading (their C API capsules) and its submodules:
    # given to the real package when it is imported
    sys.meta_path.insert(0, _PandasAfterStandIn(dict(vars(stand_in))))
    return found


class _PandasAfterStandIn:
    """Import hook for the first ``import pandas`` after ``_hashtables_without_pandas``: the real package,
    given before it runs the attributes its already loaded submodules had set on the stand-in (the C API
    capsules that pandas' other extensions look up on ``pandas``, the submodules themselves). One use."""

    def __init__(self, attrs: dict):
        self.attrs = {k: v for k, v in attrs.items() if not k.startswith("__")}

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("pandas")
        if spec is not None and spec.loader is not None:
            spec.loader = _GivenAttrsLoader(spec.loader, self.attrs)
        return spec


class _GivenAttrsLoader:
    def __init__(self, loader, attrs: dict):
        self.loader, self.attrs = loader, attrs

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        for k, v in self.attrs.items():
            setattr(module, k, v)
        self.loader.exec_module(module)


_FACTORIZE_MIN = 64


def _dict_codes(items: list) -> tuple[list, np.ndarray]:
    """``first_seen_codes`` by one dict pass: ``setdefault`` keeps each item's first position, then first
    positions are ranked (the dict keeps them in first-seen order, which is ascending)."""
    first_pos: dict[str, int] = {}
    first = np.fromiter(map(first_pos.setdefault, items, itertools.count()), dtype=np.int64, count=len(items))
    rank = np.zeros(len(items), dtype=np.int64)
    rank[np.fromiter(first_pos.values(), dtype=np.int64, count=len(first_pos))] = np.arange(len(first_pos))
    return list(first_pos), rank[first]
