"""Per-language code rule files (`stages/code/rules/<family>.yaml`), loaded and typed.

A family file lists its `languages` and merges its `rules` over `default.yaml` by name
(`disabled: true` removes a default rule). Rows are `CodeRuleSpec`s (typed like recipe rules); the
compiler in `assay.stages.decisions.rules` turns them into polars expressions with reason `code_<name>`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from assay.stages.decisions.spec import DEFAULT_CODE_RULES_DIR, CodeRuleFile, CodeRuleSpec

__all__ = ["CodeRules", "load_code_rules", "rules_dir_of"]


class CodeRules:
    """Merged rules per family and the language -> family map of one rules folder."""

    def __init__(self, families: dict[str, list[CodeRuleSpec]], lang_map: dict[str, str], folder: Path):
        self.families = families
        self.lang_map = lang_map
        self.folder = folder

    def family_of(self, language: str | None) -> str:
        return self.lang_map.get(language, "default") if language else "default"

    def rules(self, family: str = "default") -> list[CodeRuleSpec]:
        return list(self.families.get(family, self.families["default"]))


def _read(path: Path) -> CodeRuleFile:
    import yaml
    from pydantic import ValidationError

    with open(path, encoding="utf-8") as f:  # libyaml's safe loader when built (same values, 6x faster)
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    try:
        return CodeRuleFile.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join(str(x) for x in e["loc"])
        raise ValueError(f"{path}: {where}: {e['msg']}") from None


def rules_dir_of(code_rules: str | None) -> Path | None:
    """The folder a `decisions.code_rules` value names (None: no code rules)."""
    if not code_rules:
        return None
    return DEFAULT_CODE_RULES_DIR if code_rules == "default" else Path(code_rules)


@lru_cache(maxsize=8)
def _load(folder: str) -> CodeRules:
    d = Path(folder)
    if not (d / "default.yaml").is_file():
        raise ValueError(f"code rules folder {d} has no default.yaml")
    base = [r for r in _read(d / "default.yaml").rules if not r.disabled]
    families: dict[str, list[CodeRuleSpec]] = {"default": base}
    lang_map: dict[str, str] = {}
    for f in sorted(d.glob("*.yaml")):
        if f.stem == "default":
            continue
        data = _read(f)
        fam = data.family or f.stem
        merged = {r.name: r for r in base}
        for r in data.rules:
            if r.disabled:
                merged.pop(r.name, None)
            else:
                merged[r.name] = r
        families[fam] = list(merged.values())
        for lang in data.languages:
            lang_map[str(lang)] = fam
    return CodeRules(families, lang_map, d)


def load_code_rules(folder: str | Path | None = None) -> CodeRules:
    """The rules of a folder (default: the shipped `stages/code/rules`)."""
    return _load(str(Path(folder) if folder else DEFAULT_CODE_RULES_DIR))
