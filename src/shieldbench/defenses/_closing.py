"""Close every defense (or target, judge, model) even when one ``close()`` raises.

A run builds several defenses and must release all of them (HTTP clients, model
sessions, worker processes) however it ends. Writing ``for d in defenses: d.close()``
leaks every defense after the first whose ``close()`` raises, and hides the body's own
error when a close fails in a ``finally``. Use instead::

    with closing(built) as defenses:      # built: a list you may still append to
        ...                               # every one is closed on the way out

or, in an existing ``finally:``, :func:`close_every`. Both call ``close()`` on each
object that has one, all of them, in order; then raise the first error, the others
recorded on it as notes (``exc.__notes__``). When the body itself raised, its error is
the one that propagates, with the close failures as notes.

Example:
    >>> class Leaky:
    ...     def __init__(self, name): self.name, self.closed = name, False
    ...     def close(self):
    ...         self.closed = True
    ...         if self.name != "ok": raise RuntimeError(f"{self.name} stuck")
    >>> parts = [Leaky("a"), Leaky("ok"), Leaky("b")]
    >>> try:
    ...     close_every(parts)
    ... except RuntimeError as exc:
    ...     print(exc, exc.__notes__)
    a stuck ['also failed to close: RuntimeError: b stuck']
    >>> [p.closed for p in parts]
    [True, True, True]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TypeVar

from shieldbench.defenses._guarded import error_text

__all__ = ["close_every", "closing"]

T = TypeVar("T", bound=Iterable[object])


def close_every(things: Iterable[object]) -> None:
    """``close()`` every one of ``things`` that has it; re-raise the first failure at the
    end with the later ones noted on it (see the module docstring)."""
    errors: list[Exception] = []
    for thing in list(things):
        close = getattr(thing, "close", None)
        if not callable(close):
            continue
        try:
            close()
        except Exception as exc:
            errors.append(exc)
    if errors:
        first = errors[0]
        for later in errors[1:]:
            first.add_note(f"also failed to close: {error_text(later)}")
        raise first


@contextlib.contextmanager
def closing(things: T) -> Iterator[T]:
    """``with closing(defenses):``: :func:`close_every` on the way out, however the block
    ends. ``things`` is read at exit, so a list filled inside the block is closed whole."""
    try:
        yield things
    except BaseException as exc:
        try:
            close_every(things)
        except Exception as failed:
            exc.add_note(f"while closing after this error: {error_text(failed)}")
            for note in getattr(failed, "__notes__", ()):
                exc.add_note(note)
        raise
    close_every(things)
