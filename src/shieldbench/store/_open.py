"""Where the history lives and how it is opened: URLs, engines, sessions.

The database is chosen, first match wins, by an explicit URL (``--db``), the
``SHIELDBENCH_DB`` environment variable, or the default SQLite file
``.shieldbench/history.db`` under the working directory. A URL is
``sqlite:///PATH``, ``postgresql://user:pass@host:port/db`` (driven by psycopg 3)
or a plain file path (a SQLite file).

SQLite is opened in WAL mode (readers never wait for a writer; set once the file is
accepted as a history, so a refused file is left unchanged), with foreign keys
enforced and a busy timeout (a second writer waits for the first instead of
failing). Transactions that write start with ``BEGIN IMMEDIATE``, so two writers
queue at the start rather than deadlock on a lock upgrade.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from shieldbench.errors import StoreError
from shieldbench.store._migrate import check_readable, ensure_schema

__all__ = ["DEFAULT_PATH", "ENV_VAR", "StoreEngine", "display_url", "open_engine", "resolve_url"]

ENV_VAR = "SHIELDBENCH_DB"
DEFAULT_PATH = Path(".shieldbench") / "history.db"
_WRITE = "shieldbench_write"


def resolve_url(
    db: str | None = None, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[URL, bool]:
    """The database URL to use and whether it is the default file.

    Example:
        >>> url, default = resolve_url("postgresql://u@localhost/h", env={})
        >>> url.drivername, default
        ('postgresql+psycopg', False)
        >>> resolve_url(None, env={}, cwd=Path("/w"))[0].database
        '/w/.shieldbench/history.db'
    """
    environ = os.environ if env is None else env
    text = db or environ.get(ENV_VAR) or None
    if text is None:
        path = (cwd or Path.cwd()) / DEFAULT_PATH
        return URL.create("sqlite", database=str(path)), True
    where = "--db" if db else ENV_VAR
    if "://" not in text:
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = (cwd or Path.cwd()) / path
        return URL.create("sqlite", database=str(path)), False
    try:
        url = make_url(text)
    except exc.ArgumentError as error:
        raise StoreError(f"{where} {text!r}: not a database URL ({error})") from None
    backend = url.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg"), False
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise StoreError(
                f"{where} {text!r}: name a SQLite file (sqlite:///PATH); an in-memory"
                " database would forget the history when the command ends"
            )
        return url.set(drivername="sqlite"), False
    raise StoreError(
        f"{where} {display_url(url)!r}: unsupported database {backend!r};"
        " use sqlite:///PATH, postgresql://user@host/db or a file path"
    )


def display_url(url: URL) -> str:
    """The URL with any password masked, for messages."""
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    return url.render_as_string(hide_password=True)


def _sqlite_reader(url: URL, busy_timeout_s: float) -> Engine:
    """A SQLite engine that cannot write: the file opened ``mode=ro`` and the
    connection ``query_only``; the journal mode is left as the writers set it."""
    path = Path(str(url.database)).resolve()
    uri = f"file:{quote(str(path))}?mode=ro"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=busy_timeout_s, check_same_thread=False)

    engine = create_engine("sqlite://", creator=connect)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            cursor.execute("PRAGMA query_only = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def _sqlite_engine(url: URL, busy_timeout_s: float) -> Engine:
    engine = create_engine(url, connect_args={"timeout": busy_timeout_s})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            cursor.execute("PRAGMA foreign_keys = ON")
            # WAL is set once the database is known to be a history (see _settle_sqlite):
            # it is persistent, a change to the file that a refused database must not get.
            cursor.execute("PRAGMA synchronous = NORMAL")  # WAL: durable against crashes
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@dataclass(frozen=True, slots=True)
class StoreEngine:
    """An opened database: the engine, session factories and what opening did."""

    url: URL
    engine: Engine
    write_engine: Engine
    created: bool
    migrated: bool

    @property
    def where(self) -> str:
        return display_url(self.url)

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back on any error.

        ``write=True`` on SQLite takes the write lock at the start (``BEGIN
        IMMEDIATE``), waiting up to the busy timeout for another writer.
        """
        factory = sessionmaker(self.write_engine if write else self.engine, expire_on_commit=False)
        try:
            with factory.begin() as session:
                yield session
        except exc.OperationalError as error:
            raise StoreError(f"{self.where}: {_reason(error)}") from error
        except exc.DatabaseError as error:
            raise StoreError(f"{self.where}: {_reason(error)}") from error

    @contextmanager
    def connection(self, *, write: bool = False) -> Iterator[Connection]:
        """Like :meth:`session` on a Core connection: no ORM unit of work, ~3x cheaper for
        a small insert (a hot path such as the guard service's audit commit)."""
        try:
            with (self.write_engine if write else self.engine).begin() as conn:
                yield conn
        except exc.OperationalError as error:
            raise StoreError(f"{self.where}: {_reason(error)}") from error
        except exc.DatabaseError as error:
            raise StoreError(f"{self.where}: {_reason(error)}") from error

    def held(self) -> Connection:
        """A new write connection in autocommit mode, for :meth:`Store.statement`."""
        try:
            conn = self.write_engine.connect()
            return conn.execution_options(isolation_level="AUTOCOMMIT")
        except exc.DatabaseError as error:
            raise self.failure(error) from error

    def failure(self, error: exc.DatabaseError) -> StoreError:
        """The :class:`StoreError` of a database error (where, and the driver's reason)."""
        return StoreError(f"{self.where}: {_reason(error)}")

    def dispose(self) -> None:
        self.engine.dispose()
        self.write_engine.dispose()


def _open_reader(url: URL, where: str, busy_timeout_s: float) -> StoreEngine:
    if url.get_backend_name() == "sqlite":
        if not Path(str(url.database)).is_file():
            raise StoreError(
                f"{where}: no history here (run, compare and attack record into it;"
                " --db or SHIELDBENCH_DB names another)"
            )
        engine = _sqlite_reader(url, busy_timeout_s)
    else:
        engine = create_engine(
            url,
            pool_pre_ping=True,
            connect_args={
                "connect_timeout": max(1, int(busy_timeout_s)),
                "options": "-c default_transaction_read_only=on",
            },
        )
    try:
        check_readable(engine, where)
    except exc.DBAPIError as error:
        engine.dispose()
        raise StoreError(f"{where}: cannot open the history database: {_reason(error)}") from None
    except sqlite3.DatabaseError as error:  # raised raw by a damaged file on connect
        engine.dispose()
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise StoreError(f"{where}: cannot open the history database: {reason}") from None
    except BaseException:
        engine.dispose()
        raise
    return StoreEngine(url, engine, engine, False, False)


def _reason(error: exc.DBAPIError) -> str:
    text = str(error.orig).strip().splitlines()
    return text[0] if text else type(error.orig).__name__


def _check_sqlite(engine: Engine, where: str) -> None:
    """``PRAGMA quick_check``: a damaged file is refused before any work is done (a
    benchmark that could not be recorded at its end would be lost), and unchanged."""
    raw = engine.raw_connection()
    try:
        rows = raw.cursor().execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as error:
        problem = str(error)
    else:
        problem = "" if rows == [("ok",)] else str(rows[0][0] if rows else "no answer")
    finally:
        raw.close()
    if problem:
        problem = " ".join(problem.replace("*** in database main ***", "").split())
        raise StoreError(
            f"{where}: the history database is damaged ({problem}); nothing was run or"
            " changed. Recover it (sqlite3 FILE .recover) or use another with --db /"
            " SHIELDBENCH_DB"
        )


def _settle_sqlite(engine: Engine, where: str) -> None:
    """WAL mode (readers never wait for a writer), once the file is known to be a history."""
    raw = engine.raw_connection()
    try:
        raw.cursor().execute("PRAGMA journal_mode = WAL").fetchall()
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{where}: cannot open the history database: {error}") from None
    finally:
        raw.close()


def open_engine(
    url: URL,
    *,
    busy_timeout_s: float = 10.0,
    migrate: bool = True,
    create: bool = True,
    check: bool = False,
    read_only: bool = False,
) -> StoreEngine:
    """Connect, check the schema revision and migrate; :class:`StoreError` on failure.

    ``create=False`` refuses to create a missing SQLite file (for commands that only
    read the history). ``check=True`` also reads every page of an existing SQLite file
    (``PRAGMA quick_check``, about a second per GB) and refuses a damaged one: for
    commands that record at the end of long work. A database that is refused (damaged,
    foreign, newer) is not changed: WAL mode is set only after it is accepted.
    ``read_only=True`` (the viewer) creates nothing, migrates nothing and changes no
    setting of the database: a SQLite file is opened ``mode=ro`` with ``query_only``, a
    PostgreSQL session is ``default_transaction_read_only``; a schema this shieldbench
    does not know is refused as usual."""
    where = display_url(url)
    if read_only:
        return _open_reader(url, where, busy_timeout_s)
    created = False
    if url.get_backend_name() == "sqlite":
        path = Path(str(url.database))
        created = not path.exists()
        if created and not create:
            raise StoreError(
                f"{where}: no history here yet (run, compare and attack record into it;"
                " --db or SHIELDBENCH_DB names another)"
            )
        if created:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StoreError(f"{where}: cannot create its folder ({error})") from None
        engine = _sqlite_engine(url, busy_timeout_s)
    else:
        engine = create_engine(
            url,
            pool_pre_ping=True,
            connect_args={"connect_timeout": max(1, int(busy_timeout_s))},
        )
    write_engine = engine.execution_options(**{_WRITE: True})
    sqlite = url.get_backend_name() == "sqlite"
    try:
        if sqlite and check and not created:
            _check_sqlite(engine, where)
        migrated = ensure_schema(engine, write_engine, where) if migrate else False
        if sqlite:
            _settle_sqlite(engine, where)
    except exc.DBAPIError as error:
        engine.dispose()
        if created:
            Path(str(url.database)).unlink(missing_ok=True)
        raise StoreError(f"{where}: cannot open the history database: {_reason(error)}") from None
    except sqlite3.DatabaseError as error:  # raised raw by a damaged file on connect
        engine.dispose()
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise StoreError(f"{where}: cannot open the history database: {reason}") from None
    except BaseException:
        engine.dispose()
        raise
    return StoreEngine(url, engine, write_engine, created, migrated)
