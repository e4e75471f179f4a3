"""Speed of the two hand-written bootstraps against :func:`scipy.stats.bootstrap`, and
of ``summarize`` at scale.

Measured in one run, on one machine:

1. F1 percentile interval, 2,000 resamples, 20,000 samples: ``count_bootstrap_interval``
   (multinomial draws of the four cell counts) versus ``scipy.stats.bootstrap``
   resampling the 20,000 per-sample cell codes, the straightforward method it
   replaces.
2. PR-AUC (average precision) stratified percentile interval, 500 resamples, 20,000
   scored samples: ``average_precision`` (multiplicities along one presorted order)
   versus ``scipy.stats.bootstrap(paired=False)`` sorting every resample.
3. ``summarize`` on a 100,000-sample scored run (16 categories): wall time.

Both intervals of (1) and (2) are printed: they estimate the same distribution and
must agree within Monte Carlo error.

Run: ``.venv/bin/python benchmarks/metrics_speed.py``. Exit status 1 when either
hand-written bootstrap is not at least 5x faster than scipy's, or an interval
differs from scipy's by more than 0.01.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from shieldbench.metrics import Estimate, average_precision, summarize
from shieldbench.metrics._counts import count_bootstrap_interval, f1_from_counts
from shieldbench.metrics._precision import average_precision_vectorized
from shieldbench.metrics._testing import make_run


def _f1_of_codes(codes: np.ndarray, axis: int = -1) -> np.ndarray:
    cells = [(codes == c).sum(axis=axis).astype(float) for c in range(4)]
    return f1_from_counts(*cells)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _compare(
    name: str, ours: Estimate, ours_s: float, ref: Any, ref_s: float
) -> tuple[float, float]:
    low, high = ref.confidence_interval.low, ref.confidence_interval.high
    print(f"{name}, ours : [{ours.ci_low:.4f}, {ours.ci_high:.4f}] in {ours_s:.3f} s")
    print(f"{name}, scipy: [{low:.4f}, {high:.4f}] in {ref_s:.3f} s")
    gap = max(abs(ours.ci_low - low), abs(ours.ci_high - high))  # type: ignore[operator]
    ratio = ref_s / ours_s
    print(f"{name}: {ratio:.0f}x faster than scipy.stats.bootstrap, bounds within {gap:.4f}")
    return ratio, gap


def f1_case() -> tuple[float, float]:
    counts = (7000, 1000, 1200, 10800)
    codes = np.repeat(np.arange(4), counts).astype(np.int8)
    ours, ours_s = _timed(
        lambda: count_bootstrap_interval(
            f1_from_counts, counts, bounds=(0.0, 1.0), n_resamples=2000
        )
    )
    ref, ref_s = _timed(
        lambda: stats.bootstrap(
            (codes,),
            _f1_of_codes,
            n_resamples=2000,
            method="percentile",
            vectorized=True,
            batch=100,
            rng=np.random.default_rng(0),
        )
    )
    return _compare("F1", ours, ours_s, ref, ref_s)


def pr_auc_case() -> tuple[float, float]:
    rng = np.random.default_rng(1)
    y = rng.random(20_000) < 0.3
    s = rng.random(20_000) * 0.7 + y * 0.3
    average_precision(y[:100], s[:100], n_resamples=10)  # warm-up outside the timing
    ours, ours_s = _timed(lambda: average_precision(y, s, n_resamples=500))
    ref, ref_s = _timed(
        lambda: stats.bootstrap(
            (s[y], s[~y]),
            average_precision_vectorized,
            n_resamples=500,
            paired=False,
            vectorized=True,
            method="percentile",
            batch=50,
            rng=np.random.default_rng(0),
        )
    )
    return _compare("PR-AUC", ours, ours_s, ref, ref_s)


def summary_time() -> float:
    rng = np.random.default_rng(0)
    n = 100_000
    y = rng.random(n) < 0.3
    s = rng.random(n) * 0.7 + y * 0.3
    rows = [
        (f"c{i % 16}", bool(a), bool(v > 0.5), float(v))
        for i, (a, v) in enumerate(zip(y, s, strict=True))
    ]
    run = make_run(rows)
    _, seconds = _timed(lambda: summarize(run))
    print(f"summarize(100,000 scored samples): {seconds:.2f} s")
    return seconds


def main() -> int:
    f1_ratio, f1_gap = f1_case()
    pr_ratio, pr_gap = pr_auc_case()
    summary_time()
    ok = min(f1_ratio, pr_ratio) >= 5 and max(f1_gap, pr_gap) <= 0.01
    print("OK" if ok else "FAILED: expected >= 5x faster and bounds within 0.01 of scipy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
