"""The :class:`Store`: one opened history database and what it can do."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shieldbench.alerts import Alert, Delivery
from shieldbench.errors import StoreError
from shieldbench.store._models import AlertRow, RunRow
from shieldbench.store._open import StoreEngine, open_engine, resolve_url

__all__ = ["Store", "StoredAlert", "open_store"]


@dataclass(frozen=True, slots=True)
class StoredAlert:
    """An alert as the history holds it, with what each sink did with it."""

    id: int
    alert: Alert
    delivered: Mapping[str, Any]


class Store:
    """An opened history database. Make one with :func:`open_store`; close it after.

    Every method is one transaction. ``session(write=True)`` gives the same to
    another feature writing its own tables (see the package doc).
    """

    def __init__(self, opened: StoreEngine) -> None:
        self._db = opened

    @property
    def url(self) -> str:
        """Where the history is (the file path, or the URL without its password)."""
        return self._db.where

    @property
    def created(self) -> bool:
        """``True`` when this open created the SQLite file (say so to the user)."""
        return self._db.created

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._db.url.get_backend_name()

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction (committed at the end of the block, rolled back on error)."""
        with self._db.session(write=write) as session:
            yield session

    def close(self) -> None:
        self._db.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- alerts -------------------------------------------------------------------

    def add_alert(self, alert: Alert, delivered: Mapping[str, Delivery] | None = None) -> int:
        """Store a fired alert (and its deliveries); its id. ``alert.run_id``, when set,
        must name a stored run."""
        with self.session(write=True) as s:
            run_pk = None
            if alert.run_id is not None:
                run_pk = s.scalar(select(RunRow.pk).where(RunRow.run_id == alert.run_id))
                if run_pk is None:
                    raise StoreError(f"{self.url}: alert about run {alert.run_id!r}, not stored")
            row = AlertRow(
                created=alert.created,
                source=alert.source,
                key=alert.key,
                severity=alert.severity,
                title=alert.title,
                message=alert.message,
                details=dict(alert.details),
                run_pk=run_pk,
                delivered={k: d.to_dict() for k, d in (delivered or {}).items()},
            )
            s.add(row)
            s.flush()
            return row.pk

    def alerts(
        self,
        *,
        source: str | None = None,
        key: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredAlert]:
        """Stored alerts, newest first."""
        query = (
            select(AlertRow, RunRow.run_id)
            .outerjoin(RunRow, AlertRow.run_pk == RunRow.pk)
            .order_by(AlertRow.created.desc(), AlertRow.pk.desc())
        )
        if source is not None:
            query = query.where(AlertRow.source == source)
        if key is not None:
            query = query.where(AlertRow.key == key)
        if since is not None:
            query = query.where(AlertRow.created >= since)
        if limit is not None:
            query = query.limit(limit)
        with self.session() as s:
            rows = s.execute(query).all()
        return [
            StoredAlert(
                row.pk,
                Alert(
                    row.key,
                    row.title,
                    row.message,
                    source=row.source,
                    severity=row.severity,  # type: ignore[arg-type]  # written from an Alert
                    details=row.details,
                    run_id=run_id,
                    created=row.created,
                ),
                row.delivered,
            )
            for row, run_id in rows
        ]

    def last_alert_at(self, key: str, *, source: str | None = None) -> datetime | None:
        """When the alert ``key`` last fired (for :class:`~shieldbench.alerts.Cooldown`)."""
        query = select(func.max(AlertRow.created)).where(AlertRow.key == key)
        if source is not None:
            query = query.where(AlertRow.source == source)
        with self.session() as s:
            return s.scalar(query)  # max() keeps the column's type: UTC-aware


def open_store(
    db: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    busy_timeout_s: float = 10.0,
) -> Store:
    """Open (creating and migrating as needed) the history database.

    ``db`` is a URL or a SQLite file path; ``None`` reads ``SHIELDBENCH_DB``, then
    falls back to ``.shieldbench/history.db`` under ``cwd`` (the working directory).
    Raises :class:`~shieldbench.errors.StoreError` with one line naming the database
    when it cannot connect, is not a history, or was written by a newer shieldbench.
    """
    url, _default = resolve_url(db, env=env, cwd=cwd)
    return Store(open_engine(url, busy_timeout_s=busy_timeout_s))
