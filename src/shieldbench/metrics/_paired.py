"""Paired comparison of two defenses run on the same samples.

Two runs are paired sample by sample (matched by id; refused unless the datasets'
content hashes are equal). On attacks the event is "blocked" (a block rate); on
benign samples it is "blocked" too (a false positive rate). Each gives a
:class:`PairedTable`: ``both`` blocked, ``only_a``, ``only_b``, ``neither``.

- :func:`mcnemar_test`: do the two rates differ? Only the discordant pairs
  (``only_a``, ``only_b``) carry information. With fewer than ``exact_below`` = 25
  discordant pairs the exact binomial test is used (two-sided, ``2 * P(X <= min)``
  capped at 1, as statsmodels does); from 25 on, the chi-square test with continuity
  correction ``(|b - c| - 1)² / (b + c)`` (1 degree of freedom), where the normal
  approximation is good. The correction is floored at 0 (``b == c`` gives p = 1;
  statsmodels gives a p slightly below 1 there, the only place we differ). Both
  tests are conservative with few discordant pairs.
  Zero discordant pairs (the defenses agree on every sample, or the class is empty):
  statistic ``None``, p-value 1.0: no evidence of a difference.
- :func:`paired_difference`: ``rate_a - rate_b`` with Newcombe's hybrid score
  interval for paired proportions (Newcombe 1998, Stat Med 17:2635, method 10).
- :func:`non_inferiority_test`: one-sided "a is not worse than b by more than
  ``margin``" with Tango's score test for paired proportions (Tango 1998, Stat Med
  17:891). At margin 0 it reduces to McNemar's uncorrected z.
- :func:`adjust_p_values`: Holm's step-down correction (default), Bonferroni, or none.

Example:
    >>> t = PairedTable(both=36, only_a=12, only_b=2, neither=0)
    >>> mcnemar_test(t).method, round(mcnemar_test(t).p_value, 4)
    ('exact-binomial', 0.0129)
    >>> d = paired_difference(t)
    >>> round(d.estimate, 2), round(d.ci_low, 4), round(d.ci_high, 4)
    (0.2, 0.0569, 0.3404)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shieldbench.errors import StatisticsError
from shieldbench.metrics._intervals import _check_confidence, proportion_interval, z_value

__all__ = [
    "EXACT_BELOW",
    "McNemarResult",
    "NonInferiority",
    "PairedDifference",
    "PairedTable",
    "adjust_p_values",
    "mcnemar_test",
    "non_inferiority_test",
    "paired_difference",
    "tango_interval",
]

EXACT_BELOW = 25
Correction = Literal["holm", "bonferroni", "none"]


@dataclass(frozen=True, slots=True)
class PairedTable:
    """Two defenses on the same samples: how many both / only a / only b / neither blocked.

    As a matrix (statsmodels' layout): rows are a (blocked, not), columns b
    (blocked, not): ``[[both, only_a], [only_b, neither]]``.
    """

    both: int
    only_a: int
    only_b: int
    neither: int

    def __post_init__(self) -> None:
        if min(self.both, self.only_a, self.only_b, self.neither) < 0:
            raise StatisticsError(f"a paired table holds counts >= 0, got {self}")

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def discordant(self) -> int:
        return self.only_a + self.only_b

    @property
    def k_a(self) -> int:
        """Events (blocks) of defense a."""
        return self.both + self.only_a

    @property
    def k_b(self) -> int:
        return self.both + self.only_b

    def as_matrix(self) -> list[list[int]]:
        return [[self.both, self.only_a], [self.only_b, self.neither]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "both": self.both,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "neither": self.neither,
            "n": self.n,
        }


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """McNemar's test on a :class:`PairedTable` (see the module doc for the switch)."""

    statistic: float | None
    p_value: float
    method: str
    n_discordant: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "method": self.method,
            "n_discordant": self.n_discordant,
        }


def mcnemar_test(table: PairedTable, *, exact_below: int = EXACT_BELOW) -> McNemarResult:
    """Two-sided McNemar test: exact binomial below ``exact_below`` discordant pairs,
    chi-square with continuity correction from there on."""
    b, c = table.only_a, table.only_b
    d = b + c
    if d == 0:
        return McNemarResult(None, 1.0, "none: no discordant pairs", 0)
    # scipy.special's distribution functions, which scipy.stats's binom.cdf and
    # chi2.sf call: the same numbers without importing scipy.stats (a start-up second).
    from scipy import special  # heavy: imported on first use, not with the package

    if d < exact_below:
        p = min(1.0, 2.0 * float(special.bdtr(min(b, c), d, 0.5)))
        return McNemarResult(float(min(b, c)), p, "exact-binomial", d)
    stat = max(abs(b - c) - 1.0, 0.0) ** 2 / d
    return McNemarResult(stat, float(special.chdtrc(1, stat)), "chi2-continuity", d)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """``rate_a - rate_b`` on paired data with its interval; ``None`` with no pairs
    (interval (-1, 1))."""

    estimate: float | None
    ci_low: float
    ci_high: float
    confidence: float
    method: str = "newcombe-paired"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "method": self.method,
        }


def paired_difference(table: PairedTable, *, confidence: float = 0.95) -> PairedDifference:
    """Newcombe's method 10: Wilson intervals of both margins combined with the
    continuity-corrected correlation of the pairs."""
    confidence = _check_confidence(confidence)
    n = table.n
    if n == 0:
        return PairedDifference(None, -1.0, 1.0, confidence)
    e, f, g, h = table.both, table.only_a, table.only_b, table.neither
    p1, p2 = (e + f) / n, (e + g) / n
    l1, u1 = proportion_interval(e + f, n, confidence=confidence)
    l2, u2 = proportion_interval(e + g, n, confidence=confidence)
    den = (e + f) * (g + h) * (e + g) * (f + h)
    if den == 0:
        phi = 0.0
    else:
        cross = e * h - f * g
        num = max(cross - n / 2.0, 0.0) if cross > 0 else float(cross)
        phi = num / math.sqrt(den)
    d = p1 - p2
    lower = d - math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0))
    upper = d + math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0))
    return PairedDifference(d, max(-1.0, lower), min(1.0, upper), confidence)


def _tango_statistic(table: PairedTable, delta0: float) -> float:
    """Tango's score statistic for H0: rate_a - rate_b = delta0."""
    n12, n21, n = table.only_a, table.only_b, table.n
    a = 2.0 * n
    b = -n12 - n21 + (2.0 * n - n12 + n21) * delta0
    c = -n21 * delta0 * (1.0 - delta0)
    p21 = (math.sqrt(max(b * b - 4.0 * a * c, 0.0)) - b) / (2.0 * a)
    var = n * (2.0 * p21 + delta0 * (1.0 - delta0))
    num = n12 - n21 - n * delta0
    if var <= 0.0:
        return 0.0 if num == 0 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def _tango_root(table: PairedTable, target: float, lo: float, hi: float) -> float:
    def f(delta0: float) -> float:
        return _tango_statistic(table, delta0) - target

    if f(lo) * f(hi) > 0:
        return lo if abs(f(lo)) < abs(f(hi)) else hi
    from scipy import optimize

    return float(optimize.brentq(f, lo, hi, xtol=1e-12))


def tango_interval(table: PairedTable, *, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's score interval for ``rate_a - rate_b`` (test inversion); (-1, 1) with no
    pairs."""
    z = z_value(confidence)
    n = table.n
    if n == 0:
        return -1.0, 1.0
    est = (table.only_a - table.only_b) / n
    eps = 1e-9
    low = -1.0 if est <= -1.0 else _tango_root(table, z, -1.0 + eps, est)
    high = 1.0 if est >= 1.0 else _tango_root(table, -z, est, 1.0 - eps)
    return low, high


@dataclass(frozen=True, slots=True)
class NonInferiority:
    """One-sided test that a (candidate) is not worse than b (baseline) by > ``margin``.

    ``difference`` is ``rate_a - rate_b``; ``bound`` the one-sided (1 - alpha)
    Tango confidence bound on it (lower when higher is better, upper otherwise);
    ``non_inferior`` is ``p_value < alpha``, equivalently the bound clears the margin.
    With no pairs nothing can be shown: ``difference`` ``None``, p-value 1.0,
    ``non_inferior`` False.
    """

    margin: float
    alpha: float
    higher_is_better: bool
    difference: float | None
    bound: float
    statistic: float | None
    p_value: float

    @property
    def non_inferior(self) -> bool:
        return self.p_value < self.alpha

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "alpha": self.alpha,
            "higher_is_better": self.higher_is_better,
            "difference": self.difference,
            "bound": self.bound,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "non_inferior": self.non_inferior,
            "method": "tango-score",
        }


def non_inferiority_test(
    table: PairedTable, *, margin: float, alpha: float = 0.05, higher_is_better: bool = True
) -> NonInferiority:
    """Is defense a no worse than b by more than ``margin`` (an absolute rate difference)?

    For a block rate (``higher_is_better=True``) H0 is ``rate_a - rate_b <= -margin``;
    for a false positive rate H0 is ``rate_a - rate_b >= margin``. Rejecting H0 at
    ``alpha`` shows non-inferiority. Use it as a CI gate: "the new version blocks no
    fewer than 2 points less than the old one".

    Example:
        >>> t = PairedTable(both=180, only_a=6, only_b=9, neither=5)
        >>> r = non_inferiority_test(t, margin=0.06)
        >>> round(r.difference, 3), round(r.bound, 4), round(r.p_value, 4), r.non_inferior
        (-0.015, -0.0499, 0.0203, True)
        >>> non_inferiority_test(t, margin=0.03).non_inferior
        False
    """
    if not 0.0 <= margin < 1.0:
        raise StatisticsError(f"margin must be in [0, 1), got {margin!r}")
    if not 0.0 < alpha < 0.5:
        raise StatisticsError(f"alpha must be in (0, 0.5), got {alpha!r}")
    n = table.n
    if n == 0:
        bound = -1.0 if higher_is_better else 1.0
        return NonInferiority(margin, alpha, higher_is_better, None, bound, None, 1.0)
    diff = (table.only_a - table.only_b) / n
    delta0 = -margin if higher_is_better else margin
    t = _tango_statistic(table, delta0)
    from scipy import special  # norm.sf(t) is ndtr(-t), norm.cdf(t) ndtr(t)

    p = float(special.ndtr(-t)) if higher_is_better else float(special.ndtr(t))
    low, high = tango_interval(table, confidence=1.0 - 2.0 * alpha)
    bound = low if higher_is_better else high
    return NonInferiority(margin, alpha, higher_is_better, diff, bound, t, p)


def adjust_p_values(p_values: Sequence[float], *, method: Correction = "holm") -> tuple[float, ...]:
    """Family-wise error control for several tests at once, in the input order.

    ``"holm"``: Holm's step-down (uniformly more powerful than Bonferroni, same
    guarantee, no independence assumed); ``"bonferroni"``: ``min(1, m p)``;
    ``"none"``: unchanged.

    Example:
        >>> adjust_p_values([0.01, 0.04, 0.03])
        (0.03, 0.06, 0.06)
    """
    ps = [float(p) for p in p_values]
    if any(not 0.0 <= p <= 1.0 for p in ps):
        raise StatisticsError(f"p-values must be in [0, 1], got {ps}")
    m = len(ps)
    if method == "none":
        return tuple(ps)
    if method == "bonferroni":
        return tuple(min(1.0, p * m) for p in ps)
    if method != "holm":
        raise StatisticsError(f"correction must be 'holm', 'bonferroni' or 'none', got {method!r}")
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return tuple(adjusted)
