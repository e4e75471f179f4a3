"""The defense contract: one required method, two optional capabilities.

A defense is any object with a ``name`` and ``check(text) -> Verdict``. The engine
discovers two optional capabilities by duck typing and uses the fastest one:

- ``check_batch(texts) -> list[Verdict]`` for models that score many texts at once;
- ``async acheck(text) -> Verdict`` for network-bound defenses (HTTP APIs, LLMs).

A defense may also expose ``version: str`` (reported with the run), ``close()``
(the engine never calls it: whoever built the defense owns it and closes it, so one
defense can be reused over several runs), ``uncached()`` (a context manager inside which
every cache the defense holds is neither read nor written: see :func:`uncached`), and
``event_loop_safe = True``: its ``check``
only computes (no I/O, no lock, no sleep) in time linear in the text, well under a
millisecond per kilobyte, so a caller on an event loop may run it there instead of
paying a hop to a worker thread (the guard service does; see its ``Screen``).

Example:
    >>> from shieldbench.types import Verdict
    >>> class Keyword:
    ...     name = "keyword"
    ...     def check(self, text: str) -> Verdict:
    ...         hit = "ignore previous" in text.lower()
    ...         return Verdict(blocked=hit, score=float(hit))
    >>> isinstance(Keyword(), Defense)
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shieldbench.types import Verdict

__all__ = ["AsyncDefense", "BatchDefense", "Defense", "defense_version", "uncached"]


@runtime_checkable
class Defense(Protocol):
    """Screens one text: ``blocked`` when it should not reach the model."""

    name: str

    def check(self, text: str) -> Verdict: ...


@runtime_checkable
class BatchDefense(Defense, Protocol):
    """A defense that can score a batch at once (ML models)."""

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]: ...


@runtime_checkable
class AsyncDefense(Defense, Protocol):
    """A defense whose natural interface is async (HTTP APIs, LLM endpoints)."""

    async def acheck(self, text: str) -> Verdict: ...


def defense_version(defense: object) -> str | None:
    """The ``version`` a defense declares, if any, as a string."""
    version = getattr(defense, "version", None)
    return None if version is None else str(version)


def uncached(defense: object) -> contextlib.AbstractContextManager[object]:
    """A context inside which ``defense`` neither reads nor writes any cache it holds.

    The engine times calls inside it, so a latency never includes work done for an
    earlier call of the same text (an embedding cache, a verdict cache): what it
    measures is what a caller waits for a text the defense has not seen. A defense
    (or a cache it holds) that caches declares it with an ``uncached()`` method
    returning such a context; composites enter their children's. Nesting is fine
    (the caches count how many contexts are open) and the caches work again, with
    what they held before, once the last one exits. A defense without the method
    gets a context that does nothing: a third-party cache it does not declare is
    not bypassed (the engine also never warms up on the texts it measures).

    >>> class Plain:
    ...     name = "plain"
    >>> with uncached(Plain()):
    ...     pass
    """
    method = getattr(defense, "uncached", None)
    if callable(method):
        context = method()
        if isinstance(context, contextlib.AbstractContextManager):
            return context
    return contextlib.nullcontext()
