"""The length order of the dedup keep policy, shared by the clusters phase (`dedup.minhash.choose_kept`)
and the decision layer (`decisions.dedup.keepers`)."""

from __future__ import annotations

import numpy as np

__all__ = ["LENGTH_CLASS_RATIO", "length_class"]

# the keep policy's length tie-break compares texts by length class: lengths within about 5% of each other
# are one class, so among copies of one version (a few words edited, inserted or repeated) the id decides,
# and a version at least ~5% longer (a newer, more complete page) wins
LENGTH_CLASS_RATIO = 1.05


def length_class(length) -> np.ndarray:
    """Per length in UTF-8 bytes, its class ``floor(log(length) / log(LENGTH_CLASS_RATIO)) + 1`` (int64);
    0 where the length is unknown (0 or missing). Longer texts never get a lower class."""
    a = np.nan_to_num(np.asarray(length, dtype=np.float64), nan=0.0)
    out = np.zeros(a.shape, dtype=np.int64)
    pos = a >= 1
    out[pos] = np.floor(np.log(a[pos]) / np.log(LENGTH_CLASS_RATIO)).astype(np.int64) + 1
    return out
