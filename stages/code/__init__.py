"""Code curation: ingestion, language id, per-file signals/flags, per-language rules,
rebalancing, decontamination. Public entry points are imported lazily."""

from __future__ import annotations

__all__ = ["inspect_file", "FileReport", "code_rule_decisions", "plan_rebalance", "rebalance_keep"]


def __getattr__(name: str):
    if name in ("inspect_file", "FileReport"):
        from assay.stages.code import inspection as _m

        return getattr(_m, name)
    if name == "code_rule_decisions":
        from assay.stages.code.rules import code_rule_decisions

        return code_rule_decisions
    if name in ("plan_rebalance", "rebalance_keep"):
        from assay.stages.code import rebalance as _r

        return getattr(_r, name)
    raise AttributeError(name)
