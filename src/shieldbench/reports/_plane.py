"""The security / utility plane: every defense at (FPR, block rate), and its frontier.

One :class:`TradeoffPlane` per dataset (all its runs) and one per attack category:
each defense is a :class:`PlanePoint` with both rates and their intervals. A point
is on the Pareto frontier when no other defense has an FPR at most as high *and* a
block rate at least as high, one of them strictly (point estimates; a defense with
an undefined rate is not on it). With a policy (``max_fpr``), ``within_policy``
says whether the point's FPR is at most the limit.

In a category plane the block rate is the category's; the FPR is the category's
when the category holds benign samples, else the run's overall FPR
(``fpr_scope`` says which), since attack categories usually hold no benign text.

Example:
    >>> from shieldbench.metrics import rate
    >>> pts = frontier_points(
    ...     [("a", rate(1, 100), rate(80, 100)), ("b", rate(5, 100), rate(90, 100)),
    ...      ("c", rate(6, 100), rate(70, 100))], max_fpr=0.02)
    >>> [(p.label, p.on_frontier, p.within_policy) for p in pts]
    [('a', True, True), ('b', True, False), ('c', False, False)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shieldbench.metrics import Rate, RunSummary

__all__ = ["PlanePoint", "TradeoffPlane", "frontier_points", "tradeoff_planes"]

FprScope = Literal["overall", "group"]


@dataclass(frozen=True, slots=True)
class PlanePoint:
    """One defense on the plane: its FPR and block rate with 95% intervals."""

    label: str
    false_positive_rate: Rate
    block_rate: Rate
    on_frontier: bool
    within_policy: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "false_positive_rate": self.false_positive_rate.to_dict(),
            "block_rate": self.block_rate.to_dict(),
            "on_frontier": self.on_frontier,
            "within_policy": self.within_policy,
        }


@dataclass(frozen=True, slots=True)
class TradeoffPlane:
    """The defenses of one dataset on the (FPR, block rate) plane, overall (``group``
    is ``None``) or in one attack category."""

    dimension: str | None
    group: str | None
    fpr_scope: FprScope
    max_fpr: float | None
    points: tuple[PlanePoint, ...]

    @property
    def frontier(self) -> tuple[PlanePoint, ...]:
        """The frontier's points, lowest FPR first."""
        on = [p for p in self.points if p.on_frontier]
        return tuple(sorted(on, key=lambda p: (p.false_positive_rate.value or 0.0, p.label)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "group": self.group,
            "fpr_scope": self.fpr_scope,
            "max_fpr": self.max_fpr,
            "points": [p.to_dict() for p in self.points],
            "frontier": [p.label for p in self.frontier],
        }


def frontier_points(
    rates: Sequence[tuple[str, Rate, Rate]], *, max_fpr: float | None = None
) -> tuple[PlanePoint, ...]:
    """``(label, fpr, block rate)`` triples as points, frontier and policy marked."""
    defined = [(lab, f.value, b.value) for lab, f, b in rates]

    def dominated(fpr: float, block: float) -> bool:
        return any(
            f is not None and b is not None and f <= fpr and b >= block and (f < fpr or b > block)
            for _, f, b in defined
        )

    points = []
    for lab, fpr, block in rates:
        f, b = fpr.value, block.value
        on = f is not None and b is not None and not dominated(f, b)
        within = None if max_fpr is None or f is None else f <= max_fpr
        points.append(PlanePoint(lab, fpr, block, on, within))
    return tuple(points)


def tradeoff_planes(
    labels: Sequence[str],
    summaries: Sequence[RunSummary],
    *,
    max_fpr: float | None,
    by: str = "category",
) -> tuple[TradeoffPlane, ...]:
    """The overall plane, then one per attack group of ``by`` (sorted by name)."""
    overall = frontier_points(
        [
            (lab, s.rates.false_positive_rate, s.rates.block_rate)
            for lab, s in zip(labels, summaries, strict=True)
        ],
        max_fpr=max_fpr,
    )
    planes = [TradeoffPlane(None, None, "overall", max_fpr, overall)]
    tables = [{g.group: g for g in s.breakdowns.by.get(by, ())} for s in summaries]
    attack_groups = sorted({g for t in tables for g, r in t.items() if r.confusion.n_attacks})
    for group in attack_groups:
        rows = [(lab, t[group]) for lab, t in zip(labels, tables, strict=True) if group in t]
        own_fpr = all(r.confusion.n_benign > 0 for _, r in rows)
        by_label = dict(zip(labels, summaries, strict=True))
        triples = [
            (
                lab,
                r.false_positive_rate if own_fpr else by_label[lab].rates.false_positive_rate,
                r.block_rate,
            )
            for lab, r in rows
        ]
        scope: FprScope = "group" if own_fpr else "overall"
        planes.append(
            TradeoffPlane(by, group, scope, max_fpr, frontier_points(triples, max_fpr=max_fpr))
        )
    return tuple(planes)
