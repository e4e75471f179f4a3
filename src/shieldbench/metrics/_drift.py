"""Drift of a model's behavioural profile between two runs (two-sample tests).

A profile (:class:`shieldbench.judges.BehaviourProfile`, stored in
``Run.end_to_end["profile"]``) holds counts over the benign answers. For each
figure, B is compared with A:

- rates (``refused``, ``leak``, ``secret``, ``pii``): the difference B - A with a
  Newcombe (hybrid Wilson) 95% interval and Fisher's exact two-sided p-value;
- answer length: the difference of the means with a Welch 95% interval and the
  Mann-Whitney U two-sided p-value (robust to the long tail of lengths);
- language mix: the chi-square test of homogeneity over the languages seen
  (difference: change in the share of A's most frequent language; no interval).

The p-values are Holm-adjusted across the figures; a figure drifted when its
adjusted p-value is below ``alpha`` (0.05). :func:`profile_drift` is what
``compare`` and ``monitor`` call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shieldbench.errors import StatisticsError
from shieldbench.metrics._intervals import proportion_interval
from shieldbench.metrics._paired import adjust_p_values

__all__ = ["DriftFigure", "ProfileDrift", "profile_drift"]

_RATES = ("refused", "leak", "secret", "pii")


@dataclass(frozen=True, slots=True)
class DriftFigure:
    """One figure of the profile in A and in B, their difference and its test."""

    name: str
    a: float | None
    b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float
    p_adjusted: float
    drifted: bool
    test: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "drifted": self.drifted,
            "test": self.test,
        }


@dataclass(frozen=True, slots=True)
class ProfileDrift:
    """Every figure's comparison; ``drifted`` when any figure drifted."""

    n_a: int
    n_b: int
    alpha: float
    figures: tuple[DriftFigure, ...]

    @property
    def drifted(self) -> bool:
        return any(f.drifted for f in self.figures)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_a": self.n_a,
            "n_b": self.n_b,
            "alpha": self.alpha,
            "drifted": self.drifted,
            "figures": [f.to_dict() for f in self.figures],
        }


def _rate_figure(name: str, ka: int, na: int, kb: int, nb: int) -> tuple[Any, ...]:
    from scipy import stats

    if na == 0 or nb == 0:
        return name, None, None, None, None, None, 1.0, "none: an empty profile"
    pa, pb = ka / na, kb / nb
    la, ha = proportion_interval(ka, na)
    lb, hb = proportion_interval(kb, nb)
    diff = pb - pa  # Newcombe's hybrid score interval (method 10)
    low = diff - math.sqrt((pb - lb) ** 2 + (ha - pa) ** 2)
    high = diff + math.sqrt((hb - pb) ** 2 + (pa - la) ** 2)
    p = float(stats.fisher_exact([[kb, nb - kb], [ka, na - ka]]).pvalue)
    return name, pa, pb, diff, low, high, min(1.0, p), "fisher-exact, newcombe interval"


def _length_figure(a: list[int], b: list[int]) -> tuple[Any, ...]:
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return "answer_length", None, None, None, None, None, 1.0, "none: fewer than 2 answers"
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    if len(set(a)) == 1 and len(set(b)) == 1:
        p = 1.0 if a[0] == b[0] else 0.0
        return "answer_length", ma, mb, mb - ma, mb - ma, mb - ma, p, "constant lengths"
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    # Welch-Satterthwaite degrees of freedom (a group of constant lengths adds none)
    df = (va + vb) ** 2 / sum(v**2 / (len(g) - 1) for v, g in ((va, a), (vb, b)) if v > 0)
    half = float(stats.t.ppf(0.975, df)) * math.sqrt(va + vb)
    p = float(stats.mannwhitneyu(b, a, alternative="two-sided").pvalue)
    diff = mb - ma
    return "answer_length", ma, mb, diff, diff - half, diff + half, p, "mann-whitney u, welch"


def _language_figure(a: Mapping[str, int], b: Mapping[str, int]) -> tuple[Any, ...]:
    from scipy import stats

    langs = sorted(set(a) | set(b))
    na, nb = sum(a.values()), sum(b.values())
    if na == 0 or nb == 0:
        return "language_mix", None, None, None, None, None, 1.0, "none: an empty profile"
    top = max(a, key=lambda k: a[k])
    sa, sb = a[top] / na, b.get(top, 0) / nb
    if len(langs) < 2:
        return "language_mix", sa, sb, sb - sa, None, None, 1.0, f"one language ({top})"
    table = [[a.get(k, 0) for k in langs], [b.get(k, 0) for k in langs]]
    p = float(stats.chi2_contingency(table).pvalue)
    return "language_mix", sa, sb, sb - sa, None, None, p, f"chi-square (share of {top!r})"


def profile_drift(
    a: Mapping[str, Any], b: Mapping[str, Any], *, alpha: float = 0.05
) -> ProfileDrift:
    """Compare behavioural profile ``b`` with ``a`` (dicts as stored in the run).

    Example:
        >>> a = {"n": 200, "refused": 4, "leak": 0, "secret": 0, "pii": 0,
        ...      "lengths": [300] * 100 + [320] * 100, "languages": {"en": 200}}
        >>> b = dict(a, refused=40)
        >>> [f.name for f in profile_drift(a, b).figures if f.drifted]
        ['refused']
    """
    if not 0 < alpha < 1:
        raise StatisticsError(f"alpha must be in (0, 1), got {alpha}")
    try:
        na, nb = int(a["n"]), int(b["n"])
        rows = [_rate_figure(k, int(a[k]), na, int(b[k]), nb) for k in _RATES]
        rows.append(_length_figure([int(x) for x in a["lengths"]], [int(x) for x in b["lengths"]]))
        rows.append(
            _language_figure(dict(a.get("languages") or {}), dict(b.get("languages") or {}))
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StatisticsError(f"not a behavioural profile: {type(exc).__name__}: {exc}") from None
    adjusted = adjust_p_values([r[6] for r in rows], method="holm")
    figures = tuple(
        DriftFigure(r[0], r[1], r[2], r[3], r[4], r[5], r[6], q, q < alpha, r[7])
        for r, q in zip(rows, adjusted, strict=True)
    )
    return ProfileDrift(na, nb, alpha, figures)
