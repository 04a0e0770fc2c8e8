"""Per-language code rules (``stages/code/rules/<family>.yaml``): a view of the decision layer's rules.

Rule rows use the CONTRACT format (``{name, signal, op, value, when_missing}``); a file is
dropped with reason ``code_<name>`` for every rule whose condition is FALSE. A family file lists
its ``languages`` and merges its ``rules`` over ``default.yaml`` by name (``disabled: true``
removes a default rule). Loading and typing live in ``assay.stages.decisions.code_rules`` and
evaluation in the one decision compiler (``assay.stages.decisions.rules``): this module only
presents them to the code tools (``inspect_file``) as dicts.
"""

from __future__ import annotations

from typing import Any

from assay.stages.decisions.code_rules import load_code_rules
from assay.stages.decisions.rules import code_rule_reasons
from assay.stages.decisions.spec import DEFAULT_CODE_RULES_DIR

__all__ = ["RULES_DIR", "load_rules", "language_family", "code_rule_decisions", "all_rules"]

RULES_DIR = DEFAULT_CODE_RULES_DIR


def _row(rule) -> dict[str, Any]:
    return rule.model_dump(exclude={"disabled"})


def load_rules(family: str = "default", rules_dir: str | None = None) -> list[dict]:
    """Merged rule list of one family."""
    return [_row(r) for r in load_code_rules(rules_dir).rules(family)]


def all_rules(rules_dir: str | None = None) -> dict[str, list[dict]]:
    return {fam: [_row(r) for r in rules] for fam, rules in load_code_rules(rules_dir).families.items()}


def language_family(language: str | None, rules_dir: str | None = None) -> str:
    """Family name for a canonical language ("default" when unknown or None)."""
    return load_code_rules(rules_dir).family_of(language)


def code_rule_decisions(signals: dict, language: str | None, *, rules_dir: str | None = None) -> list[str]:
    """Reason codes (``code_<rule>``) of every rule of ``language``'s family that the file fails.

    ``signals`` may use stored keys (``code__max_line_length``) or bare ones (``max_line_length``)."""
    return code_rule_reasons(signals, language, rules_dir=str(rules_dir) if rules_dir else None)
