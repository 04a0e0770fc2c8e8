"""Web family: WARC ingestion, HTML extraction that keeps code and math, language ID, heuristics.

Public functions: ``extract_html(html, url=None) -> str``, ``detect_language(text) -> (code, score)``,
``web_heuristic_signals(text) -> dict``. Steps: ``WarcReader``, ``HtmlExtractor``, ``LanguageId``,
``WebHeuristicSignals`` (imported lazily so ``import stages.web`` stays cheap).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "extract_html": "stages.web.extract",
    "extract_html_detailed": "stages.web.extract",
    "HtmlExtractor": "stages.web.extract",
    "detect_language": "stages.web.langid",
    "LanguageId": "stages.web.langid",
    "WarcReader": "stages.web.warc",
    "decode_html_bytes": "stages.web.warc",
    "WebHeuristicSignals": "stages.web.heuristics",
    "web_heuristic_signals": "stages.web.heuristics",
    "default_web_rules": "stages.web.rules",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from stages.web.extract import HtmlExtractor, extract_html, extract_html_detailed
    from stages.web.heuristics import WebHeuristicSignals, web_heuristic_signals
    from stages.web.langid import LanguageId, detect_language
    from stages.web.rules import default_web_rules
    from stages.web.warc import WarcReader, decode_html_bytes


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'stages.web' has no attribute {name!r}")
    return getattr(import_module(mod), name)
