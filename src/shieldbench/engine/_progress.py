"""Progress reporting: the hook the CLI plugs a progress bar into, and its throttle."""

from __future__ import annotations

from time import perf_counter
from typing import Protocol

__all__ = ["REPORT_INTERVAL_S", "ProgressHook", "Reporter"]

REPORT_INTERVAL_S = 0.1
"""The hook is called at most this often (plus once at the start and once at the end)."""


class ProgressHook(Protocol):
    """Told how far a run has got: ``hook(done, total)``.

    ``done`` counts finished outcomes (including those restored from a checkpoint
    when resuming), ``total`` the outcomes the call will produce. The engine calls
    the hook once before the first call to the defense, then as outcomes complete
    but at most every :data:`REPORT_INTERVAL_S` seconds (so a slow progress bar
    cannot slow a fast defense down), and once with ``done == total`` at the end.
    ``done`` never decreases. The hook may be called from an engine thread rather
    than the caller's; it must be quick and must not raise. The engine itself
    never prints.

    Example:
        >>> from shieldbench.engine import screen
        >>> from shieldbench.types import RunConfig, Verdict
        >>> class Allow:
        ...     name = "allow"
        ...     def check(self, text: str) -> Verdict:
        ...         return Verdict(blocked=False)
        >>> seen = []
        >>> _ = screen(Allow(), ["a", "b", "c"], progress=lambda d, t: seen.append((d, t)))
        >>> seen[0], seen[-1]
        ((0, 3), (3, 3))
    """

    def __call__(self, done: int, total: int) -> None: ...


class Reporter:
    """Throttles a :class:`ProgressHook`. ``base`` counts outcomes of earlier passes."""

    __slots__ = ("base", "hook", "next_at", "total")

    def __init__(self, hook: ProgressHook, base: int, total: int) -> None:
        self.hook = hook
        self.base = base
        self.total = total
        self.next_at = 0.0

    def update(self, done: int, now: float) -> None:
        """Report ``base + done`` if the last report is older than the interval."""
        if now >= self.next_at:
            self.hook(self.base + done, self.total)
            self.next_at = now + REPORT_INTERVAL_S

    def force(self, done: int) -> None:
        self.hook(self.base + done, self.total)
        self.next_at = perf_counter() + REPORT_INTERVAL_S
