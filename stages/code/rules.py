"""Per-language code rules (``stages/code/rules/<family>.yaml``) and their evaluation.

Rule rows use the CONTRACT format (``{name, signal, op, value, when_missing}``); a file is
dropped with reason ``code_<name>`` for every rule whose condition is FALSE. A family file lists
its ``languages`` and merges its ``rules`` over ``default.yaml`` by name (``disabled: true``
removes a default rule).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["RULES_DIR", "load_rules", "language_family", "code_rule_decisions", "evaluate_rule", "all_rules"]

RULES_DIR = Path(__file__).resolve().parent / "rules"
_OPS = {">=", ">", "<=", "<", "==", "!=", "in", "not in", "is_true", "is_false"}


def _read_yaml(path: Path) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    for r in data.get("rules") or []:
        if r.get("disabled"):
            continue
        if "name" not in r or "signal" not in r or r.get("op") not in _OPS:
            raise ValueError(f"{path.name}: malformed rule {r!r}")
    return data


@lru_cache(maxsize=8)
def _families(rules_dir: str) -> tuple[dict[str, list[dict]], dict[str, str]]:
    d = Path(rules_dir)
    default = _read_yaml(d / "default.yaml")
    base = [dict(r) for r in default.get("rules") or []]
    families: dict[str, list[dict]] = {"default": base}
    lang_map: dict[str, str] = {}
    for f in sorted(d.glob("*.yaml")):
        if f.stem == "default":
            continue
        data = _read_yaml(f)
        fam = data.get("family") or f.stem
        merged = {r["name"]: dict(r) for r in base}
        for r in data.get("rules") or []:
            if r.get("disabled"):
                merged.pop(r["name"], None)
            else:
                merged[r["name"]] = dict(r)
        families[fam] = list(merged.values())
        for lang in data.get("languages") or []:
            lang_map[str(lang)] = fam
    return families, lang_map


def load_rules(family: str = "default", rules_dir: str | None = None) -> list[dict]:
    """Merged rule list of one family."""
    fams, _ = _families(str(rules_dir or RULES_DIR))
    return [dict(r) for r in fams.get(family, fams["default"])]


def all_rules(rules_dir: str | None = None) -> dict[str, list[dict]]:
    fams, _ = _families(str(rules_dir or RULES_DIR))
    return {k: [dict(r) for r in v] for k, v in fams.items()}


def language_family(language: str | None, rules_dir: str | None = None) -> str:
    """Family name for a canonical language ("default" when unknown or None)."""
    if not language:
        return "default"
    _, lang_map = _families(str(rules_dir or RULES_DIR))
    return lang_map.get(language, "default")


def _lookup(signals: dict, key: str) -> Any:
    if key in signals:
        return signals[key]
    if key.startswith("code__") and key[6:] in signals:
        return signals[key[6:]]
    return None


def evaluate_rule(rule: dict, signals: dict) -> bool | None:
    """True when the rule's condition holds, False when it fails, None when the signal is missing."""
    v = _lookup(signals, rule["signal"])
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    op, ref = rule["op"], rule.get("value")
    if op == "is_true":
        return bool(v)
    if op == "is_false":
        return not bool(v)
    if op == "in":
        return v in ref
    if op == "not in":
        return v not in ref
    if op == "==":
        return v == ref
    if op == "!=":
        return v != ref
    try:
        if op == ">=":
            return v >= ref
        if op == ">":
            return v > ref
        if op == "<=":
            return v <= ref
        if op == "<":
            return v < ref
    except TypeError:
        return None
    raise ValueError(f"unknown op {op!r}")


def code_rule_decisions(signals: dict, language: str | None, *, rules_dir: str | None = None) -> list[str]:
    """Reason codes (``code_<rule>``) of every rule of ``language``'s family that the file fails.

    ``signals`` may use stored keys (``code__max_line_length``) or bare ones (``max_line_length``).
    """
    reasons: list[str] = []
    for rule in load_rules(language_family(language, rules_dir), rules_dir):
        ok = evaluate_rule(rule, signals)
        if ok is None:
            ok = rule.get("when_missing", "keep") != "reject"
        if not ok:
            reasons.append(f"code_{rule['name']}")
    return reasons
