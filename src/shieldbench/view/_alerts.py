"""The alerts the trend page shows, read so that one damaged alert hides no other.

:meth:`Store.alerts <shieldbench.store.Store.alerts>` rebuilds every alert as an
:class:`~shieldbench.alerts.Alert`, which refuses a severity it does not know, an
empty key or a time without a zone; one hand-edited row then fails the whole list.
When it does, :func:`readable_alerts` reads the rows as they are stored (plain SQL,
read-only), checks each against :class:`~shieldbench.alerts.Alert`'s types
(:mod:`._typed`), keeps the good ones and names the others with the field at fault.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from shieldbench.alerts import Alert
from shieldbench.store import Store, StoredAlert
from shieldbench.view._records import FAILURES, json_value
from shieldbench.view._typed import Malformed, check

__all__ = ["readable_alerts"]

_ALERTS_SQL = text(
    "SELECT a.pk, a.created, a.source, a.key, a.severity, a.title, a.message, a.details,"
    " r.run_id FROM alerts a LEFT JOIN runs r ON a.run_pk = r.pk"
    " ORDER BY a.created DESC, a.pk DESC LIMIT :limit"
)


def _alert(row: Mapping[Any, Any]) -> StoredAlert:
    """One stored alert rebuilt from its raw row; :class:`Malformed` naming the field."""
    values = {k: row[k] for k in ("key", "title", "message", "source", "severity", "run_id")}
    values["details"] = json_value(row["details"], "details")
    values["created"] = row["created"]
    check(values, Alert, "")
    if not values["key"]:
        raise Malformed("key", "is empty")
    created = values["created"]
    if not isinstance(created, datetime):
        created = datetime.fromisoformat(created)
    values["created"] = created if created.tzinfo else created.replace(tzinfo=UTC)
    return StoredAlert(int(row["pk"]), Alert(**values), {})


def _read_around(store: Store, limit: int) -> tuple[list[StoredAlert], list[dict[str, str]]]:
    good, skipped = [], []
    with store.connection() as conn:
        rows = list(conn.execute(_ALERTS_SQL, {"limit": limit}).mappings())
    for row in rows:
        try:
            good.append(_alert(row))
        except (Malformed, ValueError, TypeError) as error:
            reason = f"alert #{row['pk']}: stored {error}"
            skipped.append({"id": f"alert #{row['pk']}", "reason": reason})
    return good, skipped


def readable_alerts(
    store: Store, run_ids: Collection[str], *, limit: int = 2000
) -> tuple[list[StoredAlert], list[dict[str, str]]]:
    """The newest ``limit`` alerts about the runs ``run_ids``, newest first, and the
    damaged ones left out as ``{"id", "reason"}`` (see the module docstring)."""
    skipped: list[dict[str, str]] = []
    try:
        found = list(store.alerts(limit=limit))
    except FAILURES:
        found, skipped = _read_around(store, limit)
    wanted = set(run_ids)
    return [a for a in found if a.alert.run_id in wanted], skipped
