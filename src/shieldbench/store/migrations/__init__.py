"""Alembic migrations of the history store, run programmatically by :mod:`shieldbench.store`."""
