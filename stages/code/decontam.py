"""Moved to ``assay.stages.signals.decontam`` (decontamination applies to every source); kept so
existing imports and recipes keep working."""

from assay.stages.signals.decontam import (  # noqa: F401
    Decontamination,
    EvalIndex,
    EvalItem,
    build_index,
    load_eval_items,
)

__all__ = ["Decontamination", "EvalIndex", "EvalItem", "load_eval_items", "build_index"]
