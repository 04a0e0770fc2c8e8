"""Imported by the forkserver of a local run, last of its preloaded modules: loads, once, what the steps of
the run would each load lazily in every worker (``warm()`` of a step: the decontamination index), so every
worker forked from the forkserver starts with it (copy-on-write) instead of loading it again.

The steps come pickled (dill) in the file named by ``$ASSAY_FORKSERVER_WARM`` (``assay.pipeline.executors``
writes it before the forkserver starts); the file is removed once read. Nothing here may fail the
forkserver: any error leaves the workers to load lazily, as without this module. Importing it elsewhere
does nothing unless that variable is set."""

from __future__ import annotations

import os

ENV = "ASSAY_FORKSERVER_WARM"


def warm_from(path: str) -> int:
    """Call ``warm()`` on every step pickled in ``path``; returns how many were warmed."""
    import dill

    with open(path, "rb") as fh:
        steps = dill.load(fh)
    n = 0
    for step in steps:
        try:
            step.warm()
            n += 1
        except Exception:  # noqa: BLE001 - the step loads lazily in each worker instead
            pass
    return n


def _warm_from_env() -> None:
    path = os.environ.pop(ENV, None)
    if not path:
        return
    try:
        warm_from(path)
    except Exception:  # noqa: BLE001 - see the module docstring
        pass
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


_warm_from_env()
