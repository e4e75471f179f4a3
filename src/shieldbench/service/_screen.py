"""One defense behind the service: timeout, fail-closed, and de-duplication in flight.

:class:`Screen` calls a defense the way a production guard must:

- async defenses (``acheck``) are awaited with a timeout and cancelled when late; sync
  ones run on a dedicated thread pool, and a call past the timeout is abandoned (its
  thread finishes on its own; the answer is already given);
- a sync defense that declares ``event_loop_safe = True`` (pure computation in linear
  time, such as ``pattern``: ~10 us a check) is called on the event loop itself: the
  hop to a worker thread and back costs more than the check (two wake-ups, ~0.1 ms on
  an idle machine, far more under load). It has no timeout to miss, since it cannot
  block; should its calls still take longer than ``inline_budget_s`` of CPU (three
  times within 100 calls), the screen stops calling it inline and goes back to the
  thread pool and its timeout (logged);
- an error or a timeout is a :class:`ScreenResult` with ``error`` set, never an
  exception: the caller decides fail-closed or fail-open;
- identical texts (by SHA-256) inside ``window_s`` are screened once, and a duplicate
  that arrives while the first is still in flight awaits the first's answer instead
  of calling the defense again. Errors are not cached.

The time limit, the verdict cache and the in-flight sharing are the one guarded-call
mechanism of :mod:`shieldbench.defenses` (:func:`~shieldbench.defenses.await_with_timeout`,
:class:`~shieldbench.defenses.TtlCache`, :class:`~shieldbench.defenses.AsyncSingleFlight`),
which the engine and the ``fail_closed`` / ``dedup`` wrappers use too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shieldbench.defenses import (
    AsyncSingleFlight,
    Defense,
    TtlCache,
    await_with_timeout,
    defense_version,
    text_hash,
)
from shieldbench.types import Verdict

__all__ = ["Screen", "ScreenResult", "text_hash"]

_log = logging.getLogger("shieldbench.service")


@dataclass(frozen=True, slots=True)
class ScreenResult:
    """A verdict (or the error that replaced it), and whether it came from the cache."""

    verdict: Verdict | None
    error: str | None
    dedup: str  # "hit" | "miss"
    defense_ms: float


class Screen:
    """A defense with a timeout and a de-duplication window (see the module docstring)."""

    def __init__(
        self,
        defense: Defense,
        *,
        timeout_s: float,
        window_s: float,
        executor: ThreadPoolExecutor,
        max_entries: int = 50_000,
        inline_budget_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.defense = defense
        self.name = str(getattr(defense, "name", type(defense).__name__))
        self.version = defense_version(defense)
        self.timeout_s = timeout_s
        self.window_s = window_s
        self._executor = executor
        self._recent: TtlCache[Verdict] = TtlCache(window_s, max_entries, clock=clock)
        self._inflight: AsyncSingleFlight[str] = AsyncSingleFlight()
        self.calls = 0
        self._acheck: Callable[[str], Any] | None = getattr(defense, "acheck", None)
        self.inline = self._acheck is None and getattr(defense, "event_loop_safe", False) is True
        self.inline_budget_s = inline_budget_s
        self._strikes: list[int] = []
        self._timed_until = -1  # calls CPU-timed up to this one (see _call_inline)

    def _call_inline(self, text: str) -> Verdict:
        # The budget is CPU time (what the loop loses, not a descheduled slice), but the
        # thread's CPU clock is a system call, two a check. A call's CPU time cannot be
        # longer than its wall time, so the cheap wall clock is enough until a call takes
        # longer than the budget; the next 100 calls are then CPU-timed and counted.
        timed = self.calls <= self._timed_until
        start = time.thread_time() if timed else time.perf_counter()
        try:
            return self.defense.check(text)
        finally:
            if timed:
                took = time.thread_time() - start
            else:
                took = 0.0
                if time.perf_counter() - start > self.inline_budget_s:
                    self._timed_until = self.calls + 100
            # One slow call proves nothing (a lazy first load, a full garbage collection
            # charged to whoever was running): three within 100 calls do.
            if took > self.inline_budget_s:
                self._strikes = [c for c in self._strikes if c > self.calls - 100]
                self._strikes.append(self.calls)
            if len(self._strikes) >= 3:
                self.inline = False
                _log.warning(
                    "%s took %.1f ms of CPU on the event loop (budget %.1f ms): calling it on"
                    " the thread pool from now on",
                    self.name,
                    took * 1000,
                    self.inline_budget_s * 1000,
                )

    async def _call(self, text: str) -> Verdict:
        self.calls += 1
        if self._acheck is not None:
            verdict = await await_with_timeout(self._acheck(text), self.timeout_s)
        else:
            loop = asyncio.get_running_loop()
            call = loop.run_in_executor(self._executor, self.defense.check, text)
            verdict = await await_with_timeout(call, self.timeout_s)
        return self._checked(verdict)

    def _checked(self, verdict: Any) -> Verdict:
        if not isinstance(verdict, Verdict):
            raise TypeError(f"{self.name} returned {type(verdict).__name__}, not a Verdict")
        return verdict

    def _screen_inline(self, text: str, key: str) -> ScreenResult:
        """An event-loop-safe defense, called right here: it never yields, so no duplicate
        can arrive meanwhile and nothing needs an in-flight future (nor a coroutine)."""
        start = time.perf_counter()
        self.calls += 1
        try:
            verdict = self._checked(self._call_inline(text))
        except Exception as exc:
            ms = (time.perf_counter() - start) * 1000
            return ScreenResult(None, f"error: {type(exc).__name__}: {exc}", "miss", ms)
        result = ScreenResult(verdict, None, "miss", (time.perf_counter() - start) * 1000)
        self._remember(key, verdict)
        return result

    def _remember(self, key: str, verdict: Verdict) -> None:
        self._recent.put(key, verdict)

    async def _screen_once(self, text: str) -> ScreenResult:
        start = time.perf_counter()
        try:
            verdict = await self._call(text)
        except TimeoutError:
            ms = (time.perf_counter() - start) * 1000
            return ScreenResult(None, f"timeout: no answer within {self.timeout_s:g} s", "miss", ms)
        except Exception as exc:
            ms = (time.perf_counter() - start) * 1000
            return ScreenResult(None, f"error: {type(exc).__name__}: {exc}", "miss", ms)
        return ScreenResult(verdict, None, "miss", (time.perf_counter() - start) * 1000)

    def _cached(self, key: str) -> Verdict | None:
        entry = self._recent.get(key)
        return None if entry is None else entry[0]

    def screen_now(self, text: str, *, key: str | None = None) -> ScreenResult | None:
        """:meth:`screen` without a coroutine, when nothing needs waiting for: a cached
        verdict, or a defense called inline; ``None`` otherwise (await :meth:`screen`)."""
        key = text_hash(text) if key is None else key
        cached = self._cached(key)
        if cached is not None:
            return ScreenResult(cached, None, "hit", 0.0)
        if self.inline and key not in self._inflight:
            return self._screen_inline(text, key)
        return None

    async def screen(self, text: str, *, key: str | None = None) -> ScreenResult:
        """The defense's verdict on ``text`` (cached, shared in flight, or fresh); ``key``
        is ``text_hash(text)`` when the caller has it already."""
        key = text_hash(text) if key is None else key
        now = self.screen_now(text, key=key)
        if now is not None:
            return now
        result, shared = await self._inflight.run(key, lambda: self._screen_fresh(text, key))
        if shared:
            return ScreenResult(result.verdict, result.error, "hit", result.defense_ms)
        return result

    async def _screen_fresh(self, text: str, key: str) -> ScreenResult:
        result = await self._screen_once(text)
        if result.verdict is not None:
            self._remember(key, result.verdict)
        return result
