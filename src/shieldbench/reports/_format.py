"""Number formatting shared by the Markdown and HTML renderers (and recommendation
messages), so every view prints a figure the same way.

Undefined values print as an en dash; an interval bound the data cannot give
prints as ``?`` in a generic estimate, and for a latency percentile
(:func:`quantile_text`) as ``none`` with the reason: how many calls it needs.

Example:
    >>> from shieldbench.metrics import rate
    >>> rate_text(rate(45, 50))
    '90.0% [78.6–95.7] n=50'
    >>> rate_text(rate(0, 0)), pct(None), ms(0.01234), p_text(3e-6)
    ('– n=0', '–', '0.012 ms', '<0.0001')
"""

from __future__ import annotations

from shieldbench.metrics import Estimate, Rate, quantile_bound_n

__all__ = [
    "DASH",
    "INTERVAL_NAMES",
    "est_text",
    "ms",
    "num",
    "p_text",
    "pct",
    "per_10k",
    "quantile_text",
    "rate_text",
]

DASH = "–"
INTERVAL_NAMES = {
    "wilson": "Wilson",
    "clopper_pearson": "Clopper-Pearson",
    "jeffreys": "Jeffreys",
    "agresti_coull": "Agresti-Coull",
}


def pct(x: float | None, *, digits: int = 1) -> str:
    """``0.912`` -> ``91.2%``; ``None`` -> ``–``."""
    return DASH if x is None else f"{100 * x:.{digits}f}%"


def rate_text(r: Rate, *, n: bool = True, digits: int = 1) -> str:
    """A rate with its interval and, by default, its ``n``."""
    if r.value is None:
        return f"{DASH} n={r.n}" if n else DASH
    text = f"{100 * r.value:.{digits}f}% [{100 * r.ci_low:.{digits}f}–{100 * r.ci_high:.{digits}f}]"
    return f"{text} n={r.n}" if n else text


def num(x: float | None, *, digits: int = 3) -> str:
    return DASH if x is None else f"{x:.{digits}f}"


def est_text(e: Estimate | None, *, digits: int = 3, unit: str = "") -> str:
    """An estimate with its interval (``?`` for a bound the data cannot give)."""
    if e is None or e.value is None:
        return DASH

    def f(x: float | None) -> str:
        return "?" if x is None else f"{x:.{digits}f}"

    signed = any(x is not None and x < 0 for x in (e.value, e.ci_low, e.ci_high))
    return f"{f(e.value)}{unit} [{f(e.ci_low)}{', ' if signed else '–'}{f(e.ci_high)}]"


def ms(x: float | None) -> str:
    """Milliseconds with a sensible number of digits."""
    if x is None:
        return DASH
    if x >= 100:
        return f"{x:,.0f} ms"
    if x >= 1:
        return f"{x:.2f} ms"
    return f"{x:.3f} ms"


def p_text(p: float | None) -> str:
    """A p-value: four decimals, ``<0.0001`` below that."""
    if p is None:
        return DASH
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def per_10k(x: float) -> str:
    """A rate as a count per 10,000 (``0.0123`` -> ``123``)."""
    value = 10_000 * x
    return f"{value:,.0f}" if value >= 10 or value == 0 else f"{value:.1f}"


def quantile_text(e: Estimate, q: float, *, digits: int = 2) -> str:
    """A percentile with its interval; a bound ``n`` cannot give says why.

    >>> import numpy as np
    >>> from shieldbench.metrics import quantile_interval
    >>> quantile_text(quantile_interval(np.arange(1.0, 31.0), 0.99), 0.99)
    '29.71 [28.00–none: n=30 < 368]'
    >>> quantile_text(quantile_interval(np.arange(1.0, 101.0), 0.5), 0.5)
    '50.50 [40.00–61.00]'
    """
    if e.value is None:
        return DASH

    def bound(x: float | None, side: str) -> str:
        if x is not None:
            return f"{x:.{digits}f}"
        need = quantile_bound_n(q, "low" if side == "low" else "high", confidence=e.confidence)
        return f"none: n={e.n} < {need}"

    return f"{e.value:.{digits}f} [{bound(e.ci_low, 'low')}–{bound(e.ci_high, 'high')}]"
