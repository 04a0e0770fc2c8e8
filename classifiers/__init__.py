"""assay classifiers: fastText quality models (train, evaluate, predict, calibrate).

Never imports datatrove. ``import assay.classifiers`` is cheap: fastText loads on first ``load()``.

    >>> import assay.classifiers
    >>> m = assay.classifiers.load("web")
    >>> m.score(["Some text ..."])          # np.ndarray of floats in [0, 1], higher = better
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from assay.classifiers.model import QualityModel

__all__ = ["load", "percentile", "SHIPPED"]

SHIPPED = ("web", "code", "stem", "code_corruption", "pdf", "web_ml")


def load(name: str, *, cache: bool = True) -> "QualityModel":
    """Load a shipped model (``"web"``, ``"code"``, ``"stem"``, ``"code_corruption"``, ``"pdf"``) or a model path."""
    from assay.classifiers.model import load as _load  # noqa: PLC0415

    return _load(name, cache=cache)


def __getattr__(attr: str):
    if attr in ("percentile", "build_table"):
        from assay.classifiers import calibrate  # noqa: PLC0415

        return getattr(calibrate, attr)
    raise AttributeError(f"module 'classifiers' has no attribute {attr!r}")
