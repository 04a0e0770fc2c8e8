"""Registry of stage kinds: versioned names -> step classes, and the signals each kind produces.

Recipes never name module paths; they name a kind from this table. A new behaviour gets a new
version (`..._v2`) so old recipes keep meaning what they meant.

Every kind declares the signals it produces (name and type; `<m>` marks a family such as
`fasttext_<m>__pct`, expanded from the step's parameters), like NeMo Curator stages declare their
outputs. From them come the recipe check at load (`check_decisions`: an unknown signal, a value of the
wrong type or an operator that does not fit the signal is a one-line error naming the rule and its
line) and the one explicit schema of the signal store (`store_schema`). A step that writes a new
metadata key declares it here; an undeclared key is still stored, in the store's `extra` JSON column.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


class RecipeError(ValueError):
    """A recipe that cannot be used; the message is one line naming the problem."""


def _names(prefix: str, typ: str, *names: str) -> dict[str, str]:
    return {f"{prefix}{n}": typ for n in names}


def _heuristics(prefix: str) -> dict[str, str]:
    g, c, f = f"{prefix}gopher__", f"{prefix}c4__", f"{prefix}fineweb__"
    return {
        **_names(g, "int", "n_words", "stop_words"),
        **_names(g, "float", "alpha_words_ratio", "alpha_ws_words_ratio", "bullet_lines_ratio", "dup_line_char_frac",
                 "dup_line_frac", "dup_para_char_frac", "dup_para_frac", "ellipsis_word_ratio",
                 "end_ellipsis_lines_ratio", "hash_word_ratio", "mean_word_length", "top_2gram_char_frac",
                 "top_3gram_char_frac", "top_4gram_char_frac", *(f"dup_{n}gram_char_frac" for n in range(5, 11))),
        **_names(c, "bool", "has_curly_bracket", "has_lorem_ipsum", "has_lorem_ipsum_filler"),
        **_names(c, "int", "n_lines", "n_sentences", "too_long_word_lines"),
        **_names(c, "float", "javascript_lines_frac", "kept_lines_frac", "policy_lines_frac"),
        **_names(f, "float", "char_dup_ratio", "line_punct_ratio", "list_ratio", "short_line_ratio"),
    }


WEB_HEURISTICS = {
    **_heuristics(""), **_heuristics("prose__"),
    # reference-aware repetition signals (stages/web/heuristics.py `reference_signals`): the duplicate and
    # top-n-gram fractions and FineWeb's char_dup, measured without label lines on reference pages
    **{("ref__" + k[len("prose__"):]): v for k, v in _heuristics("prose__").items()
       if k.startswith(("prose__gopher__dup_", "prose__gopher__top_")) or k == "prose__fineweb__char_dup_ratio"},
    **_names("web__", "float", "code_char_frac", "code_share", "identifier_share", "math_char_frac",
             "prose_char_frac"),
    **_names("web__", "int", "measured_chars", "n_code_blocks", "n_math", "table_rows", "n_inline_code"),
    "web__reference_page": "bool",
}
PROVENANCE = {"url": "str", "path": "str", "date": "str", "content_type": "str", "record_id": "str",
              "source_file": "str"}
WARC = {
    **PROVENANCE,
    **_names("warc__", "str", "type", "charset", "charset_source", "error", "truncated"),
    **_names("warc__", "int", "http_status", "offset", "resync_offset", "missing_bytes"),
    "warc__payload_cut": "bool",
}
CODE_READER = {**PROVENANCE, "repo": "str", "license": "str", "n_bytes": "int", "code__encoding": "str"}
CODE_SIGNALS = {
    **_names("code__", "str", "language", "language_method", "family", "flags", "evidence"),
    **_names("code__", "bool", "generated", "vendored", "minified", "lockfile", "data", "encoded", "binary",
             "truncated_analysis"),
    **_names("code__", "int", "encoded_max_span", "encoded_spans", "max_line_length", "n_chars", "n_lines",
             "n_nonblank_lines", "n_tokens"),
    **_names("code__", "float", "alnum_fraction", "alpha_fraction", "avg_line_length", "comment_fraction",
             "digit_fraction", "dup_ngram_fraction", "duplicate_line_fraction", "encoded_fraction",
             "import_line_fraction", "literal_line_fraction", "long_line_fraction", "long_line_whitespace_fraction",
             "non_ascii_fraction", "numeric_token_fraction", "whitespace_fraction"),
}
PDF_READER = {**PROVENANCE, "pdf__bytes": "int", "pdf__n_pages": "int", "pdf__repaired": "bool",
              "pdf__missing_pages": "int", "pdf__trailer_lost": "bool"}
PDF_TEXT = {
    **_names("pdf__", "str", "producer", "pages", "page_status", "page_errors_detail"),
    **_names("pdf__", "int", "font_problems", "page_errors", "replacement_chars", "text_chars"),
    **_names("pdf__", "float", "image_coverage", "invisible_text", "text_coverage", "empty_page_share",
             "failed_page_share", "garbled_share"),
    "pdf__scanner_hint": "bool",
}
PDF_ROUTER = {**_names("pdf__", "str", "route", "route_scores"), "pdf__ocr_share": "float"}
PDF_OCR = {
    **_names("pdf__", "str", "ocr_backend", "ocr_languages"),
    **_names("pdf__", "int", "ocr_failed_pages", "ocr_fallback_pages", "ocr_ok_pages", "ocr_pages", "ocr_requests",
             "ocr_retried_pages", "ocr_rotated_pages"),
}
PDF_ARTIFACTS = {
    **_names("pdf__artifact__", "int", "bad_chars", "blank_hallucination", "char_run", "low_entropy",
             "repeated_lines", "repeated_sentences", "script_mismatch", "table_garbage", "tail_loop",
             "text_layer_disagreement", "truncation"),
    **_names("pdf__", "str", "artifacts", "page_artifacts"),
    "pdf__artifact_pages": "int", "pdf__artifact_page_share": "float",
}
EXTRACT = {
    **_names("extract__", "str", "backend", "error"),
    **_names("extract__", "int", "chars", "html_chars", "n_code_blocks", "n_inline_code", "n_math", "n_tables",
             "tokens"),
    "html__raw_tokens": "int",  # whitespace tokens of the raw HTML: where the report's web funnel starts
}
LANGID = {**_names("lang__", "str", "code", "model"),
          **_names("lang__", "float", "score", "score_margin", "prose_score_margin", "threshold")}
DECONT = {**_names("decont__", "str", "benchmark", "item", "mode"), "decont__match": "bool", "decont__overlap": "float",
          "decont__checked": "bool"}
QUALITY = {"fasttext_<m>__score": "float", "fasttext_<m>__pct": "float"}
NORMALIZE = {"normalize__changed": "bool", "normalize__chars_delta": "int"}
WEB_QUALITY = {"quality__web_score": "float", "quality__web_pct": "float", "quality__lang": "str"}
URL_SAFETY = {"safety__url_blocked": "bool", **_names("safety__", "str", "url_reason", "url_category")}
ADULT = {"safety__adult_share": "float", "safety__adult_words": "int", "safety__adult_distinct": "int",
         "safety__adult_lang": "str"}

# written by every run whatever its steps (core columns, dedup signatures, the dedup priority)
CORE_SIGNALS = {"id": "str", "source": "str", "reject_reason": "str"}
RUN_SIGNALS = {"dedup__doc_key": "int", "dedup__exact_hash": "str", "quality__priority": "int",
               "doc__bytes": "int", "doc__tokens": "int"}  # doc__*: stored sizes (DocumentSize)
# set in the decide phase (not stored): rules may not name them, but the output carries them
DECIDE_SIGNALS = {"dedup__cluster_id": "int", "dedup__cluster_size": "int", "dedup__duplicate_of": "str",
                  "dedup__exact_duplicate": "bool", "dedup__is_duplicate": "bool", "quality__bucket": "int",
                  "store__issues": "str"}


def _quality_names(params: Mapping[str, Any]) -> list[str]:
    from assay.stages.signals.quality import signal_name

    models = params.get("models") or ["web"]
    return [signal_name(m).removeprefix("fasttext_") for m in models]


@dataclass(frozen=True)
class StageKind:
    name: str
    target: str  # "module:Class"
    role: str  # reader | parse | signal | output
    summary: str
    signals: Mapping[str, str] = field(default_factory=dict)  # name or `<m>` pattern -> bool|int|float|str
    expand: Callable[[Mapping[str, Any]], list[str]] | None = None  # values of `<m>` from the params

    def load(self) -> type:
        module, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise RecipeError(f"stage kind '{self.name}' is not available: {e}") from None

    def produces(self, params: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Concrete signal names and types of this kind with these parameters (patterns expanded)."""
        out: dict[str, str] = {}
        for name, typ in self.signals.items():
            if "<m>" not in name:
                out[name] = typ
            elif self.expand is not None:
                for m in self.expand(params or {}):
                    out[name.replace("<m>", m)] = typ
        return out


_KINDS = [
    StageKind("warc_reader_v1", "assay.stages.web.warc:WarcReader", "reader", "WARC/ARC/WET records -> HTML documents",
              WARC),
    StageKind("html_extract_v1", "assay.stages.web.extract:HtmlExtractor", "parse", "HTML -> text, keeping code and math",
              EXTRACT),
    StageKind("language_id_v1", "assay.stages.web.langid:LanguageId", "signal", "fastText lid.176 language and score",
              LANGID),
    StageKind("web_heuristics_v1", "assay.stages.web.heuristics:WebHeuristicSignals", "signal",
              "Gopher/C4/FineWeb signals, classic and prose-only", WEB_HEURISTICS),
    StageKind("code_reader_v1", "assay.stages.code.reader:CodeReader", "reader",
              "source trees, archives, Stack-style tables", CODE_READER),
    StageKind("code_signals_v1", "assay.stages.code.signals:CodeSignals", "signal",
              "language, generated/vendored/minified/encoded flags, code statistics", CODE_SIGNALS),
    StageKind("decontamination_v1", "assay.stages.signals.decontam:Decontamination", "signal",
              "n-gram/substring overlap with evaluation sets (every source)", DECONT),
    StageKind("pdf_reader_v1", "assay.stages.pdf.reader:PdfReader", "reader", "PDF files, directories and WARC records",
              PDF_READER),
    StageKind("pdf_text_layer_v1", "assay.stages.pdf.textlayer:PdfTextLayer", "parse",
              "per-page text layer and page features", PDF_TEXT),
    StageKind("pdf_router_v1", "assay.stages.pdf.routing:PdfRouter", "signal", "per-page text-layer vs OCR routing",
              PDF_ROUTER),
    StageKind("pdf_ocr_v1", "assay.stages.pdf.ocr:PdfOcr", "parse", "VLM OCR of routed pages (vLLM or endpoint)", PDF_OCR),
    StageKind("pdf_artifacts_v1", "assay.stages.pdf.artifacts:PdfArtifactSignals", "signal",
              "detectors for malformed reconstructions", PDF_ARTIFACTS),
    StageKind("quality_scores_v1", "assay.stages.signals.quality:QualityScores", "signal",
              "fastText quality classifiers (web, code, stem) and calibrated percentiles", QUALITY, _quality_names),
    StageKind("web_quality_v1", "assay.stages.web.quality:WebQualityScore", "signal",
              "learned web quality order: quality__web_score, quality__web_pct, quality__lang", WEB_QUALITY),
    StageKind("url_safety_v1", "assay.stages.web.safety:UrlSafety", "signal",
              "UT1-format domain/URL blocklists and banned URL words: safety__url_blocked, safety__url_reason",
              URL_SAFETY),
    StageKind("adult_content_v1", "assay.stages.web.safety:AdultContent", "signal",
              "LDNOOBW adult-word share per language: safety__adult_share, safety__adult_words, safety__adult_distinct",
              ADULT),
    StageKind("normalize_v1", "assay.stages.output.normalize:TextNormalizer", "parse", "NFC, mojibake repair, newlines",
              NORMALIZE),
]

REGISTRY: dict[str, StageKind] = {k.name: k for k in _KINDS}


def get_kind(name: str) -> StageKind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise RecipeError(f"unknown stage kind '{name}' (known: {', '.join(sorted(REGISTRY))})") from None


def check_params(cls: type, kind: str, params: dict[str, Any]) -> None:
    """Reject parameters the step's constructor does not take, naming them."""
    sig = inspect.signature(cls.__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    allowed = {n for n in sig.parameters if n != "self"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise RecipeError(f"stage '{kind}': unknown parameter(s) {unknown} (takes: {sorted(allowed)})")


def build_step(spec, *, resolve: Any = None):
    """Instantiate one step from its `StepSpec`. `resolve` maps parameter values (e.g. `sample:web` paths)."""
    kind = get_kind(spec.kind)
    cls = kind.load()
    params = dict(spec.params)
    check_params(cls, spec.kind, params)
    if resolve is not None:
        params = {k: resolve(v) for k, v in params.items()}
    try:
        return cls(**params)
    except (TypeError, ValueError) as e:
        raise RecipeError(f"stage '{spec.kind}': {e}") from None


# ------------------------------------------------------------------------------------- declared signals


def _step_signals(steps) -> dict[str, str]:
    out: dict[str, str] = {}
    for step in steps:
        kind = REGISTRY.get(step.kind)
        if kind is not None:
            out.update(kind.produces(step.params))
    return out


def source_signals(recipe) -> dict[str, dict[str, str]]:
    """Per source name, every signal its reader, its steps and the common steps declare (with core and run signals)."""
    common = _step_signals(recipe.common_steps)
    return {
        src.name: {**CORE_SIGNALS, **RUN_SIGNALS, **_step_signals([src.reader, *src.steps]), **common}
        for src in recipe.sources
    }


def store_schema(recipe) -> dict[str, str]:
    """The explicit schema of a run's signal store: every declared signal of every source, in a fixed order."""
    out = {"id": "str", "text": "str", **CORE_SIGNALS}
    for sigs in source_signals(recipe).values():
        for k, v in sigs.items():
            out.setdefault(k, v)
    return out


def output_signal_schema(recipe) -> dict[str, str]:
    """The typed signals of the output shards and exclusions: the store's namespaced signals and the decide phase's."""
    stored = _stored_schema(recipe.retier_from) if recipe.retier_from and not recipe.sources else None
    sch = {**(stored if stored is not None else store_schema(recipe)), **DECIDE_SIGNALS}
    return {k: v for k, v in sch.items() if "__" in k}


def _stored_schema(run_dir) -> dict[str, str] | None:
    """The schema of an earlier run's store (for a re-tier recipe), or None when unknown."""
    import json
    from pathlib import Path

    p = Path(run_dir) / "signals" / "_schema.json"
    if not p.is_file():
        return None
    try:
        return dict(json.loads(p.read_text())["signals"])
    except (ValueError, KeyError, TypeError):
        return None


def decision_problems(recipe, lines: Mapping[tuple, int] | None = None) -> list[tuple[str, tuple]]:
    """Every problem of the recipe's decisions against the declared signals: (message, recipe location)."""
    from assay.stages.decisions.code_rules import load_code_rules, rules_dir_of
    from assay.stages.decisions.spec import check_rule_signal

    if recipe.sources:
        per_source = source_signals(recipe)
    else:
        stored = _stored_schema(recipe.retier_from) if recipe.retier_from else None
        if stored is None:
            return []
        per_source = {None: {**stored, **RUN_SIGNALS}}
    problems: list[tuple[str, tuple]] = []
    dec = recipe.decisions

    def typ_in(sources, signal):
        found = None
        for s in sources:
            t = per_source.get(s, {}).get(signal)
            if t is not None:
                found = t
        return found

    all_sources = list(per_source)
    for i, rule in enumerate(dec.rules):
        srcs = [s for s in (rule.sources() or all_sources) if s in per_source] or (
            [None] if None in per_source else [])
        if not srcs:  # a rule for a source this recipe does not read applies to nothing
            continue
        why = check_rule_signal(rule.name, rule.signal, rule.op, rule.value, typ_in(srcs, rule.signal))
        if why:
            problems.append((why, ("decisions", "rules", i)))
        conds = rule.unless_conditions()
        for j, u in enumerate(conds):
            why = check_rule_signal(f"{rule.name} (unless)", u.signal, u.op, u.value, typ_in(srcs, u.signal))
            if why:
                where = ("decisions", "rules", i, "unless") + ((j,) if isinstance(rule.unless, list) else ())
                problems.append((why, where))
    for src, weights in dec.ensemble.items():
        srcs = [src] if src in per_source else ([None] if None in per_source else [])
        for sig in weights:
            t = typ_in(srcs, sig) if srcs else "float"
            if t not in ("int", "float"):
                what = "unknown signal" if t is None else f"a {t} signal"
                problems.append((f"ensemble {src}: '{sig}' is {what}, not a numeric percentile",
                                 ("decisions", "ensemble", src, sig)))
    if dec.rebalance is not None and (dec.rebalance.source in per_source or None in per_source):
        src = dec.rebalance.source if dec.rebalance.source in per_source else None
        if typ_in([src], dec.rebalance.key) is None:
            problems.append((f"rebalance: unknown key signal '{dec.rebalance.key}'", ("decisions", "rebalance", "key")))
    folder = rules_dir_of(dec.code_rules)
    if folder is not None and "code" in per_source:
        try:
            rules = load_code_rules(folder)
        except (OSError, ValueError) as e:
            problems.append((f"code_rules: {e}", ("decisions", "code_rules")))
        else:
            for fam, fam_rules in rules.families.items():
                for r in fam_rules:
                    why = check_rule_signal(f"code_{r.name} ({fam})", r.signal, r.op, r.value,
                                            per_source["code"].get(r.signal))
                    if why:
                        problems.append((f"{why} in {folder}", ("decisions", "code_rules")))
    return problems


def check_decisions(recipe, lines: Mapping[tuple, int] | None = None, where: str = "<recipe>") -> None:
    """Raise a one-line RecipeError for the first problem of `decision_problems`, with its recipe line."""
    problems = decision_problems(recipe, lines)
    if not problems:
        return
    msg, loc = problems[0]
    line = None
    lines = lines or {}
    probe = tuple(loc)
    while probe and line is None:
        line = lines.get(probe)
        probe = probe[:-1]
    at = f"{where}:{line}" if line else where
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise RecipeError(f"{at}: {msg}{more}")
