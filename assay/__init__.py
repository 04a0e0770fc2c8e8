"""assay: raw pretraining sources -> clean, deduplicated, quality-tiered Parquet shards.

The project's top-level folders install under this one namespace: ``pipeline/`` as ``assay.pipeline``,
``stages/`` as ``assay.stages``, ``classifiers/`` as ``assay.classifiers`` (see ``setup.py``).
"""
from __future__ import annotations

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("assay")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]

from assay import _deferred  # noqa: E402

_deferred.install()  # huggingface_hub's file system client (datatrove.io) and Hub writers (datatrove writers): unused by assay
