"""The base every composite defense shares: children, derived name, capabilities.

A composite (``any(...)``, ``tiered(...)``, ``fail_closed(...)``, ...) holds child
defenses and combines their verdicts. So that the engine stays fast, a composite
offers the optional capabilities its children make worthwhile, decided once when it
is built:

- ``acheck`` when at least one child is async (``acheck``): network latency dominates,
  so the engine should run many texts concurrently on one event loop. Children
  without ``acheck`` are then called with ``asyncio.to_thread(child.check, text)`` so
  they never block the loop.
- otherwise ``check_batch`` when at least one child batches (``check_batch``): the
  batching children get whole batches, the others are called text by text.
- otherwise only ``check`` (the engine then uses its thread pool).

The capabilities are instance attributes set in ``__init__`` (``hasattr`` and the
runtime-checkable protocols see exactly what is offered). ``name`` and ``version``
are derived from the children; ``close()`` closes every child, and ``uncached()``
bypasses every child's caches (see :func:`shieldbench.defenses.uncached`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from shieldbench.defenses._build import build_defense
from shieldbench.defenses._closing import close_every
from shieldbench.defenses._protocol import Defense, defense_version, uncached
from shieldbench.errors import DefenseError, SpecError
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = [
    "Composite",
    "build_children",
    "build_with",
    "call_async",
    "call_batch",
    "checked",
    "close_all",
    "effective_score",
    "float_opt",
    "gather_children",
    "int_opt",
    "merge_details",
    "named",
]

T = TypeVar("T")
C = TypeVar("C", bound="Composite")


def effective_score(verdict: Verdict) -> float:
    """The verdict's score, or ``1.0`` / ``0.0`` from ``blocked`` when it has none.

    Composites need a number from every child; a scoreless defense is taken at its
    word (certain either way).

    >>> effective_score(Verdict(blocked=True)), effective_score(Verdict(False, score=0.3))
    (1.0, 0.3)
    """
    if verdict.score is not None:
        return verdict.score
    return 1.0 if verdict.blocked else 0.0


def merge_details(verdict: Verdict, **extra: Any) -> Verdict:
    """A copy of ``verdict`` whose ``details`` also hold ``extra`` (extra wins)."""
    return Verdict(
        blocked=verdict.blocked,
        score=verdict.score,
        label=verdict.label,
        reasons=verdict.reasons,
        details={**verdict.details, **extra},
    )


def checked(verdict: object, child: Defense) -> Verdict:
    """``verdict`` if it is a :class:`Verdict`; a :class:`DefenseError` naming ``child`` if not."""
    if not isinstance(verdict, Verdict):
        raise DefenseError(
            f"defense {child.name!r} returned a {type(verdict).__name__}, not a Verdict"
        )
    return verdict


async def call_async(child: Defense, text: str) -> Verdict:
    """``await child.acheck(text)`` when it has one, else ``child.check`` in a worker thread."""
    acheck: Callable[[str], Awaitable[Verdict]] | None = getattr(child, "acheck", None)
    if acheck is not None:
        return checked(await acheck(text), child)
    return checked(await asyncio.to_thread(child.check, text), child)


async def gather_children(children: Sequence[Defense], text: str) -> list[Verdict]:
    """Every child's verdict on ``text``, awaited concurrently.

    The first child runs in the calling task, the others as tasks (cheaper than
    ``asyncio.gather``, which wraps every coroutine in a task); when one fails, the
    others are cancelled and awaited before the error propagates. A failure in a
    later child is noticed once the first child has answered (errors are rare; the
    happy path stays cheap).
    """
    tasks = [asyncio.ensure_future(call_async(c, text)) for c in children[1:]]
    try:
        first = await call_async(children[0], text)
        return [first, *[await t for t in tasks]]
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def call_batch(child: Defense, texts: Sequence[str]) -> list[Verdict]:
    """``child.check_batch(texts)`` when it has one, else ``check`` text by text."""
    check_batch: Callable[[Sequence[str]], list[Verdict]] | None = getattr(
        child, "check_batch", None
    )
    if check_batch is None:
        return [checked(child.check(t), child) for t in texts]
    verdicts = list(check_batch(texts))
    if len(verdicts) != len(texts):
        raise DefenseError(
            f"defense {child.name!r} returned {len(verdicts)} verdicts for {len(texts)} texts"
        )
    return [checked(v, child) for v in verdicts]


def float_opt(spec: Spec, key: str, default: float) -> float:
    """``spec``'s option ``key`` as a float, ``default`` when absent (typed, never ``None``)."""
    value = spec.float_option(key)
    return default if value is None else value


def int_opt(spec: Spec, key: str, default: int) -> int:
    """``spec``'s option ``key`` as an int, ``default`` when absent."""
    value = spec.int_option(key)
    return default if value is None else value


def build_children(spec: Spec, *, at_least: int = 1) -> list[Defense]:
    """Build the positional arguments of ``spec`` as defenses (nested spec strings)."""
    if len(spec.args) < at_least:
        noun = "defense" if at_least == 1 else "defenses"
        raise SpecError(
            f"{spec.text!r}: {spec.name!r} needs at least {at_least} child {noun},"
            f" e.g. '{spec.name}(pattern{', semantic' if at_least > 1 else ''})'"
        )
    children: list[Defense] = []
    try:
        for arg in spec.args:
            children.append(build_defense(arg))
    except BaseException:
        close_all(children)
        raise
    return children


def named(defense: C, spec: Spec) -> C:
    """``defense`` renamed after the spec that built it.

    A derived name shows only the children's names, which hide their options
    (``pattern(threshold=0.9)`` is named ``pattern``); the spec text says it all.
    """
    defense.name = spec.text or defense.name
    return defense


def build_with(children: Sequence[Defense], make: Callable[[], T]) -> T:
    """``make()``, closing the already built ``children`` if it raises (bad options)."""
    try:
        return make()
    except BaseException:
        close_all(children)
        raise


def close_all(children: Iterable[object]) -> None:
    """Call ``close()`` on every child that has one (:func:`~shieldbench.defenses.close_every`)."""
    close_every(children)


class Composite:
    """Base class: children, derived ``name`` / ``version``, capability wiring, ``close``.

    Subclasses implement ``check`` and the private ``_check_batch`` / ``_acheck``;
    ``__init__`` exposes the latter two as ``check_batch`` / ``acheck`` only when the
    children make them worthwhile (see the module docstring).
    """

    name: str
    version: str | None
    check: Callable[[str], Verdict]  # each subclass defines it as a method
    check_batch: Callable[[Sequence[str]], list[Verdict]]
    acheck: Callable[[str], Awaitable[Verdict]]

    def __init__(self, kind: str, children: Sequence[Defense], *, options: str = "") -> None:
        if not children:
            raise SpecError(f"{kind} needs at least one child defense")
        self._children: tuple[Defense, ...] = tuple(children)
        inner = ", ".join(c.name for c in self._children)
        self.name = f"{kind}({inner}{', ' + options if options else ''})"
        versions = [(c.name, defense_version(c)) for c in self._children]
        known = [f"{n}={v}" for n, v in versions if v is not None]
        self.version = ", ".join(known) if known else None
        if any(hasattr(c, "acheck") for c in self._children):
            self.acheck = self._acheck
        elif any(hasattr(c, "check_batch") for c in self._children):
            self.check_batch = self._check_batch

    @property
    def children(self) -> tuple[Defense, ...]:
        """The child defenses, in spec order."""
        return self._children

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        return [self.check(t) for t in texts]

    async def _acheck(self, text: str) -> Verdict:
        return await asyncio.to_thread(self.check, text)

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """Every child's caches bypassed while inside (:func:`shieldbench.defenses.uncached`)."""
        with contextlib.ExitStack() as stack:
            for child in self._children:
                stack.enter_context(uncached(child))
            yield

    def close(self) -> None:
        """Close every child (the first failure is re-raised after all were tried)."""
        close_all(self._children)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
