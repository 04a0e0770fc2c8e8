"""Web family: WARC ingestion, HTML extraction that keeps code and math, language ID, heuristics.

Public functions: ``extract_html(html, url=None) -> str``, ``detect_language(text) -> (code, score)``,
``web_heuristic_signals(text) -> dict``, ``quality_score(texts) -> np.ndarray`` (the order by which the
default recipe tiers web documents), ``adult_word_share(text, lang)``. Steps: ``WarcReader``,
``HtmlExtractor``, ``LanguageId``, ``WebHeuristicSignals``, ``WebQualityScore``, ``UrlSafety``,
``AdultContent`` (imported lazily so ``import assay.stages.web`` stays cheap).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "extract_html": "assay.stages.web.extract",
    "extract_html_detailed": "assay.stages.web.extract",
    "HtmlExtractor": "assay.stages.web.extract",
    "detect_language": "assay.stages.web.langid",
    "LanguageId": "assay.stages.web.langid",
    "WarcReader": "assay.stages.web.warc",
    "decode_html_bytes": "assay.stages.web.warc",
    "WebHeuristicSignals": "assay.stages.web.heuristics",
    "web_heuristic_signals": "assay.stages.web.heuristics",
    "default_web_rules": "assay.stages.web.rules",
    "quality_score": "assay.stages.web.quality",
    "WebQualityScore": "assay.stages.web.quality",
    "UrlSafety": "assay.stages.web.safety",
    "UrlBlocklist": "assay.stages.web.safety",
    "AdultContent": "assay.stages.web.safety",
    "adult_word_share": "assay.stages.web.safety",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from assay.stages.web.extract import HtmlExtractor, extract_html, extract_html_detailed
    from assay.stages.web.heuristics import WebHeuristicSignals, web_heuristic_signals
    from assay.stages.web.langid import LanguageId, detect_language
    from assay.stages.web.quality import WebQualityScore, quality_score
    from assay.stages.web.rules import default_web_rules
    from assay.stages.web.safety import AdultContent, UrlBlocklist, UrlSafety, adult_word_share
    from assay.stages.web.warc import WarcReader, decode_html_bytes


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'assay.stages.web' has no attribute {name!r}")
    return getattr(import_module(mod), name)
