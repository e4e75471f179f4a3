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
from datetime import UTC, datetime
from typing import Any

from shieldbench.attacks import ATTACK_KIND, LLM_ATTACK_KIND
from shieldbench.errors import StoreError
from shieldbench.store import AttackInfo, Store
from shieldbench.view._records import FAILURES

__all__ = [
    "KNOWN_KINDS",
    "STRATEGY_NAMES",
    "Figure",
    "Listed",
    "kind_name",
    "listed",
    "listed_attacks",
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


def _time(text: Any) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _info_of(doc: Mapping[str, Any], attack_id: str) -> AttackInfo:
    """The list's columns, read from the document itself (see :func:`listed_attacks`)."""
    meta, figures, settings = doc["meta"], doc.get("figures") or {}, doc.get("settings") or {}
    counts = doc.get("counts") or {}
    queries = counts.get("queries", counts.get("search_queries"))
    return AttackInfo(
        attack_id,
        str(doc["defense"]["spec"]),
        str(doc["defense"]["name"]),
        str(doc["dataset"]["spec"]),
        str(doc["dataset"]["content_hash"]),
        _time(meta["started"]),
        _time(meta["finished"]),
        None,
        None,
        queries if isinstance(queries, int) else None,
        None,
        {},
        str(doc.get("kind") or ATTACK_KIND),
        meta.get("strategy") if isinstance(meta.get("strategy"), str) else None,
        settings.get("budget"),
        {k: v for k, v in figures.items() if isinstance(v, Mapping)},
    )


def listed_attacks(store: Store, limit: int = 200) -> tuple[list[Listed], list[dict[str, str]]]:
    """Every stored attack's row, newest first, and the records that could not be listed
    as ``{"id", "reason"}``.

    The store reads the list's few fields from the documents in SQL; a document that
    the database's JSON functions refuse (a hand-edited NaN or infinity: JSON has
    neither), or a column it cannot read back (a start that is not a time, tags that
    are not an object), fails that query for every record. Then each document is read
    on its own and listed from its own fields, so one damaged record never hides the
    others."""
    try:
        return [listed(info) for info in store.attack_infos(limit=limit)], []
    except (StoreError, *FAILURES):
        return _listed_one_by_one(store, limit)


def _listed_one_by_one(store: Store, limit: int) -> tuple[list[Listed], list[dict[str, str]]]:
    """:func:`listed_attacks` when the one query failed: each document read on its own."""
    rows, skipped = [], []
    for attack_id in reversed(store.attack_ids()[-limit:]):
        try:
            rows.append(listed(_info_of(store.get_attack(attack_id), attack_id)))
        except (StoreError, *FAILURES) as error:
            reason = f"attack {attack_id!r}: malformed record ({type(error).__name__}: {error})"
            skipped.append({"id": attack_id, "reason": reason})
    rows.sort(key=lambda r: r.info.started, reverse=True)
    return rows, skipped
