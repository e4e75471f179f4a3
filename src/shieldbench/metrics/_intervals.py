"""Rates with confidence intervals, and intervals for statistics with no closed form.

A rate is ``k`` events out of ``n`` trials (attacks blocked out of attacks, false
positives out of benign samples). :func:`rate` returns it as a :class:`Rate` with its
interval; the interval methods are the standard ones (Brown, Cai & DasGupta 2001):

- ``"wilson"`` (default): the score interval. Good coverage at every ``n`` and ``p``,
  never outside [0, 1], never zero-width; what the whole product prints.
- ``"clopper_pearson"``: the "exact" interval from beta quantiles. Coverage is at
  least the nominal level, at the price of width.
- ``"jeffreys"``: equal-tailed Bayesian interval with a Beta(1/2, 1/2) prior, with the
  usual boundary fix (lower bound 0 when ``k == 0``, upper bound 1 when ``k == n``),
  so that the interval always contains the observed rate.
- ``"agresti_coull"``: add z²/2 successes and failures, then Wald; clipped to [0, 1].

Undefined case: with ``n == 0`` there is no rate. The value is ``None`` and the
interval is the whole range ``(0, 1)``: nothing is known. Every statistic in
:mod:`shieldbench.metrics` answers an undefined case the same way (value ``None``,
interval = the statistic's whole range).

For statistics with no closed-form interval, :func:`bootstrap_interval` wraps
:func:`scipy.stats.bootstrap` (seeded, percentile or BCa) and :func:`quantile_interval`
gives the distribution-free order-statistic interval of a percentile (used for
latency percentiles).

Example:
    >>> r = rate(45, 50)
    >>> r.value, round(r.ci_low, 4), round(r.ci_high, 4), r.n
    (0.9, 0.7864, 0.9565, 50)
    >>> rate(0, 0).value is None, rate(0, 0).ci_low, rate(0, 0).ci_high
    (True, 0.0, 1.0)
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError

__all__ = [
    "BOOTSTRAP_METHODS",
    "INTERVAL_METHODS",
    "BootstrapMethod",
    "Estimate",
    "IntervalMethod",
    "Rate",
    "bootstrap_interval",
    "proportion_interval",
    "quantile_interval",
    "rate",
    "z_value",
]

IntervalMethod = Literal["wilson", "clopper_pearson", "jeffreys", "agresti_coull"]
BootstrapMethod = Literal["percentile", "bca"]
INTERVAL_METHODS: tuple[str, ...] = get_args(IntervalMethod)
BOOTSTRAP_METHODS: tuple[str, ...] = get_args(BootstrapMethod)


def _check_confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    return float(confidence)


def z_value(confidence: float) -> float:
    """The two-sided standard-normal critical value, e.g. 1.959964 for 0.95."""
    return _z_cached(_check_confidence(confidence))


@functools.lru_cache(maxsize=64)
def _z_cached(confidence: float) -> float:
    # scipy.special, not scipy.stats: the same function (``norm.isf(q)`` is
    # ``-ndtri(q)``) without importing every distribution scipy.stats defines.
    from scipy import special  # heavy: imported on first use, not with the package

    return float(-special.ndtri((1.0 - confidence) / 2.0))


def _whole(x: object) -> bool:
    return isinstance(x, numbers.Integral) or (isinstance(x, float) and x.is_integer())


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def proportion_interval(
    k: int, n: int, *, confidence: float = 0.95, method: IntervalMethod = "wilson"
) -> tuple[float, float]:
    """Confidence interval ``(low, high)`` for the proportion ``k / n``.

    ``n == 0`` gives ``(0.0, 1.0)``. Raises :class:`StatisticsError` for counts that
    are not whole numbers, ``k`` outside ``[0, n]``, an unknown method or a
    confidence outside (0, 1).

    Example:
        >>> [round(x, 4) for x in proportion_interval(1, 3, method="clopper_pearson")]
        [0.0084, 0.9057]
    """
    if not (_whole(k) and _whole(n)):
        raise StatisticsError(f"a proportion needs whole counts, got k={k!r}, n={n!r}")
    if n < 0 or not 0 <= k <= max(n, 0):
        raise StatisticsError(f"need 0 <= k <= n for a proportion, got k={k!r}, n={n!r}")
    alpha = 1.0 - _check_confidence(confidence)
    if method not in INTERVAL_METHODS:
        raise StatisticsError(
            f"unknown interval method {method!r}; choose one of {', '.join(INTERVAL_METHODS)}"
        )
    if n == 0:
        return 0.0, 1.0
    p = k / n
    if method == "wilson":
        z = z_value(confidence)
        z2 = z * z
        denom = 1.0 + z2 / n
        center = (p + z2 / (2.0 * n)) / denom
        half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
        low, high = center - half, center + half
        # Exact at the edges (the formula leaves 1e-17 rounding there).
        return (0.0 if k == 0 else _clip01(low)), (1.0 if k == n else _clip01(high))
    if method == "clopper_pearson":
        from scipy import stats

        low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2.0, k, n - k + 1))
        high = 1.0 if k == n else float(stats.beta.isf(alpha / 2.0, k + 1, n - k))
        return low, high
    if method == "jeffreys":
        from scipy import stats

        low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2.0, k + 0.5, n - k + 0.5))
        high = 1.0 if k == n else float(stats.beta.isf(alpha / 2.0, k + 0.5, n - k + 0.5))
        return low, high
    # agresti_coull
    z = z_value(confidence)
    n_c = n + z * z
    p_c = (k + z * z / 2.0) / n_c
    half = z * math.sqrt(p_c * (1.0 - p_c) / n_c)
    return _clip01(p_c - half), _clip01(p_c + half)


@dataclass(frozen=True, slots=True)
class Rate:
    """``k`` events out of ``n``, with a confidence interval.

    ``value`` is ``k / n``, or ``None`` when ``n == 0`` (then the interval is
    ``(0, 1)``). ``method`` names the interval, ``confidence`` its level.
    """

    k: int
    n: int
    value: float | None
    ci_low: float
    ci_high: float
    method: str
    confidence: float

    @property
    def half_width(self) -> float:
        """Half the interval's width: the margin of error."""
        return (self.ci_high - self.ci_low) / 2.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.n,
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "method": self.method,
            "confidence": self.confidence,
        }


def rate(k: int, n: int, *, confidence: float = 0.95, method: IntervalMethod = "wilson") -> Rate:
    """``k / n`` as a :class:`Rate` with its interval (see :func:`proportion_interval`)."""
    low, high = proportion_interval(k, n, confidence=confidence, method=method)
    return Rate(
        k=int(k),
        n=int(n),
        value=None if n == 0 else k / n,
        ci_low=low,
        ci_high=high,
        method=method,
        confidence=confidence,
    )


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic with a confidence interval that is not a simple proportion.

    ``value`` is ``None`` when the statistic is undefined for the data (e.g. F1 with
    no attacks and nothing blocked); then the interval is the statistic's whole range
    when it is bounded (F1, AUC: ``(0, 1)``; MCC: ``(-1, 1)``). An interval bound is
    ``None`` when the data cannot bound it (e.g. a p99 latency from 50 calls has no
    upper bound). ``n`` is the number of observations the statistic used.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    method: str
    confidence: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "method": self.method,
            "confidence": self.confidence,
            "n": self.n,
        }


def bootstrap_interval(
    statistic: Callable[..., Any],
    *data: npt.ArrayLike,
    confidence: float = 0.95,
    method: BootstrapMethod = "bca",
    n_resamples: int = 2000,
    seed: int = 0,
    paired: bool = True,
) -> Estimate:
    """Seeded bootstrap interval of ``statistic(*data)`` via :func:`scipy.stats.bootstrap`.

    ``statistic`` must accept an ``axis`` keyword and work on the last axis (it is
    called vectorised). ``paired=True`` resamples the arrays together (rows of one
    table); ``paired=False`` resamples each independently (e.g. attack scores and
    benign scores as two strata). Method ``"bca"`` (bias-corrected and accelerated)
    costs a jackknife, O(n²) in time; prefer ``"percentile"`` beyond a few thousand
    observations. When every value is the same, the interval collapses onto the point
    estimate; a bound the bootstrap cannot compute (the statistic is undefined in too
    many resamples) is ``None``, and so are both bounds with fewer than two observations.

    Example:
        >>> import numpy as np
        >>> x = np.arange(1.0, 41.0)
        >>> e = bootstrap_interval(np.median, x, method="percentile", n_resamples=500)
        >>> e.value, e.ci_low < 20.5 < e.ci_high
        (20.5, True)
    """
    confidence = _check_confidence(confidence)
    if method not in BOOTSTRAP_METHODS:
        raise StatisticsError(
            f"bootstrap method must be one of {BOOTSTRAP_METHODS}, got {method!r}"
        )
    if n_resamples < 1:
        raise StatisticsError(f"n_resamples must be >= 1, got {n_resamples!r}")
    arrays = [np.asarray(d, dtype=float) for d in data]
    if not arrays or any(a.ndim != 1 for a in arrays):
        raise StatisticsError("bootstrap_interval needs one or more 1-D arrays")
    n = int(arrays[0].size)
    if any(a.size == 0 for a in arrays):
        return Estimate(None, None, None, f"bootstrap-{method}", confidence, n)
    value = float(statistic(*arrays, axis=-1))
    if any(a.size < 2 for a in arrays):
        return Estimate(value, None, None, f"bootstrap-{method}", confidence, n)
    if all(bool(np.all(a == a[0])) for a in arrays):
        # Every resample is the data itself: scipy would warn and return NaN.
        return Estimate(value, value, value, f"bootstrap-{method}", confidence, n)
    from scipy import stats

    with warnings.catch_warnings():
        # A NaN bound (undefined statistic in some resamples) becomes None below.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            tuple(arrays),
            statistic,
            n_resamples=n_resamples,
            vectorized=True,
            paired=paired,
            confidence_level=confidence,
            method="BCa" if method == "bca" else "percentile",
            rng=np.random.default_rng(seed),
            batch=max(1, min(n_resamples, 20_000_000 // max(1, sum(a.size for a in arrays)))),
        )
    low = _finite_or_none(float(result.confidence_interval.low))
    high = _finite_or_none(float(result.confidence_interval.high))
    return Estimate(value, low, high, f"bootstrap-{method}", confidence, n)


def quantile_interval(values: npt.ArrayLike, q: float, *, confidence: float = 0.95) -> Estimate:
    """The ``q``-quantile of ``values`` with a distribution-free interval.

    The point is :func:`numpy.quantile` (linear interpolation); the interval is the
    order-statistic interval of :func:`scipy.stats.quantile_test`, exact under the
    single assumption that the values are independent draws: no bootstrap noise, no
    shape assumed. It needs enough data in the tail: a p99 from fewer than about 300
    values has no upper bound (``ci_high`` is ``None``). No values: everything ``None``.

    Example:
        >>> import numpy as np
        >>> e = quantile_interval(np.arange(1.0, 101.0), 0.5)
        >>> e.value, e.ci_low, e.ci_high
        (50.5, 40.0, 61.0)
    """
    confidence = _check_confidence(confidence)
    if not 0.0 < q < 1.0:
        raise StatisticsError(f"quantile q must be in (0, 1), got {q!r}")
    x = np.asarray(values, dtype=float)
    method = "order-statistic"
    if x.size == 0:
        return Estimate(None, None, None, method, confidence, 0)
    point = float(np.quantile(x, q))
    if x.size == 1:
        return Estimate(point, None, None, method, confidence, 1)
    low_index, high_index = _order_statistic_indices(int(x.size), q, (1.0 - confidence) / 2.0)
    x = np.sort(x)
    low = _finite_or_none(float(x[low_index])) if low_index >= 0 else None
    high = _finite_or_none(float(x[high_index])) if high_index < x.size else None
    return Estimate(point, low, high, method, confidence, int(x.size))


def _order_statistic_indices(n: int, q: float, tail: float) -> tuple[int, int]:
    """The 0-based indices, in the sorted values, of the two-sided order-statistic
    interval of the ``q``-quantile: those of :func:`scipy.stats.quantile_test`'s
    ``confidence_interval``, ``binom(n, q).ppf(tail) - 1`` and ``binom(n, q).isf(tail)``
    (the smallest ``k`` with ``cdf(k) >= tail``, and with ``sf(k) <= tail``). They come
    from the binomial distribution functions of :mod:`scipy.special` rather than from
    scipy.stats, whose import alone costs a second of start-up. A low index of -1 or a
    high index of ``n`` means no bound on that side.

    Only the counts within ten standard deviations of ``n * q`` are evaluated (a
    million-value sample stays cheap); when the window's edges do not bracket both
    answers (tiny samples, extreme ``tail``), every count is.
    """
    from scipy import special  # heavy: imported on first use, not with the package

    spread = 10.0 * math.sqrt(n * q * (1.0 - q)) + 2.0
    first, last = max(0, math.floor(n * q - spread)), min(n, math.ceil(n * q + spread))
    if (first > 0 and special.bdtr(first - 1, n, q) >= tail) or (
        last < n and special.bdtrc(last, n, q) > tail
    ):
        first, last = 0, n
    k = np.arange(first, last + 1, dtype=float)
    cdf_ok = special.bdtr(k, n, q) >= tail
    sf_ok = special.bdtrc(k, n, q) <= tail
    ppf = first + int(np.argmax(cdf_ok)) if cdf_ok.any() else n
    isf = first + int(np.argmax(sf_ok)) if sf_ok.any() else n
    return ppf - 1, isf


def quantile_bound_n(q: float, side: Literal["low", "high"], *, confidence: float = 0.95) -> int:
    """The fewest values for which :func:`quantile_interval` gives a ``side`` bound.

    The two-sided order-statistic interval bounds the ``q``-quantile from above only
    when the largest of ``n`` draws lies above it with probability at least
    ``1 - alpha/2``, i.e. ``q ** n <= alpha/2`` (from below: ``(1 - q) ** n <= alpha/2``),
    and from two values on.

    >>> quantile_bound_n(0.99, "high"), quantile_bound_n(0.95, "high"), quantile_bound_n(0.5, "low")
    (368, 72, 6)
    """
    confidence = _check_confidence(confidence)
    if not 0.0 < q < 1.0:
        raise StatisticsError(f"quantile q must be in (0, 1), got {q!r}")
    tail = q if side == "high" else 1.0 - q
    return max(2, math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(tail) - 1e-9))


def missing_bound_reason(e: Estimate, q: float) -> str | None:
    """Why a quantile estimate lacks a bound (``None`` when it has both, or no value).

    >>> import numpy as np
    >>> missing_bound_reason(quantile_interval(np.arange(30.0), 0.99), 0.99)
    'no upper bound: a 95% interval for p99 needs n >= 368 values, n = 30'
    """
    if e.value is None:
        return None
    missing = [s for s, b in (("lower", e.ci_low), ("upper", e.ci_high)) if b is None]
    if not missing:
        return None
    need = max(quantile_bound_n(q, "low" if s == "lower" else "high", confidence=e.confidence)
               for s in missing)  # fmt: skip
    return (
        f"no {' or '.join(missing)} bound: a {e.confidence:.0%} interval for p{100 * q:g}"
        f" needs n >= {need} values, n = {e.n}"
    )
