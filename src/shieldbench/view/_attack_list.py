"""The rows of the attacks list: every stored attack, whatever its kind.

The store answers each attack's columns and the few small parts of its record the
list shows (:class:`~shieldbench.store.AttackInfo`: ``meta.strategy``, the query
budget, the three headline rates), without reading the documents. This module turns
them into what a row says: the kind in words (``mutator search (beam)``, ``PAIR``,
``TAP``, ``Crescendo``), each rate with its interval and ``k / n`` when the record
holds a well-formed one (``n/a`` otherwise), the queries spent against the budget,
and, for a record this viewer cannot read (an unknown ``kind``), a note saying so,
so that nothing stored is ever left out of the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shieldbench.attacks import ATTACK_KIND, LLM_ATTACK_KIND
from shieldbench.store import AttackInfo

__all__ = [
    "KNOWN_KINDS",
    "STRATEGY_NAMES",
    "Figure",
    "Listed",
    "kind_name",
    "listed",
    "unknown_kind_note",
]

KNOWN_KINDS = (ATTACK_KIND, LLM_ATTACK_KIND)
STRATEGY_NAMES: Mapping[str, str] = {"pair": "PAIR", "tap": "TAP", "crescendo": "Crescendo"}


@dataclass(frozen=True, slots=True)
class Figure:
    """A stored rate: ``k`` of ``n``, its value and interval (the ``interval`` filter
    reads ``value``, ``ci_low`` and ``ci_high``)."""

    k: int
    n: int
    value: float | None
    ci_low: float
    ci_high: float


@dataclass(frozen=True, slots=True)
class Listed:
    """One row of the list (see the module docstring)."""

    info: AttackInfo
    kind: str
    known: bool
    note: str | None
    static: Figure | None
    adaptive: Figure | None
    preserving: Figure | None
    budget: int | None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _figure(data: Mapping[str, Any] | None) -> Figure | None:
    """The rate in ``data`` (a ``Rate.to_dict()``), or ``None`` when it is not one."""
    if data is None:
        return None
    k: Any = data.get("k")
    n: Any = data.get("n")
    value: Any = data.get("value")
    low: Any = data.get("ci_low")
    high: Any = data.get("ci_high")
    counts = all(isinstance(x, int) and not isinstance(x, bool) for x in (k, n))
    if not counts or not (_number(low) and _number(high) and (value is None or _number(value))):
        return None
    return Figure(k, n, None if value is None else float(value), float(low), float(high))


def _budget(budget: Any) -> int | None:
    """The query budget: ``settings.budget`` (mutator search) or its ``queries``."""
    if isinstance(budget, Mapping):
        budget = budget.get("queries")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) else None


def kind_name(kind: str, strategy: str | None) -> str:
    """The kind in words: ``mutator search (beam)``, ``PAIR``, or the stored kind."""
    if kind == ATTACK_KIND:
        return f"mutator search ({strategy})" if strategy else "mutator search"
    if kind == LLM_ATTACK_KIND:
        return STRATEGY_NAMES.get(strategy or "", f"LLM-driven ({strategy or 'unknown'})")
    return kind


def unknown_kind_note(kind: str) -> str:
    """What the list and the page say about a record of a kind this viewer cannot read."""
    return (
        f"a record of kind {kind!r}, which this version of shieldbench cannot show"
        " (stored by another version or another tool)"
    )


def listed(info: AttackInfo) -> Listed:
    """The row of ``info``."""
    known = info.kind in KNOWN_KINDS
    figures = info.figures
    return Listed(
        info=info,
        kind=kind_name(info.kind, info.strategy),
        known=known,
        note=None if known else unknown_kind_note(info.kind),
        static=_figure(figures.get("static_asr")),
        adaptive=_figure(figures.get("adaptive_asr")),
        preserving=_figure(figures.get("preserving_asr")),
        budget=_budget(info.budget),
    )
