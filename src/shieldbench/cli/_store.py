"""How commands reach the history: ``--db``, ``--no-store``, ``--tag``, and recording.

``run``, ``compare`` and ``attack`` open the store *before* they work (a database
that cannot be opened stops them with exit 2 and nothing written) and record what
they produced afterwards. The first time the default file is created, its path is
printed, with how to put it elsewhere or skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from shieldbench.cli._app import err_console
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.store import Store
    from shieldbench.types import Run

__all__ = [
    "DbOption",
    "NoStoreOption",
    "TagOption",
    "lock_folder",
    "open_cli_store",
    "parse_tags",
    "record",
]

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="History database: sqlite:///PATH, postgresql://user@host/db or a file path"
        " (default: $SHIELDBENCH_DB, else .shieldbench/history.db here).",
    ),
]
NoStoreOption = Annotated[
    bool, typer.Option("--no-store", help="Do not record into the run history.")
]
TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", help="KEY=VALUE tag recorded with the runs (repeatable)."),
]


def parse_tags(values: Sequence[str] | None, *, option: str = "--tag") -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a value without ``=`` is a :class:`ConfigError`."""
    tags: dict[str, str] = {}
    for value in values or ():
        key, eq, rest = value.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{option} {value!r}: write KEY=VALUE, e.g. {option} release=1.2")
        tags[key.strip()] = rest
    return tags


def open_cli_store(
    db: str | None, ctx: typer.Context | None = None, *, create: bool = True
) -> Store:
    """Open the history, saying where it is the first time it is created (closed with
    the command's ``ctx`` when given; ``create=False`` for commands that only read).
    A command that records (``create=True``) records at the end of its work: the
    database is checked for damage now, so none of that work is lost to it."""
    from shieldbench.store import open_store

    store = open_store(db, create=create, check=create)
    if ctx is not None:
        ctx.call_on_close(store.close)
    if store.created:
        err_console.print(
            f"history: created {escape(store.url)} (every run is recorded there; --db or"
            " SHIELDBENCH_DB to keep it elsewhere, --no-store to skip)",
            highlight=False,
        )
    return store


def record(
    store: Store | None,
    runs: Sequence[Run],
    *,
    source: str,
    tags: dict[str, str],
    attacks: Sequence[dict[str, Any]] = (),
) -> None:
    """Store runs and attack results; one line saying how many were new."""
    if store is None:
        return
    try:
        new = sum(store.add_run(r, source=source, tags=tags) for r in runs)
        new += sum(store.add_attack(a, tags=tags) for a in attacks)
    finally:
        store.close()
    total = len(runs) + len(attacks)
    err_console.print(
        f"history: {new} new of {total} recorded in {escape(store.url)}", highlight=False
    )


def lock_folder(ctx: typer.Context, folder: Path | None) -> None:
    """Lock an output folder until the current command ends (nothing for ``None``).

    A second process on the same folder fails at once (exit 2); a lock left by a
    killed process is taken over, and said so.
    """
    if folder is None:
        return
    from shieldbench.locking import FolderLock

    lock = FolderLock(folder).acquire()
    ctx.call_on_close(lock.release)
    if lock.stale:
        holder = lock.stale
        err_console.print(
            f"{escape(str(folder))}: took over the lock left by a run that is no longer"
            f" running (pid {holder.get('pid')} on {holder.get('host')} since"
            f" {holder.get('since')})",
            highlight=False,
        )
