"""The :class:`Store`: one opened history database and what it can do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import EllipsisType
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import Session

from shieldbench._redact import redact, redact_all
from shieldbench.alerts import Alert, Delivery
from shieldbench.errors import StoreError
from shieldbench.identity import DefenseIdentity
from shieldbench.store._attackrow import attack_row
from shieldbench.store._browse import Browsing
from shieldbench.store._git import git_info
from shieldbench.store._models import AlertRow, AttackRow, RunRow
from shieldbench.store._open import StoreEngine, open_engine, resolve_url
from shieldbench.store._resolve import defense_specs, resolve_reference
from shieldbench.store._runs import RunInfo, filtered, list_runs, newest, read_run
from shieldbench.store._runwrite import insert_run
from shieldbench.types import Run

__all__ = ["Store", "StoredAlert", "open_store"]

Git = tuple[str | None, str | None]


def _check_tags(tags: Mapping[str, str] | None) -> dict[str, str]:
    checked = dict(tags or {})
    for key, value in checked.items():
        if not key or "=" in key or len(key) > 200 or len(str(value)) > 1000:
            raise StoreError(
                f"tag {key!r}={value!r}: a tag is KEY=VALUE, KEY non-empty without '='"
                " (at most 200 characters; the value at most 1000)"
            )
    return {k: str(v) for k, v in checked.items()}


@dataclass(frozen=True, slots=True)
class StoredAlert:
    """An alert as the history holds it, with what each sink did with it."""

    id: int
    alert: Alert
    delivered: Mapping[str, Any]


class Store(Browsing):
    """An opened history database. Make one with :func:`open_store`; close it after.

    Every method is one transaction. ``session(write=True)`` gives the same to
    another feature writing its own tables (see the package doc).
    """

    def __init__(self, opened: StoreEngine) -> None:
        self._db = opened
        self._held: Connection | None = None

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

    @contextmanager
    def connection(self, *, write: bool = False) -> Iterator[Connection]:
        """One transaction on a Core connection (cheaper than :meth:`session`; hot paths)."""
        with self._db.connection(write=write) as conn:
            yield conn

    @contextmanager
    def statement(self) -> Iterator[Connection]:
        """A write connection kept open between calls, in autocommit: each statement is
        its own transaction, all or none, and costs one round trip to the server.

        :meth:`connection` checks a connection out of the pool (a ``SELECT 1`` to see
        it is alive), then sends ``BEGIN`` and ``COMMIT`` around the work: four round
        trips for one statement, measured at ~0.5 ms of client CPU on PostgreSQL over
        loopback TCP. A hot writer of one statement per batch (the guard service's
        audit ``COPY``) pays one here. For ONE caller at a time (the caller serialises
        its calls); a failure closes the connection (the next call opens a new one) and
        raises :class:`StoreError` as :meth:`connection` does.
        """
        conn = self._held
        if conn is None or conn.closed or conn.invalidated:
            conn = self._held = self._db.held()
        try:
            yield conn
        except BaseException as error:
            self._held = None
            with contextlib.suppress(Exception):
                conn.close()
            if isinstance(error, DatabaseError):
                raise self._db.failure(error) from error
            raise

    def close(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(Exception):
                held.close()
        self._db.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ---------------------------------------------------------------------

    def add_run(
        self,
        run: Run,
        *,
        source: str = "run",
        tags: Mapping[str, str] | None = None,
        git: Git | None = None,
    ) -> bool:
        """Store ``run`` whole, in one transaction; ``False`` if it was already stored.

        ``git`` is ``(commit, branch)``; ``None`` reads the working directory's (pass
        ``(None, None)`` for a run from elsewhere, e.g. an imported file). The same
        run (same id, defense and version, data and times) stored twice is kept once,
        concurrent writers included (they queue on a lock per run id); another run
        under a stored id (a pair re-run by ``run --resume`` after the defense
        changed) is kept beside it, and the id then names the newest.
        """
        checked = _check_tags(tags)
        found = git_info() if git is None else git
        with self.session(write=True) as s:
            return insert_run(s, run, source=source, tags=checked, git=found)

    def get_run(self, run_id: str) -> Run:
        """The stored run, rebuilt exactly as it was stored."""
        with self.session() as s:
            return read_run(s, self.resolve(run_id, session=s))

    def runs(
        self,
        *,
        defense: str | None = None,
        identity: DefenseIdentity | None = None,
        dataset: str | None = None,
        tags: Mapping[str, str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunInfo]:
        """Stored runs matching every filter, oldest first (the newest ``limit``).

        ``defense`` is a spec, matched by canonical form (every version), or failing
        that a display name; ``identity`` is one spec and version exactly."""
        with self.session() as s:
            specs = None if defense is None else defense_specs(s, defense)
            version: str | EllipsisType | None = ...
            if identity is not None:  # that spec exactly (never a display name)
                found = defense_specs(s, identity.spec)
                specs = [
                    x
                    for x in (found if specs is None else set(specs) & set(found))
                    if DefenseIdentity.of(x, None).spec == identity.spec
                ]
                version = identity.version
            query = filtered(
                specs=specs,
                version=version,
                dataset=dataset,
                tags=tags,
                since=since,
                until=until,
            )
            return list_runs(s, query, limit=limit)

    def info(self, ref: str) -> RunInfo:
        """The listed record (figures, tags; no outcomes) of the run ``ref`` names."""
        with self.session() as s:
            run_id = self.resolve(ref, session=s)
            return list_runs(s, newest(run_id))[0]

    def resolve(
        self,
        ref: str,
        *,
        dataset_hash: str | None = None,
        identity: DefenseIdentity | None = None,
        session: Session | None = None,
    ) -> str:
        """The run id a reference names: an id (or a unique prefix of one),
        ``latest:DEFENSE@DATASET`` (the newest run of that defense on that dataset,
        by spec or content hash; ``DEFENSE==VERSION`` for one version) or
        ``tag:KEY=VALUE`` (the newest run so tagged).

        A defense is its canonical spec and version (see
        :mod:`shieldbench.store._resolve`): a reference that matches runs of several
        is refused with their list, unless ``identity`` names the one wanted (then
        a ``tag:`` reference must have a run of it, on ``dataset_hash`` when given).
        With ``dataset_hash``, runs on that data are preferred."""
        if session is None:
            with self.session() as s:
                return self.resolve(ref, dataset_hash=dataset_hash, identity=identity, session=s)
        try:
            found = resolve_reference(session, ref, dataset_hash=dataset_hash, identity=identity)
        except StoreError as error:
            raise StoreError(f"{self.url}: {error}") from None
        if found is not None:
            return found
        exact = session.scalar(select(RunRow.run_id).where(RunRow.run_id == ref).limit(1))
        if exact is not None:
            return exact
        like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found_ids = list(
            session.scalars(
                select(RunRow.run_id)
                .distinct()
                .where(RunRow.run_id.like(like + "%", escape="\\"))
                .limit(3)
            )
        )
        if len(found_ids) == 1:
            return found_ids[0]
        if found_ids:
            raise StoreError(f"run id prefix {ref!r} is ambiguous: {', '.join(found_ids)}, ...")
        raise StoreError(f"{self.url}: no stored run with id {ref!r}")

    # -- attacks --------------------------------------------------------------------

    def add_attack(
        self,
        document: Mapping[str, Any],
        *,
        tags: Mapping[str, str] | None = None,
        git: Git | None = None,
    ) -> bool:
        """Store an attack result (its ``to_dict()`` form: a mutator search's
        ``AttackResult`` or an ``LLMAttackResult``, transcripts and all); ``False`` if
        already stored."""
        row = attack_row(document, tags=_check_tags(tags))
        row.git_commit, row.git_branch = git_info() if git is None else git
        with self.session(write=True) as s:
            if s.scalar(select(AttackRow.pk).where(AttackRow.attack_id == row.attack_id)):
                return False
            s.add(row)
        return True

    def get_attack(self, attack_id: str) -> dict[str, Any]:
        """A stored attack result's document (``AttackResult.from_dict`` reads it)."""
        with self.session() as s:
            doc = s.scalar(select(AttackRow.document).where(AttackRow.attack_id == attack_id))
        if doc is None:
            raise StoreError(f"{self.url}: no stored attack with id {attack_id!r}")
        return dict(doc)

    def attack_ids(self) -> list[str]:
        """Ids of the stored attacks, oldest first."""
        with self.session() as s:
            return list(s.scalars(select(AttackRow.attack_id).order_by(AttackRow.started)))

    # -- alerts -------------------------------------------------------------------

    def add_alert(self, alert: Alert, delivered: Mapping[str, Delivery] | None = None) -> int:
        """Store a fired alert (and its deliveries); its id. ``alert.run_id``, when set,
        must name a stored run."""
        with self.session(write=True) as s:
            run_pk = None
            if alert.run_id is not None:
                found = s.scalar(newest(alert.run_id))
                run_pk = None if found is None else found.pk
                if run_pk is None:
                    raise StoreError(f"{self.url}: alert about run {alert.run_id!r}, not stored")
            row = AlertRow(  # messages all: redacted (a webhook error may echo its URL)
                created=alert.created,
                source=alert.source,
                key=redact(alert.key),
                severity=alert.severity,
                title=redact(alert.title),
                message=redact(alert.message),
                details=redact_all(dict(alert.details)),
                run_pk=run_pk,
                delivered=redact_all({k: d.to_dict() for k, d in (delivered or {}).items()}),
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
    create: bool = True,
    check: bool = False,
    read_only: bool = False,
) -> Store:
    """Open (creating and migrating as needed) the history database.

    ``db`` is a URL or a SQLite file path; ``None`` reads ``SHIELDBENCH_DB``, then
    falls back to ``.shieldbench/history.db`` under ``cwd`` (the working directory).
    Raises :class:`~shieldbench.errors.StoreError` with one line naming the database
    when it cannot connect, is not a history, or was written by a newer shieldbench;
    with ``create=False`` also when the SQLite file does not exist yet; with
    ``check=True`` (commands that record at the end of long work) also when an existing
    SQLite file is damaged (``PRAGMA quick_check``), before any work is done.
    ``read_only=True`` opens it for reading only (see
    :func:`~shieldbench.store._open.open_engine`): nothing created, migrated or set;
    every write fails.
    """
    url, _default = resolve_url(db, env=env, cwd=cwd)
    opened = open_engine(
        url, busy_timeout_s=busy_timeout_s, create=create, check=check, read_only=read_only
    )
    return Store(opened)
