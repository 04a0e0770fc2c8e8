"""Text normalisation, shingling and vectorised MinHash signatures (numpy + xxhash, no datatrove).

Pipeline for a batch of texts:
1. normalise: lowercase, punctuation/symbols/controls -> space, digits -> 0, accents stripped
   (NFD + drop combining marks), whitespace collapsed; ASCII bytes are handled with
   ``bytes.lower``/``bytes.translate``, only runs of non-ASCII characters go through Python;
2. tokens: words (whitespace-separated runs of the normalised text; the whole batch is tokenised
   and hashed at once with numpy: polynomial hash of each token's bytes from prefix sums, murmur3
   fmix64 finaliser) or, for scripts without spaces, characters (xxh3-64 of each distinct char);
3. shingles: n consecutive token hashes combined into one 64-bit n-gram hash (vectorised
   polynomial step + fmix64);
4. signatures: ``bands * rows`` affine permutations ``a*x + b mod 2**w`` (``a`` odd, so each is a
   bijection: no collisions added by the permutation; w = ``hash_bits``) computed for all shingles
   of the batch at once in a (perm x shingle) layout, min-reduced per document with
   ``np.minimum.reduceat``;
5. band hashes: xxh3-64 of each band's ``rows`` values; exact hash: xxh3-128 of the document's
   normalised token-hash sequence (equal normalised texts <=> equal hash).
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from assay.stages.dedup.config import DedupConfig

_U64 = np.uint64
_P = np.array([0x9E3779B97F4A7C15], dtype=_U64)  # polynomial multiplier (odd)
_F1 = np.array([0xFF51AFD7ED558CCD], dtype=_U64)
_F2 = np.array([0xC4CEB9FE1A85EC53], dtype=_U64)
_CHUNK = 4096  # shingles per vectorised permutation block (perm x chunk fits in L2)


# ----------------------------------------------------------------------------------------------
# normalisation
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _ascii_table(remove_punctuation: bool, normalize_numbers: bool) -> bytes:
    src, dst = bytearray(), bytearray()
    if remove_punctuation:
        for ch in string.punctuation:
            src.append(ord(ch))
            dst.append(32)
        for c in list(range(0, 32)) + [127]:
            src.append(c)
            dst.append(32)
    if normalize_numbers:
        for ch in string.digits:
            src.append(ord(ch))
            dst.append(ord("0"))
    return bytes.maketrans(bytes(src), bytes(dst))


class _NonAsciiMap(dict):
    """str.translate table for non-ASCII characters, filled lazily from Unicode categories:
    combining marks dropped (accent stripping after NFD), decimal digits -> "0", punctuation,
    symbols, controls and separators -> " ", everything else unchanged."""

    def __init__(self, remove_punctuation: bool, normalize_numbers: bool, strip_accents: bool):
        super().__init__()
        self.flags = (remove_punctuation, normalize_numbers, strip_accents)

    def __missing__(self, cp: int) -> str:
        remove_punctuation, normalize_numbers, strip_accents = self.flags
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if strip_accents and cat == "Mn":
            v = ""
        elif normalize_numbers and cat == "Nd":
            v = "0"
        elif cat[0] == "Z" or cat in ("Cc", "Cf") or (remove_punctuation and cat[0] in "PSC"):
            v = " "
        else:
            v = ch
        if len(self) < 200_000:
            self[cp] = v
        return v


@lru_cache(maxsize=8)
def _non_ascii_map(remove_punctuation: bool, normalize_numbers: bool, strip_accents: bool) -> _NonAsciiMap:
    return _NonAsciiMap(remove_punctuation, normalize_numbers, strip_accents)


def normalize_for_dedup(text: str, config: DedupConfig | None = None) -> bytes:
    """Normalised UTF-8 bytes of ``text`` (tokens separated by ASCII spaces/whitespace)."""
    cfg = config or DedupConfig()
    lower = cfg.lowercase
    ascii_table = _ascii_table(cfg.remove_punctuation, cfg.normalize_numbers)
    if text.isascii():
        b = text.encode("ascii")
        return (b.lower() if lower else b).translate(ascii_table)
    table = _non_ascii_map(cfg.remove_punctuation, cfg.normalize_numbers, cfg.strip_accents)
    nfd = cfg.strip_accents
    b = text.encode("utf-8", "surrogatepass")
    if (len(b) - len(text)) * 4 > len(text):  # mostly non-ASCII script: one pass over the whole string
        s = text.lower() if lower else text
        s = (unicodedata.normalize("NFD", s) if nfd else s).translate(table)
        return s.encode("utf-8", "surrogatepass").translate(ascii_table)
    # mostly ASCII: bytes-level lowercase/translate, rewriting only the runs of non-ASCII bytes
    arr = np.frombuffer(b, dtype=np.uint8)
    d = np.diff((arr >= 0x80).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    run_starts = np.flatnonzero(d == 1).tolist()
    run_ends = np.flatnonzero(d == -1).tolist()
    pieces, last = [], 0
    for a, e in zip(run_starts, run_ends):
        pieces.append(b[last:a])
        run = b[a:e].decode("utf-8", "surrogatepass")
        if lower:
            run = run.lower()
        pieces.append((unicodedata.normalize("NFD", run) if nfd else run).translate(table).encode("utf-8", "surrogatepass"))
        last = e
    pieces.append(b[last:])
    b = b"".join(pieces)
    return (b.lower() if lower else b).translate(ascii_table)


# ----------------------------------------------------------------------------------------------
# shingle hashes
# ----------------------------------------------------------------------------------------------
def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * _F1
    h = h ^ (h >> _U64(33))
    h = h * _F2
    return h ^ (h >> _U64(33))


def _ngram_hashes(tok: np.ndarray, n: int) -> np.ndarray:
    m = tok.shape[0]
    if m == 0:
        return tok
    if m <= n:  # short document: one shingle made of all its tokens
        g = tok[:1].copy()
        for i in range(1, m):
            g = g * _P + tok[i : i + 1]
        return _fmix64(g)
    k = m - n + 1
    g = tok[:k].copy()
    for i in range(1, n):
        g = g * _P + tok[i : i + k]
    return _fmix64(g)


_PINV = np.array([pow(int(_P[0]), -1, 1 << 64)], dtype=_U64)
_LEN_MIX = np.array([0xD6E8FEB86659FD93], dtype=_U64)
_SEGMENT_BYTES = 1 << 18  # bytes of normalised text tokenised per vectorised pass
_POW_CACHE: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**i and P**-i (mod 2**64) for i < n; cached up to ``_TOKEN_PIECE`` (the longest buffer
    ``_token_hashes`` reads at once but for a token longer than that), computed on the fly beyond."""
    have = _POW_CACHE.get("p")
    if have is not None and have.size >= n:
        return _POW_CACHE["p"][:n], _POW_CACHE["i"][:n]
    m = max(n, _TOKEN_PIECE) if n <= _TOKEN_PIECE else n
    p = np.empty(m, dtype=_U64)
    p[0] = 1
    p[1:] = _P[0]
    np.cumprod(p, out=p)
    q = np.empty(m, dtype=_U64)
    q[0] = 1
    q[1:] = _PINV[0]
    np.cumprod(q, out=q)
    if m <= _TOKEN_PIECE:
        _POW_CACHE["p"], _POW_CACHE["i"] = p, q
    return p[:n], q[:n]


def _token_hashes(buf: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token hashes, token start offsets, token byte lengths) of space/whitespace-separated tokens.

    Token hash: murmur3 fmix64 of the token's polynomial hash ``sum(byte_k * P**k) mod 2**64``
    (computed for all tokens at once from prefix sums) xor-ed with its length. A buffer longer than
    ``_TOKEN_PIECE`` bytes is read in pieces cut at white space (a token's hash depends on its own bytes
    only, so the pieces give the same hashes): the prefix sums and powers take eight bytes per byte of the
    buffer each (a documentation page of 2.2 MB of text took 88 MiB at once in the dedup signatures phase)."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    if arr.size <= _TOKEN_PIECE:
        return _piece_token_hashes(arr, 0)
    parts = []
    i, n = 0, arr.size
    while i < n:
        j = min(i + _TOKEN_PIECE, n)
        if j < n:  # cut after the last white space of the piece (the next one: a token longer than a piece)
            space = np.flatnonzero(~_word_bytes(arr[i:j]))
            if space.size:
                j = i + int(space[-1]) + 1
            else:
                space = np.flatnonzero(~_word_bytes(arr[j:]))
                j = j + int(space[0]) + 1 if space.size else n
        parts.append(_piece_token_hashes(arr[i:j], i))
        i = j
    return tuple(np.concatenate(x) for x in zip(*parts))


# bytes tokenised at once by _token_hashes: a segment of several documents (``shingle_documents``) is one piece;
# the powers of one piece, cached by _powers, take 16 bytes per byte (4 MiB)
_TOKEN_PIECE = _SEGMENT_BYTES


def _word_bytes(arr: np.ndarray) -> np.ndarray:
    """Which bytes belong to tokens (not a space, tab, line feed, vertical tab, form feed or carriage return)."""
    return (arr != 32) & ((arr < 9) | (arr > 13))


def _piece_token_hashes(arr: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_token_hashes`` of the bytes ``arr`` (no token crosses its ends), start offsets plus ``offset``."""
    if arr.size == 0:
        e = np.empty(0, dtype=np.int64)
        return np.empty(0, dtype=_U64), e, e
    word = _word_bytes(arr)
    d = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    pw, ipw = _powers(arr.size)
    pre = np.empty(arr.size + 1, dtype=_U64)
    pre[0] = 0
    np.cumsum(arr.astype(_U64) * pw, out=pre[1:])
    lens = ends - starts
    v = (pre[ends] - pre[starts]) * ipw[starts]
    return _fmix64(v ^ (lens.astype(_U64) * _LEN_MIX)), starts + offset if offset else starts, lens


def _char_token_hashes(words: list[bytes]) -> np.ndarray:
    import xxhash

    s = b"".join(words).decode("utf-8", "surrogatepass")
    cps = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    if cps.size == 0:
        return np.empty(0, dtype=_U64)
    uniq, inv = np.unique(cps, return_inverse=True)
    table = np.fromiter(
        (xxhash.xxh3_64_intdigest(chr(int(c)).encode("utf-8", "surrogatepass")) for c in uniq), dtype=_U64, count=len(uniq)
    )
    return table[inv]


@dataclass
class DocShingles:
    hashes: np.ndarray  # uint64 shingle hashes (with repeats; minhash ignores multiplicity)
    kind: str  # "word" | "char" | "" (empty)
    exact: bytes | None  # xxh3-128 digest of the normalised token sequence, None when it is empty


def _shingle_segment(norms: list[bytes], cfg: DedupConfig) -> list[DocShingles]:
    """Word shingles of several normalised documents in one vectorised pass."""
    import xxhash

    n = cfg.n
    buf = b" ".join(norms)
    tok, starts, lens = _token_hashes(buf)
    doc_off = np.zeros(len(norms) + 1, dtype=np.int64)
    np.cumsum([len(x) + 1 for x in norms], out=doc_off[1:])
    # token ranges per document
    tbounds = np.searchsorted(starts, doc_off[:-1], side="left")
    tends = np.r_[tbounds[1:], tok.size]
    # all n-grams of the concatenation; those crossing a document boundary are dropped
    t = tok.size
    if t >= n:
        k = t - n + 1
        g = tok[:k].copy()
        for i in range(1, n):
            g = g * _P + tok[i : i + k]
        g = _fmix64(g)
    else:
        g = np.empty(0, dtype=_U64)
    out = []
    for di in range(len(norms)):
        a, b = int(tbounds[di]), int(tends[di])
        m = b - a
        if m == 0:
            out.append(DocShingles(np.empty(0, dtype=_U64), "", None))
            continue
        exact = xxhash.xxh3_128_digest(tok[a:b].tobytes())
        kind = cfg.shingle
        if kind == "auto" and not norms[di].isascii():
            nbytes = int(lens[a:b].sum())
            if nbytes / m >= 24:  # long space-less runs (CJK, Thai, ...): 24 B = 8 CJK chars
                sample = norms[di][:4096]
                non_ascii = len(sample) - len(sample.decode("utf-8", "ignore").encode("ascii", "ignore"))
                kind = "char" if non_ascii / max(1, len(sample.replace(b" ", b""))) >= 0.5 else "word"
        if kind == "char":
            hashes = _ngram_hashes(_char_token_hashes(norms[di].split()), cfg.char_n)
            out.append(DocShingles(hashes, "char", exact))
        elif m >= n:
            out.append(DocShingles(g[a : b - n + 1], "word", exact))
        else:  # short document: one shingle made of all its tokens
            out.append(DocShingles(_ngram_hashes(tok[a:b], n), "word", exact))
    return out


def shingle_documents(texts: Sequence[str], config: DedupConfig | None = None) -> list[DocShingles]:
    """Normalise and shingle a batch of texts (word tokens are hashed for the whole batch at once)."""
    cfg = config or DedupConfig()
    norms = [normalize_for_dedup(t if isinstance(t, str) else "", cfg) for t in texts]
    out: list[DocShingles] = []
    i = 0
    while i < len(norms):
        j, size = i, 0
        while j < len(norms) and (j == i or size + len(norms[j]) <= _SEGMENT_BYTES):
            size += len(norms[j]) + 1
            j += 1
        out += _shingle_segment(norms[i:j], cfg)
        i = j
    return out


def exact_hash(text: str, config: DedupConfig | None = None) -> bytes | None:
    """xxh3-128 digest of the normalised token sequence (same value as `DocShingles.exact`)."""
    import xxhash

    tok = _token_hashes(normalize_for_dedup(text if isinstance(text, str) else "", config or DedupConfig()))[0]
    return xxhash.xxh3_128_digest(tok.tobytes()) if tok.size else None


def shingle_document(text: str, config: DedupConfig | None = None) -> DocShingles:
    return shingle_documents([text], config)[0]


def shingle_set(text: str, config: DedupConfig | None = None) -> set[int]:
    """The set of 64-bit shingle hashes of ``text`` (for true-Jaccard checks)."""
    return set(shingle_document(text, config).hashes.tolist())


def jaccard(a: str, b: str, config: DedupConfig | None = None) -> float:
    """True Jaccard similarity of the shingle sets of two texts (1.0 for two empty texts)."""
    sa, sb = shingle_set(a, config), shingle_set(b, config)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


# ----------------------------------------------------------------------------------------------
# signatures
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int, hash_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the affine permutations, shaped (num_perm, 1); ``a`` is odd."""
    rng = np.random.default_rng(seed)
    dt = np.uint32 if hash_bits == 32 else np.uint64
    hi = 1 << hash_bits
    a = rng.integers(0, hi, size=num_perm, dtype=np.uint64).astype(dt) | dt(1)
    b = rng.integers(0, hi, size=num_perm, dtype=np.uint64).astype(dt)
    return a.reshape(-1, 1), b.reshape(-1, 1)


def _fold(h: np.ndarray, hash_bits: int) -> np.ndarray:
    return (h >> _U64(32)).astype(np.uint32) if hash_bits == 32 else h


def minhash_signatures(shingle_arrays: Sequence[np.ndarray], config: DedupConfig | None = None) -> np.ndarray:
    """Signatures (n_docs, bands*rows) for per-document uint64 shingle hash arrays.

    Documents without shingles get the all-max sentinel row (never bucketed by the stages)."""
    cfg = config or DedupConfig()
    k = cfg.num_perm
    dt = np.uint32 if cfg.hash_bits == 32 else np.uint64
    a, b = permutations(k, cfg.seed, cfg.hash_bits)
    n_docs = len(shingle_arrays)
    out = np.full((n_docs, k), np.iinfo(dt).max, dtype=dt)
    lens = np.fromiter((len(x) for x in shingle_arrays), dtype=np.int64, count=n_docs)
    nz = np.flatnonzero(lens)
    if nz.size == 0:
        return out
    x = _fold(np.concatenate([shingle_arrays[i] for i in nz]), cfg.hash_bits)
    nz_lens = lens[nz]
    starts = np.concatenate([[0], np.cumsum(nz_lens)[:-1]])
    buf = np.empty((k, _CHUNK), dtype=dt)
    j = 0
    while j < nz.size:
        s0 = int(starts[j])
        if nz_lens[j] >= _CHUNK:  # one long document: running min over chunks
            e0 = s0 + int(nz_lens[j])
            acc = out[nz[j]]
            for c in range(s0, e0, _CHUNK):
                xs = x[c : min(c + _CHUNK, e0)]
                bb = buf[:, : xs.size]
                np.multiply(a, xs[None, :], out=bb)
                np.add(bb, b, out=bb)
                np.minimum(acc, bb.min(axis=1), out=acc)
            j += 1
            continue
        # several whole documents that fit one block
        j_end = j
        total = 0
        while j_end < nz.size and total + nz_lens[j_end] <= _CHUNK:
            total += int(nz_lens[j_end])
            j_end += 1
        xs = x[s0 : s0 + total]
        bb = buf[:, :total]
        np.multiply(a, xs[None, :], out=bb)
        np.add(bb, b, out=bb)
        offs = starts[j:j_end] - s0
        out[nz[j:j_end]] = np.minimum.reduceat(bb, offs, axis=1).T
        j = j_end
    return out


def band_hashes(sigs: np.ndarray, config: DedupConfig | None = None) -> np.ndarray:
    """(n_docs, bands) uint64: xxh3-64 of each band's ``rows`` signature values."""
    import xxhash

    cfg = config or DedupConfig()
    n = sigs.shape[0]
    r = cfg.rows
    sigs = np.ascontiguousarray(sigs)
    out = np.empty((n, cfg.bands), dtype=_U64)
    h = xxhash.xxh3_64_intdigest
    for i in range(n):
        row = sigs[i]
        out[i] = [h(row[j * r : (j + 1) * r].tobytes()) for j in range(cfg.bands)]
    return out


@dataclass
class SignatureBatch:
    sigs: np.ndarray  # (n, bands*rows)
    n_shingles: np.ndarray  # (n,) int64
    exact: list[bytes | None]  # xxh3-128 digests of the normalised texts
    kinds: list[str]

    @property
    def has_signature(self) -> np.ndarray:
        return self.n_shingles > 0


def compute_signatures(texts: Sequence[str], config: DedupConfig | None = None) -> SignatureBatch:
    """Shingle, hash and MinHash a batch of texts in one vectorised pass."""
    cfg = config or DedupConfig()
    docs = shingle_documents(texts, cfg)
    arrays = [d.hashes for d in docs]
    return SignatureBatch(
        sigs=minhash_signatures(arrays, cfg),
        n_shingles=np.fromiter((len(x) for x in arrays), dtype=np.int64, count=len(arrays)),
        exact=[d.exact for d in docs],
        kinds=[d.kind for d in docs],
    )


def detection_probability(similarity: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """LSH S-curve: probability that a pair with Jaccard ``similarity`` shares at least one band."""
    s = np.asarray(similarity, dtype=float)
    p = 1.0 - (1.0 - s**rows) ** bands
    return float(p) if p.ndim == 0 else p
