"""Timeouts on the ``acheck`` path: one watchdog per pass instead of a timer per call.

Each test here fails if the watchdog misses a deadline, cancels the wrong call,
leaves a task marked as cancelled, or trusts a defense that ignores cancellation.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from shieldbench.engine import screen
from shieldbench.types import RunConfig, Verdict

ALLOW = Verdict(blocked=False, score=0.0)
BLOCK = Verdict(blocked=True, score=1.0)


class Scripted:
    """``acheck`` behaves according to the text: ``"sleep:S"`` sleeps S seconds."""

    name = "scripted"

    def check(self, text: str) -> Verdict:
        raise AssertionError("acheck must be used")

    async def acheck(self, text: str) -> Verdict:
        kind, _, arg = text.partition(":")
        if kind == "sleep":
            await asyncio.sleep(float(arg))
        elif kind == "swallow":  # ignores the cancellation and answers anyway
            try:
                await asyncio.sleep(float(arg))
            except asyncio.CancelledError:
                return BLOCK
        elif kind == "convert":  # turns the cancellation into an ordinary error
            try:
                await asyncio.sleep(float(arg))
            except asyncio.CancelledError:
                raise RuntimeError("interrupted") from None
        elif kind == "inner":  # its own, shorter timeout must still work after ours fired
            task = asyncio.current_task()
            assert task is not None
            if task.cancelling():  # TaskGroup, asyncio.timeout rely on this count
                raise RuntimeError(f"the task still counts {task.cancelling()} cancellations")
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(5)
            except TimeoutError:
                return BLOCK
        return ALLOW


def config(timeout_s: float, concurrency: int = 1) -> RunConfig:
    return RunConfig(warmup=0, timeout_s=timeout_s, concurrency=concurrency, retries=0)


@pytest.mark.parametrize("kind", ["swallow", "convert"])
def test_a_defense_that_mishandles_cancellation_still_times_out(kind: str) -> None:
    out = screen(Scripted(), ["sleep:0", f"{kind}:5", "sleep:0"], config=config(0.1))
    assert [o.status for o in out] == ["ok", "timeout", "ok"]
    error = out[1].error or ""
    if kind == "swallow":  # it answered, late: the message says so
        assert error.startswith("acheck of this one text answered after ")
        assert error.endswith(" s, past the 0.1 s per-text time limit")
    else:  # it turned the cancellation into an error: no verdict
        assert (
            error
            == "acheck of this one text returned no verdict within the 0.1 s per-text time limit"
        )


def test_a_worker_carries_on_after_its_call_timed_out() -> None:
    texts = ["sleep:5", "inner", "sleep:5", "sleep:0", "inner"]
    start = time.perf_counter()
    out = screen(Scripted(), texts, config=config(0.1))
    assert time.perf_counter() - start < 2.0
    assert [o.status for o in out] == ["timeout", "ok", "timeout", "ok", "ok"]
    # the defense's own asyncio.timeout still turns into TimeoutError: the task's
    # cancellation count was restored after each of the engine's cancellations
    assert [o.verdict.blocked for o in out if o.verdict] == [True, False, True]


def test_a_call_that_starts_while_the_watchdog_sleeps_is_cut_at_its_own_deadline() -> None:
    # The watchdog first sleeps until the deadline of "sleep:0.15"; "sleep:5" starts
    # at ~0.15 s, so its deadline (~0.35 s) is later than that wake-up.
    out = screen(Scripted(), ["sleep:0.15", "sleep:5"], config=config(0.2))
    assert [o.status for o in out] == ["ok", "timeout"]
    latency = out[1].latency_ms
    assert latency is not None
    assert 200.0 <= latency < 350.0, latency


def test_concurrent_calls_each_get_their_own_deadline() -> None:
    texts = [f"sleep:{s}" for s in (0.05, 5, 0.05, 0.3, 5, 0.05)]
    out = screen(Scripted(), texts, config=config(0.2, concurrency=3))
    assert [o.status for o in out] == ["ok", "timeout", "ok", "timeout", "timeout", "ok"]
    for o in out:
        assert o.latency_ms is not None
        if o.status == "timeout":
            assert 200.0 <= o.latency_ms < 350.0, o


def test_no_timeout_means_no_watchdog_and_no_limit() -> None:
    out = screen(Scripted(), ["sleep:0.3"], config=RunConfig(warmup=0, timeout_s=None))
    assert out[0].status == "ok"
    assert out[0].latency_ms is not None
    assert out[0].latency_ms >= 300.0
