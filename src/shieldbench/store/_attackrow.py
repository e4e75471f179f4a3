"""An attack result's row in the history: built from its document, checked first.

An attack result reaches the store as its ``to_dict()`` form, or as JSON a user wrote
or edited. Everything the ``attacks`` table holds in a column of its own is checked
here, and so is the document itself, so a bad value is refused with a
:class:`~shieldbench.errors.StoreError` that names the field, never stored to break a
reader later:

- the texts with columns of their own (``meta.id``, ``kind``, the defense's and the
  dataset's spec and name, ``dataset.content_hash``) are non-empty texts within their
  columns' lengths;
- the rates (``figures.static_asr.value``, ``figures.adaptive_asr.value``) are numbers
  in [0, 1] or absent, and the query count is a whole number >= 0 or absent;
- no number anywhere in the document is NaN or infinite (JSON has no such numbers; a
  database's JSON functions refuse the whole table's documents over one of them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from shieldbench._redact import mask_all, redact, redact_all
from shieldbench.errors import StoreError
from shieldbench.store._models import AttackRow

__all__ = ["attack_row"]


def attack_row(document: Mapping[str, Any], *, tags: dict[str, str]) -> AttackRow:
    """The row of ``document`` (git fields unset), or a ``StoreError`` naming the field."""
    _finite(document, "document")
    try:
        meta, defense, dataset = document["meta"], document["defense"], document["dataset"]
        figures = document.get("figures") or {}
        counts = document.get("counts") or {}
        started = datetime.fromisoformat(meta["started"])
        finished = datetime.fromisoformat(meta["finished"])
        row = AttackRow(
            attack_id=_text(str(meta["id"]), "meta.id", 128),
            kind=_text(document.get("kind") or "shieldbench.attack", "kind", 64),
            defense_spec=redact(_text(defense["spec"], "defense.spec")),
            defense_name=redact(_text(defense["name"], "defense.name")),
            dataset_spec=redact(_text(dataset["spec"], "dataset.spec")),
            dataset_hash=_text(dataset["content_hash"], "dataset.content_hash", 100),
            started=started if started.tzinfo else started.replace(tzinfo=UTC),
            finished=finished if finished.tzinfo else finished.replace(tzinfo=UTC),
            recorded=datetime.now(UTC),
            static_asr=_rate(figures, "static_asr"),
            adaptive_asr=_rate(figures, "adaptive_asr"),
            queries=_count(counts),
            git_commit=None,
            git_branch=None,
            tags=redact_all(tags),
            document=mask_all(dict(document)),  # attack texts are data
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise StoreError(f"not an attack result ({type(error).__name__}: {error})") from None
    return row


def _text(value: Any, field: str, limit: int | None = None) -> str:
    if not isinstance(value, str) or not value or (limit is not None and len(value) > limit):
        most = f" of at most {limit} characters" if limit is not None else ""
        raise StoreError(f"not an attack result: {field} is {value!r}, not a text{most}")
    return value


def _rate(figures: Mapping[str, Any], name: str) -> float | None:
    figure = figures.get(name) or {}
    if not isinstance(figure, Mapping):
        raise StoreError(f"not an attack result: figures.{name} is {figure!r}, not an object")
    value = figure.get("value")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise StoreError(
            f"not an attack result: figures.{name}.value is {value!r}, not a rate in [0, 1]"
        )
    return float(value)


def _count(counts: Mapping[str, Any]) -> int | None:
    key = "queries" if "queries" in counts else "search_queries"
    value = counts.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StoreError(
            f"not an attack result: counts.{key} is {value!r}, not a whole number >= 0"
        )
    return value


def _finite(value: Any, path: str) -> None:
    """Refuse a NaN or infinite number anywhere in ``value`` (iteratively: any depth)."""
    todo: list[tuple[Any, str]] = [(value, path)]
    while todo:
        item, where = todo.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                raise StoreError(
                    f"not an attack result: {where} is {item!r}; JSON has no NaN or infinity"
                )
        elif isinstance(item, Mapping):
            todo.extend((v, f"{where}.{k}") for k, v in item.items())
        elif isinstance(item, list | tuple):
            todo.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
