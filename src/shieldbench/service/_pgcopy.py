"""PostgreSQL's ``COPY`` of audit rows: the audit writer's one statement a batch.

:func:`copy_rows` writes a batch of ``guard_audit`` rows (as
:func:`~shieldbench.service._record.audit_row` makes them) with one ``COPY ... FROM
STDIN`` in the text format that :func:`copy_text` writes. On a connection in autocommit
(:meth:`shieldbench.store.Store.statement`) the statement is its own transaction: the
batch is in the store whole or not at all.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from shieldbench.service._tables import audit_table

__all__ = ["copy_rows", "copy_text"]

_COLUMNS = tuple(column.name for column in audit_table.columns)
_COPY = f"COPY {audit_table.name} ({', '.join(_COLUMNS)}) FROM STDIN"
#: A row's values in the columns' order.
_VALUES = operator.itemgetter(*_COLUMNS)


def copy_rows(conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` with PostgreSQL's ``COPY``, in the connection's transaction.

    One statement for the whole batch: an ``INSERT`` per row (what ``executemany``
    sends, even pipelined) costs the server a statement each, and the writer thread
    SQLAlchemy's and psycopg's per-row parameter handling; measured on the service's
    audit rows, ``COPY`` is several times cheaper for both (benchmarks/service_scale.py
    reports PostgreSQL's CPU per check). The rows are all or none, as with ``INSERT``;
    a driver error is raised as SQLAlchemy's (a constraint is an ``IntegrityError``,
    which :meth:`AuditStore.insert_isolating` reads as a refusal).
    """
    raw: Any = conn.connection.driver_connection
    data = copy_text(rows)  # before the statement: nothing can fail half-way through it
    try:
        with raw.cursor() as cursor, cursor.copy(_COPY) as copy:
            copy.write(data)
    except Exception as exc:
        dbapi_error = conn.dialect.loaded_dbapi.Error
        lost = isinstance(exc, dbapi_error) and conn.dialect.is_disconnect(exc, raw, None)
        if lost:
            conn.invalidate(exc)  # the pool drops it: the next batch gets a new connection
        raise sa.exc.DBAPIError.instance(
            _COPY, None, exc, dbapi_error, connection_invalidated=lost, dialect=conn.dialect
        ) from exc


#: COPY's text format: a backslash escapes; tab, newline and carriage return must.
_SPECIAL = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def _copy_field(value: Any) -> str:
    if type(value) is str:
        text = value
    elif value is None:
        return "\\N"
    elif type(value) is int:
        return str(value)
    elif isinstance(value, datetime):
        if value.tzinfo is UTC:  # what audit_row makes: no conversion needed
            return value.replace(tzinfo=None).isoformat(sep=" ")
        return str(_naive_utc(value).isoformat(sep=" "))
    else:
        text = str(value)
    for char, escaped in _SPECIAL:
        if char in text:
            text = text.replace(char, escaped)
    return text


def copy_text(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """The rows in ``COPY ... FROM STDIN``'s text format, one line each.

    The batch is written by one call: psycopg's ``write_row`` adapts each value by a
    call of its own, and the audit writer thread's per-row cost (with the GIL the event
    loop needs) was mostly that. Text is encoded with ``surrogatepass``: a value that is
    not valid UTF-8 then reaches the server, which refuses the batch (a ``DataError``,
    a refusal: the record goes to quarantine), never the writer thread.
    """
    lines = ["\t".join([_copy_field(v) for v in _VALUES(row)]) for row in rows]
    lines.append("")
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def _naive_utc(value: Any) -> Any:
    """What the timestamp column stores: UTC without a zone (as the column type writes it)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value
