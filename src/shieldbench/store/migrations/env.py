"""Alembic environment: migrate over the connection :mod:`shieldbench.store` hands over.

The store opens the connection, takes the migration lock (a ``BEGIN IMMEDIATE``
transaction on SQLite, an advisory lock on PostgreSQL) and passes the connection
in ``config.attributes["connection"]``; the whole upgrade is one transaction
(``transactional_ddl``: both backends roll DDL back), so a failed or killed
migration leaves the database at its previous revision.
"""

from __future__ import annotations

from alembic import context

from shieldbench.store._models import Base


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "shieldbench migrations run through shieldbench.store.open_store(), which"
            " passes the connection; they are not meant for the alembic command line"
        )
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        transactional_ddl=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


# Alembic installs ``context.config`` only while it runs this file; importing the
# module otherwise (doctest collection, documentation tools) does nothing.
if hasattr(context, "config"):
    run_migrations()
