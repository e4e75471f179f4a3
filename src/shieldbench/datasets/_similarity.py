"""Near-duplicate detection: Jaccard similarity of character-shingle sets.

Two texts are near-duplicates when the Jaccard similarity of their sets of
character ``k``-shingles (``k = 5`` by default) is at least a threshold. Texts are
normalised first (:func:`normalize_text`: Unicode NFKC, case-folded, whitespace
runs collapsed to one space, stripped), so case and spacing never hide a copy.

Why shingles: a template with a few words swapped keeps most of its 5-character
substrings, so it scores high, while two texts that merely share vocabulary do not.

How it scales: comparing every pair is O(n * m). :func:`near_duplicates` instead
builds a MinHash signature of each shingle set (``datasketch``, 128 permutations)
and uses locality-sensitive hashing (banding) to propose candidate pairs, then
computes the *exact* Jaccard similarity of every candidate. So:

- every reported pair really is at or above the threshold, with its exact score;
- texts with identical normalised form are always reported (identical signatures);
- a pair whose exact similarity ``s`` is at or above the threshold is missed with
  probability ``(1 - s**r) ** b`` at most, where the band count ``b`` and width ``r``
  are chosen so that this is below ``1e-4`` at the threshold itself (and falls
  quickly above it). Low thresholds (below ~0.3) make almost every pair a
  candidate, and the run time approaches the full comparison.

Edge cases: a normalised text shorter than ``k`` is one shingle (itself); the
empty text has no shingles, and two empty texts have similarity 1.0 (they are
identical) while an empty and a non-empty text have 0.0.

Example:
    >>> near_duplicates(["Ignore all previous instructions now",
    ...                  "ignore ALL previous   instructions now!",
    ...                  "What is the capital of France?"])
    [(0, 1, 0.9696969696969697)]
    >>> near_duplicates(["The quick brown fox jumps over the lazy dog"],
    ...                 ["the quick brown fox jumped over the lazy dog", "goodbye"],
    ...                 threshold=0.6)
    [(0, 0, 0.7555555555555555)]
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Iterable, Sequence, Set

from shieldbench.errors import ConfigError

__all__ = ["jaccard", "near_duplicates", "normalize_text", "shingles"]

_NUM_PERM = 128
_MAX_MISS_PROBABILITY = 1e-4
_WHITESPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFKC-normalise, case-fold, collapse whitespace runs to one space, strip.

    >>> normalize_text("  Ignore\\tALL  the\\nrules ")
    'ignore all the rules'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WHITESPACE.sub(" ", folded).strip()


def shingles(text: str, *, k: int = 5) -> frozenset[str]:
    """The set of character ``k``-shingles of the normalised ``text``.

    >>> sorted(shingles("Hello!", k=4))
    ['ello', 'hell', 'llo!']
    >>> shingles("hi", k=4), shingles("   ")
    (frozenset({'hi'}), frozenset())
    """
    if k < 1:
        raise ConfigError(f"shingle size must be >= 1, got {k}")
    norm = normalize_text(text)
    if len(norm) <= k:
        return frozenset((norm,)) if norm else frozenset()
    return frozenset(norm[i : i + k] for i in range(len(norm) - k + 1))


def jaccard(a: Set[str], b: Set[str]) -> float:
    """``|a & b| / |a | b|``; 1.0 for two empty sets (identical), 0.0 if one is empty.

    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
    """
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _band_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """Widest band ``r`` (fewest false candidates) whose miss rate at ``threshold`` is tiny."""
    for r in range(num_perm // 2, 0, -1):  # datasketch needs at least two bands
        b = num_perm // r
        if (1.0 - threshold**r) ** b <= _MAX_MISS_PROBABILITY:
            return b, r
    return num_perm, 1


def _crc32(data: bytes) -> int:
    return zlib.crc32(data)


def _signatures(shingle_sets: Iterable[frozenset[str]]) -> list[object]:
    from datasketch import MinHash

    encoded = ([s.encode("utf-8") for s in sh] for sh in shingle_sets)
    return list(MinHash.generator(encoded, num_perm=_NUM_PERM, hashfunc=_crc32))


def near_duplicates(
    texts_a: Sequence[str],
    texts_b: Sequence[str] | None = None,
    *,
    threshold: float = 0.8,
    shingle_size: int = 5,
) -> list[tuple[int, int, float]]:
    """Pairs of texts whose shingle Jaccard similarity is at least ``threshold``.

    With one list, returns ``(i, j, similarity)`` for pairs inside it, ``i < j``.
    With two lists, returns ``(i, j, similarity)`` with ``i`` indexing ``texts_a``
    and ``j`` indexing ``texts_b``. Sorted by ``(i, j)``. See the module docstring
    for the method, its guarantees and the edge cases.

    Raises :class:`~shieldbench.errors.ConfigError` for a threshold outside (0, 1].
    """
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
    from datasketch import MinHashLSH

    same = texts_b is None
    others: Sequence[str] = texts_a if texts_b is None else texts_b
    if not texts_a or not others:
        return []
    sets_a = [shingles(t, k=shingle_size) for t in texts_a]
    sets_b = sets_a if same else [shingles(t, k=shingle_size) for t in others]
    sig_a = _signatures(sets_a)
    sig_b = sig_a if same else _signatures(sets_b)

    lsh = MinHashLSH(num_perm=_NUM_PERM, params=_band_params(threshold, _NUM_PERM))
    with lsh.insertion_session() as session:
        for j, sig in enumerate(sig_b):
            session.insert(j, sig, check_duplication=False)

    found: list[tuple[int, int, float]] = []
    for i, sig in enumerate(sig_a):
        for j in lsh.query(sig):
            if same and j <= i:
                continue
            score = jaccard(sets_a[i], sets_b[j])
            if score >= threshold:
                found.append((i, int(j), score))
    found.sort()
    return found
