"""The history store: every run, attack and alert kept in one database, over time.

SQLAlchemy 2 over an embedded SQLite file by default (``.shieldbench/history.db``
under the working directory) or PostgreSQL by URL (``--db postgresql://...`` or the
``SHIELDBENCH_DB`` environment variable; driven by psycopg 3). The schema is
versioned with alembic revisions shipped in this package and applied when a store
is opened; a database from a newer shieldbench is refused, untouched. Every write
is one transaction: a process killed while storing leaves the record whole or not
there at all.

Example:
    >>> import tempfile
    >>> from shieldbench.alerts import Alert
    >>> store = open_store(tempfile.mkdtemp() + "/history.db")
    >>> store.created, store.backend
    (True, 'sqlite')
    >>> alert_id = store.add_alert(Alert("demo", "Title", "message"))
    >>> [a.alert.title for a in store.alerts()]
    ['Title']
    >>> store.close()

**Adding tables from another feature** (the contract; the guard service does this):

1. Declare the models on :class:`Base` (SQLAlchemy 2 ``Mapped[...]`` columns;
   timestamps as ``Mapped[datetime]``, which maps to :class:`UTCDateTime`: aware
   datetimes in, UTC-aware out, on both backends) in your own package, e.g.
   ``shieldbench/service/_models.py``. Import it from your code, not from here:
   the store never imports its users.
2. Create the tables in your own alembic revision in
   ``shieldbench/store/migrations/versions/`` with ``down_revision = "0001"``
   (``"0002"`` is the service's decisions and feedback), written with
   ``op.create_table`` (not ``create_all``), with a ``downgrade``. Revisions form
   one line: the next one after yours names yours as ``down_revision``.
3. Write through ``with store.session(write=True) as s: ...`` (one transaction,
   ``BEGIN IMMEDIATE`` on SQLite so concurrent writers queue) and read through
   ``store.session()``. Store alerts with :meth:`Store.add_alert` and
   ``source="service"``; gate their repetition with
   :class:`shieldbench.alerts.Cooldown` and ``last_fired=store.last_alert_at``.
4. Test on both backends with the ``store_url`` fixture (``tests/_postgres.py``):
   it yields a fresh SQLite URL and a fresh database on a real PostgreSQL server.
"""

from __future__ import annotations

from shieldbench.store._migrate import head_revisions, known_revisions
from shieldbench.store._models import Base, UTCDateTime
from shieldbench.store._open import DEFAULT_PATH, ENV_VAR, display_url, resolve_url
from shieldbench.store._outcomes import OUTCOME_KINDS, OutcomeKind, OutcomePage, StoredOutcome
from shieldbench.store._read import (
    RUN_SORTS,
    AttackInfo,
    DatasetVersion,
    Flip,
    RunFilter,
    RunPage,
)
from shieldbench.store._runs import RunInfo
from shieldbench.store._store import Store, StoredAlert, open_store

__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "OUTCOME_KINDS",
    "RUN_SORTS",
    "AttackInfo",
    "Base",
    "DatasetVersion",
    "Flip",
    "OutcomeKind",
    "OutcomePage",
    "RunFilter",
    "RunInfo",
    "RunPage",
    "Store",
    "StoredAlert",
    "StoredOutcome",
    "UTCDateTime",
    "display_url",
    "head_revisions",
    "known_revisions",
    "open_store",
    "resolve_url",
]
