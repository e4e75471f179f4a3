"""The defense contract: one required method, two optional capabilities.

A defense is any object with a ``name`` and ``check(text) -> Verdict``. The engine
discovers two optional capabilities by duck typing and uses the fastest one:

- ``check_batch(texts) -> list[Verdict]`` for models that score many texts at once;
- ``async acheck(text) -> Verdict`` for network-bound defenses (HTTP APIs, LLMs).

A defense may also expose ``version: str`` (reported with the run), ``close()``
(the engine never calls it: whoever built the defense owns it and closes it, so one
defense can be reused over several runs), and ``event_loop_safe = True``: its ``check``
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

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shieldbench.types import Verdict

__all__ = ["AsyncDefense", "BatchDefense", "Defense", "defense_version"]


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
