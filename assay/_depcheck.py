"""datatrove's dependency check of a pipeline step, without parsing every installed package's metadata.

Every ``PipelineStep`` object datatrove creates, built or unpickled (a worker unpickling its pipeline, an inline
phase deep-copying it), runs ``check_required_dependencies`` on the step class's ``_requires_dependencies``
(``warcio`` for assay's WARC reader). For each name it calls ``_is_distribution_available``, which parses the
metadata of every installed distribution (about 170 here: 0.09 CPU-s per name and process, paid by the main
process and by every worker of a run, since the answer is cached per process only).

``install()`` replaces that function in ``datatrove.utils._import_utils`` by ``is_distribution_available``: it
first reads the metadata of the distributions whose folder name (``<name>-<version>.dist-info``) normalises to the
wanted name, the one such a distribution is found by in practice; when none of them has that ``Name``, it asks
datatrove's own function, so the answer is always datatrove's: ``True`` when some installed distribution's
``Name``, lower-cased, equals the name asked for, else ``None``.
"""

from __future__ import annotations

import importlib.metadata
import re
from functools import lru_cache

_ORIGINAL = "_assay_original"


def _normalize(name: str) -> str:
    """``importlib.metadata.Prepared.normalize``: PEP 503 normalisation, dashes as underscores."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _named(dist, distribution_name: str) -> bool:
    """datatrove's test of one distribution: its metadata ``Name``, lower-cased, is ``distribution_name``."""
    metadata = getattr(dist, "metadata", None)
    dist_name = metadata.get("Name") if metadata is not None else None
    return bool(dist_name) and dist_name.lower() == distribution_name


def fast_distribution_available(distribution_name: str, original) -> bool | None:
    """``original(distribution_name)`` (datatrove's ``_is_distribution_available``, unwrapped), reading the
    metadata of the distributions whose folder names the wanted one first."""
    wanted = _normalize(distribution_name)
    for dist in importlib.metadata.distributions():
        # PathDistribution reads the normalised name off its folder (no metadata parsed); others parse it
        if getattr(dist, "_normalized_name", None) == wanted and _named(dist, distribution_name):
            return True
    return original(distribution_name)


def install() -> bool:
    """Put the fast check in ``datatrove.utils._import_utils`` (once per process); False without datatrove."""
    try:
        from datatrove.utils import _import_utils  # noqa: PLC0415
    except ImportError:  # pragma: no cover - datatrove is a dependency
        return False
    current = _import_utils._is_distribution_available
    if getattr(current, _ORIGINAL, None) is not None:
        return True
    original = getattr(current, "__wrapped__", current)  # datatrove's function is lru_cached

    @lru_cache
    def is_distribution_available(distribution_name: str):
        return fast_distribution_available(distribution_name, original)

    setattr(is_distribution_available, _ORIGINAL, original)
    _import_utils._is_distribution_available = is_distribution_available
    return True
