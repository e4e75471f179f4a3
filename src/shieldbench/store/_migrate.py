"""Schema versioning: alembic, run programmatically at open time.

:func:`ensure_schema` reads the revision a database is at. No revision and no
tables: a new store, upgraded to the newest revision. A revision this shieldbench
knows but older than its newest: upgraded. A revision it does not know: the
database was written by a newer shieldbench (or another feature's branch) and is
refused, untouched. The upgrade runs under a lock (``BEGIN IMMEDIATE`` on SQLite,
a transaction-scoped advisory lock on PostgreSQL) and re-reads the revision once
it holds the lock, so concurrent first opens migrate once.
"""

from __future__ import annotations

import functools

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect

from shieldbench.errors import StoreError

__all__ = ["check_readable", "ensure_schema", "head_revisions", "known_revisions"]

SCRIPT_LOCATION = "shieldbench.store:migrations"
_ADVISORY_KEY = 0x5B1E1D  # arbitrary, constant: "shieldbench migrations"


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    return cfg


@functools.cache
def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def known_revisions() -> frozenset[str]:
    """Every revision this shieldbench ships."""
    return frozenset(rev.revision for rev in _script().walk_revisions())


def head_revisions() -> frozenset[str]:
    """The newest revision(s): what a store is upgraded to."""
    return frozenset(_script().get_heads())


def _current(conn: Connection) -> frozenset[str]:
    return frozenset(MigrationContext.configure(conn).get_current_heads())


def _check(conn: Connection, where: str) -> frozenset[str]:
    current = _current(conn)
    unknown = current - known_revisions()
    if unknown:
        raise StoreError(
            f"{where}: the history database is at schema revision {', '.join(sorted(unknown))},"
            f" written by a newer shieldbench (this one knows up to"
            f" {', '.join(sorted(head_revisions()))}); upgrade shieldbench, or use another"
            " database with --db / SHIELDBENCH_DB. The database was not changed."
        )
    if not current:
        foreign = sorted(t for t in inspect(conn).get_table_names() if not t.startswith("sqlite_"))
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise StoreError(
                f"{where}: this database holds tables that are not a shieldbench history"
                f" ({shown}) and no shieldbench schema revision; point --db at an empty"
                " database or a shieldbench one. The database was not changed."
            )
    return current


def check_readable(engine: Engine, where: str) -> None:
    """Refuse, changing nothing, a database a reader cannot use: one from a newer
    shieldbench, one that is not a history, or an empty one (nothing to read)."""
    with engine.connect() as conn:
        if not _check(conn, where):
            raise StoreError(
                f"{where}: not a shieldbench history yet (no schema revision); run, compare"
                " and attack record into it"
            )


def ensure_schema(engine: Engine, write_engine: Engine, where: str) -> bool:
    """Bring the database to the newest revision; ``True`` when it migrated something."""
    with engine.connect() as conn:
        current = _check(conn, where)
    if current == head_revisions():
        return False
    with write_engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_KEY})")
        if _check(conn, where) == head_revisions():
            return False  # another process migrated while we waited for the lock
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "heads")
    return True
