"""The web family's proposed default decision rules (``default_rules.yaml``, CONTRACT format)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_RULES_PATH = Path(__file__).with_name("default_rules.yaml")


def default_web_rules() -> list[dict]:
    """The proposed ``decisions.rules`` list for web documents."""
    import yaml

    return yaml.safe_load(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))["decisions"]["rules"]
