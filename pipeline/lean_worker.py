"""Imported by the forkserver of a local pool (``executors.ARROW_MODULES``, after pyarrow): applies
``lean.lean_worker`` there once, so that every worker forked from it starts without pandas and with pandas'
hash tables loaded (a forkserver preloads modules by name only: this module is that name)."""

from assay.pipeline.lean import lean_worker

SETTINGS = lean_worker()
