"""One train / dev / test split for every labelled set in ``../shared/data`` (grouped, fixed seed).

Every benchmark, every training config and every test that reports a held-out figure takes its split
from here, so "test" means the same pages, repositories and files everywhere. Items are grouped by the
unit that leaks between train and test if it is split: a web **site** (registrable domain), a code
**repository**, a **source file** (one TSV or dump holding many rows), a PDF **file**. A group lands in
one split only, decided by a keyed hash of the group key: stable across machines, Python versions and
runs, and independent of which other items exist (adding a page never moves another page).

    # benchmarks put their own folder on sys.path (as bench_*.py do); tests do the same
    from splits import select, site_of, split_of
    split_of(site_of("https://docs.python.org/3/library/os.html"), dataset="ir_chaos")   # 'train' | 'dev' | 'test'
    test_pages = select(pages, lambda p: site_of(p.url), "test", dataset="ir_chaos")

Proportions are 60 / 20 / 20 by default. Rules, features and models are tuned on ``train`` and ``dev``;
benchmarks and model cards report ``test``. ``SEED`` is fixed; change it only together with every
number reported against it.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from typing import Callable, Hashable, Iterable, Literal, Sequence, TypeVar
from urllib.parse import urlsplit

Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test")
SEED = "assay-splits-v1"
DEFAULT_FRACTIONS: tuple[float, float, float] = (0.6, 0.2, 0.2)

T = TypeVar("T")

# Second-level labels under which the registrable domain is one label deeper (example.co.uk).
_SECOND_LEVEL = {"co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go", "gob", "nic", "mil", "ltd", "plc"}
_IP_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def group_fraction(group: str, *, dataset: str = "", seed: str = SEED) -> float:
    """A number in [0, 1) from the group key (and the dataset name): sha256, so stable everywhere."""
    h = hashlib.sha256(f"{seed}\x00{dataset}\x00{group}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def split_of(group: str, *, dataset: str = "", fractions: Sequence[float] = DEFAULT_FRACTIONS,
             seed: str = SEED) -> Split:
    """The split of a group: ``train``, ``dev`` or ``test``."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {tuple(fractions)}")
    x = group_fraction(group, dataset=dataset, seed=seed)
    if x < fractions[0]:
        return "train"
    if x < fractions[0] + fractions[1]:
        return "dev"
    return "test"


def site_of(url_or_host: str) -> str:
    """The registrable domain of a URL or host name (``news.bbc.co.uk`` -> ``bbc.co.uk``), lower-cased,
    ``www.`` and port removed; the input itself when it has no host."""
    s = (url_or_host or "").strip()
    host = urlsplit(s if "//" in s else f"//{s}").hostname or s
    host = host.lower().rstrip(".")
    if _IP_RE.match(host):
        return host
    labels = [x for x in host.split(".") if x]
    if len(labels) <= 2:
        return ".".join(labels)
    if len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def assign(items: Iterable[T], group: Callable[[T], Hashable], *, dataset: str,
           fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: str = SEED) -> dict[Split, list[T]]:
    """Partition items into the three splits by their group key (order within a split is kept)."""
    out: dict[Split, list[T]] = {s: [] for s in SPLITS}
    for it in items:
        out[split_of(str(group(it)), dataset=dataset, fractions=fractions, seed=seed)].append(it)
    return out


def select(items: Iterable[T], group: Callable[[T], Hashable], split: Split | Iterable[Split], *, dataset: str,
           fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: str = SEED) -> list[T]:
    """The items of one split (or of several, e.g. ``("train", "dev")``)."""
    wanted = {split} if isinstance(split, str) else set(split)
    bad = wanted - set(SPLITS)
    if bad:
        raise ValueError(f"unknown split(s) {sorted(bad)}; expected train, dev or test")
    return [it for it in items
            if split_of(str(group(it)), dataset=dataset, fractions=fractions, seed=seed) in wanted]


def check_disjoint(parts: dict[Split, list[T]], group: Callable[[T], Hashable]) -> None:
    """Raise if any group appears in two splits (a guard for benchmark code that builds its own lists)."""
    seen: dict[Hashable, str] = {}
    clash: dict[Hashable, set[str]] = defaultdict(set)
    for name, items in parts.items():
        for it in items:
            g = group(it)
            if g in seen and seen[g] != name:
                clash[g].update({seen[g], name})
            seen.setdefault(g, name)
    if clash:
        g, names = next(iter(clash.items()))
        raise AssertionError(f"{len(clash)} group(s) appear in more than one split, e.g. {g!r} in {sorted(names)}")


__all__ = ["SPLITS", "SEED", "DEFAULT_FRACTIONS", "Split", "group_fraction", "split_of", "site_of", "assign",
           "select", "check_disjoint"]
