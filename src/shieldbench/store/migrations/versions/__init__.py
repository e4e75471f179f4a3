"""Alembic revisions, one module each (``0001`` = the history tables)."""
