"""Speed of ``near_duplicates`` (MinHash/LSH + exact check) against the full comparison.

Measured: ``near_duplicates(a, b, threshold=0.8)`` on 5,000 x 5,000 texts (random
words, 5-60 words each, ~200 characters; 50 planted near-duplicates).
Baseline: the straightforward method it replaces, exact shingle-set Jaccard of
every pair, timed in the same run on a 500 x 500 slice (shingle sets precomputed,
so only the comparisons count) and scaled by 100 to the full 25 million pairs.
Also checked: both methods find the same pairs on the slice, and every planted
pair whose exact similarity reaches the threshold is found in the full run.

Run: ``.venv/bin/python benchmarks/near_duplicates_speed.py``. Exit status 1 when
near_duplicates is not at least 10x faster than the full comparison or the pairs
on the slice differ.
"""

from __future__ import annotations

import random
import string
import sys
import time

from shieldbench.datasets import jaccard, near_duplicates, shingles


def _text(rng: random.Random) -> str:
    words = rng.randint(5, 60)
    return " ".join(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
        for _ in range(words)
    )


def _mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(2):
        chars[rng.randrange(len(chars))] = rng.choice(string.ascii_lowercase)
    return "".join(chars)


def main() -> int:
    rng = random.Random(0)
    a = [_text(rng) for _ in range(5000)]
    b = [_text(rng) for _ in range(5000)]
    for k in range(50):  # planted near-duplicates spread over both sides
        b[k * 97] = _mutate(a[k * 89], rng)
    near_duplicates(a[:10], b[:10])  # imports (datasketch, scipy) outside the timing

    start = time.perf_counter()
    found = near_duplicates(a, b, threshold=0.8)
    lsh_s = time.perf_counter() - start

    slice_a, slice_b = a[:500], b[:500]
    sets_a = [shingles(t) for t in slice_a]
    sets_b = [shingles(t) for t in slice_b]
    start = time.perf_counter()
    brute = [
        (i, j, s)
        for i, sa in enumerate(sets_a)
        for j, sb in enumerate(sets_b)
        if (s := jaccard(sa, sb)) >= 0.8
    ]
    brute_s = (time.perf_counter() - start) * (len(a) * len(b)) / (len(slice_a) * len(slice_b))
    same = near_duplicates(slice_a, slice_b, threshold=0.8) == brute
    planted = {
        (k * 89, k * 97)
        for k in range(50)
        if jaccard(shingles(a[k * 89]), shingles(b[k * 97])) >= 0.8
    }
    recalled = planted <= {(i, j) for i, j, _ in found}

    print(f"near_duplicates 5,000 x 5,000: {lsh_s:.2f} s, {len(found)} pairs found")
    print(f"full comparison (extrapolated from 500 x 500): {brute_s:.1f} s")
    print(f"speed-up: {brute_s / lsh_s:.1f}x (target >= 10x); same pairs on the slice: {same}")
    print(f"planted pairs at or above 0.8: {len(planted)}, all found: {recalled}")
    return 0 if brute_s / lsh_s >= 10 and same and recalled else 1


if __name__ == "__main__":
    sys.exit(main())
