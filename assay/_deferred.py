"""Imports that assay's processes do not need, deferred until something uses them.

``datatrove.io`` (imported by datatrove's executors, readers and writers: every assay process) runs
``from huggingface_hub import HfFileSystem, cached_assets_path``. ``huggingface_hub`` loads those names lazily,
and ``HfFileSystem`` brings its whole client with it (``hf_api``, httpx, anyio, asyncio: about 0.2-0.35 CPU-s in
each process; the main process and the forkserver of every local run import it). ``datatrove.io`` only tests
``isinstance(fs, HfFileSystem)`` on a file system and calls ``cached_assets_path`` to download assets.

So while ``datatrove.io`` itself is imported it is handed two stand-ins, bound in its own namespace only
(``huggingface_hub``'s namespace is left as it was, so every other import gets the real objects):

* ``HfFileSystem``: a class whose ``isinstance`` test is the real class's test once ``huggingface_hub``'s file
  system module is loaded, and false before (no object can be an instance of a class not yet defined);
* ``cached_assets_path``: a function that imports the real one and calls it.

Nothing changes where ``datatrove.io`` or ``huggingface_hub.hf_file_system`` was imported before assay.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

_HF_FS_MODULE = "huggingface_hub.hf_file_system"


class _DeferredHfFileSystemType(type):
    def __instancecheck__(cls, obj) -> bool:
        module = sys.modules.get(_HF_FS_MODULE)
        return module is not None and isinstance(obj, module.HfFileSystem)

    def __subclasscheck__(cls, sub) -> bool:
        module = sys.modules.get(_HF_FS_MODULE)
        return module is not None and issubclass(sub, module.HfFileSystem)


class HfFileSystem(metaclass=_DeferredHfFileSystemType):
    """Stand-in for ``huggingface_hub.HfFileSystem`` in ``datatrove.io`` (type tests only)."""

    def __new__(cls, *args, **kwargs):
        from huggingface_hub import HfFileSystem as real  # noqa: PLC0415

        return real(*args, **kwargs)


def cached_assets_path(*args, **kwargs):
    """``huggingface_hub.cached_assets_path``, imported on first call."""
    from huggingface_hub import cached_assets_path as real  # noqa: PLC0415

    return real(*args, **kwargs)


class _DatatroveIoFinder:
    """A ``sys.meta_path`` finder for ``datatrove.io`` only (once): the module is found and loaded as usual, with
    the two stand-ins in ``huggingface_hub``'s namespace while its code runs."""

    def find_spec(self, name, path=None, target=None):
        if name != "datatrove.io":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_with_stand_ins(module) -> None:
            try:
                import huggingface_hub  # noqa: PLC0415 - its top level is light (lazy attributes)
            except ImportError:
                return exec_module(module)
            ns = huggingface_hub.__dict__
            added = []
            for k, v in (("HfFileSystem", HfFileSystem), ("cached_assets_path", cached_assets_path)):
                if k not in ns:  # (not loaded yet: a lazy attribute)
                    ns[k] = v
                    added.append(k)
            try:
                return exec_module(module)
            finally:
                for k in added:
                    ns.pop(k, None)

        loader.exec_module = exec_with_stand_ins
        return spec


# ------------------------------------------------------------------------------------------------------------------
# datatrove.pipeline.writers: its __init__ ends with ``from .huggingface import HuggingFaceBucketWriter,
# HuggingFaceDatasetWriter``, and that module imports huggingface_hub's Hub client at its top (``create_commit``,
# ``create_repo``, ...: hf_api, httpx, anyio; about 0.3 CPU-s in each process that imports any datatrove writer or
# filter, which is the main process and the forkserver of every run). assay writes no Hub dataset, so while the
# package runs its __init__ the submodule is a placeholder, and afterwards the names it gave the package are module
# attributes loaded on first use (PEP 562 ``__getattr__``): ``from datatrove.pipeline.writers import
# HuggingFaceDatasetWriter`` and ``datatrove.pipeline.writers.huggingface`` give the real class and module, imported
# then; ``import datatrove.pipeline.writers.huggingface`` imports it as usual.

_WRITERS = "datatrove.pipeline.writers"
_HF_WRITERS = _WRITERS + ".huggingface"


class _Placeholder:
    """What the placeholder module gives for every name while the package's __init__ runs."""


class _PlaceholderModule:
    def __init__(self, name: str):
        self.__name__ = name
        self.__spec__ = None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder


def _lazy_getattr(package, deferred: frozenset):
    def __getattr__(name: str):
        if name != "huggingface" and name not in deferred:
            raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
        module = importlib.import_module(_HF_WRITERS)  # sets package.huggingface
        for k in deferred:
            setattr(package, k, getattr(module, k))
        return module if name == "huggingface" else getattr(module, name)

    return __getattr__


class _DatatroveWritersFinder:
    """A ``sys.meta_path`` finder for ``datatrove.pipeline.writers`` only (once): the package is found and loaded as
    usual, with a placeholder for its ``huggingface`` submodule while its __init__ runs."""

    def find_spec(self, name, path=None, target=None):
        if name != _WRITERS:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module") or _HF_WRITERS in sys.modules:
            return spec
        exec_module = loader.exec_module

        def exec_with_placeholder(module) -> None:
            sys.modules[_HF_WRITERS] = _PlaceholderModule(_HF_WRITERS)
            try:
                exec_module(module)
            finally:
                if isinstance(sys.modules.get(_HF_WRITERS), _PlaceholderModule):
                    del sys.modules[_HF_WRITERS]
                ns = vars(module)
                if isinstance(ns.get("huggingface"), _PlaceholderModule):
                    del ns["huggingface"]
            deferred = frozenset(k for k, v in ns.items() if v is _Placeholder)
            if not deferred:
                return
            if "__getattr__" in ns:  # the package defines its own: no deferral, the real names now
                real = importlib.import_module(_HF_WRITERS)
                ns.update({k: getattr(real, k) for k in deferred})
                return
            for k in deferred:
                del ns[k]
            ns["__getattr__"] = _lazy_getattr(module, deferred)

        loader.exec_module = exec_with_placeholder
        return spec


def install() -> None:
    """Defer ``huggingface_hub``'s file system import and datatrove's Hub writers (above and below), each unless
    the module it concerns is loaded already."""
    if not ("datatrove.io" in sys.modules or _HF_FS_MODULE in sys.modules):
        if not any(isinstance(f, _DatatroveIoFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _DatatroveIoFinder())
    if not (_WRITERS in sys.modules or _HF_WRITERS in sys.modules):
        if not any(isinstance(f, _DatatroveWritersFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _DatatroveWritersFinder())
