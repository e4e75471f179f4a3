"""Dual mode's warn queue, in process: batching, overflow, errors, shutdown flush.

Real threads and real (small) defenses; the queue's callback runs on a real event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence

from shieldbench.service._warnq import WarnOutcome, WarnQueue
from shieldbench.types import Verdict


class Batched:
    """Flags texts containing ``bad``; records the size of every batch it is given."""

    name = "batched"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.sizes: list[int] = []
        self.lock = threading.Lock()

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        with self.lock:
            self.sizes.append(len(texts))
        time.sleep(self.delay)
        return [Verdict(blocked="bad" in t, score=float("bad" in t)) for t in texts]


class Single:
    """One text at a time: raises on RAISE, sleeps ``hang`` s on HANG, flags ``bad``."""

    name = "single"

    def __init__(self, hang: float = 2.0) -> None:
        self.hang = hang
        self.calls = 0

    def check(self, text: str) -> Verdict:
        self.calls += 1
        if "RAISE" in text:
            raise RuntimeError("injected fault")
        if "HANG" in text:
            time.sleep(self.hang)
        return Verdict(blocked="bad" in text, score=0.0)


Results = Callable[[list[WarnOutcome]], None]


def _run(
    queue_of: Callable[[Results], WarnQueue], body: Callable[[WarnQueue], Awaitable[None]]
) -> list[WarnOutcome]:
    """Build a queue on a running loop, let ``body`` offer texts, close, return outcomes."""
    got: list[WarnOutcome] = []
    calls: list[int] = []

    def on_results(outcomes: list[WarnOutcome]) -> None:
        calls.append(len(outcomes))
        got.extend(outcomes)

    async def main() -> None:
        queue = queue_of(on_results)
        await body(queue)
        left = await asyncio.to_thread(queue.close, 10.0)
        assert left == []

    asyncio.run(main())
    return got


def test_texts_are_checked_in_batches_and_every_verdict_comes_back() -> None:
    defense = Batched()

    def build(on_results: Results) -> WarnQueue:
        return WarnQueue(
            defense, on_results=on_results, timeout_s=5.0, max_pending=1000, batch_size=16
        )

    async def body(queue: WarnQueue) -> None:
        for i in range(100):  # queued before the workers start: they find a backlog
            assert queue.offer(f"d{i}", f"text {i} {'bad' if i % 10 == 0 else 'fine'}")
        await queue.start()

    got = _run(build, body)
    assert sorted(o.decision_id for o in got) == sorted(f"d{i}" for i in range(100))
    flagged = {o.decision_id for o in got if o.verdict is not None and o.verdict.blocked}
    assert flagged == {f"d{i}" for i in range(0, 100, 10)}
    batches = defense.sizes[1:]  # the first call is the warm-up
    assert sum(batches) == 100
    assert max(batches) == 16
    assert len(batches) <= 10


def test_identical_texts_in_a_batch_are_checked_once() -> None:
    defense = Single()

    def build(on_results: Results) -> WarnQueue:
        return WarnQueue(defense, on_results=on_results, timeout_s=5.0, max_pending=100)

    async def body(queue: WarnQueue) -> None:
        for i in range(20):
            queue.offer(f"d{i}", "the same text")
        await queue.start()

    got = _run(build, body)
    assert len(got) == 20
    assert all(o.error is None for o in got)
    assert defense.calls == 1 + 1  # the warm-up, then the one distinct text


def test_a_full_queue_refuses_rather_than_blocks() -> None:
    queue = WarnQueue(Single(), on_results=lambda _: None, timeout_s=1.0, max_pending=5)
    accepted = [queue.offer(f"d{i}", f"text {i}") for i in range(8)]
    assert accepted == [True] * 5 + [False] * 3
    assert queue.full()
    assert len(queue) == 5
    assert len(queue.close(0.0)) == 5  # never started: all five left for the caller


def test_errors_and_timeouts_are_outcomes_not_losses() -> None:
    defense = Single(hang=2.0)

    def build(on_results: Results) -> WarnQueue:
        return WarnQueue(defense, on_results=on_results, timeout_s=0.3, max_pending=100)

    async def body(queue: WarnQueue) -> None:
        await queue.start()
        for i, text in enumerate(["ok", "RAISE me", "HANG on", "bad one"]):
            queue.offer(f"d{i}", text)

    got = {o.decision_id: o for o in _run(build, body)}
    assert got["d0"].verdict is not None
    assert not got["d0"].verdict.blocked
    assert got["d1"].verdict is None
    assert got["d1"].error == "error: RuntimeError: injected fault"
    assert got["d2"].verdict is None
    assert got["d2"].error == "timeout: no answer within 0.3 s"
    assert got["d3"].verdict is not None
    assert got["d3"].verdict.blocked


def test_close_flushes_pending_checks_and_returns_what_the_deadline_left() -> None:
    defense = Batched(delay=0.2)
    got: list[WarnOutcome] = []

    async def main() -> list[tuple[str, str]]:
        queue = WarnQueue(
            defense,
            on_results=got.extend,
            timeout_s=5.0,
            max_pending=1000,
            workers=1,
            batch_size=4,
        )
        await queue.start()
        for i in range(40):  # ten batches of 0.2 s on one worker: 2 s
            queue.offer(f"d{i}", f"text {i}")
        left = await asyncio.to_thread(queue.close, 0.5)
        assert not queue.offer("late", "after close")  # closed: refused, never queued
        return left

    left = asyncio.run(main())
    ids = {o.decision_id for o in got} | {d for d, _ in left}
    assert ids == {f"d{i}" for i in range(40)}  # each one checked or handed back
    assert len(got) + len(left) == 40  # and only once
    assert got
    assert left


class Remote:
    """An async defense (an API behind ``acheck``): flags ``bad``, hangs on HANG."""

    name = "remote"

    def __init__(self) -> None:
        self.loops: set[int] = set()

    def check(self, text: str) -> Verdict:
        raise AssertionError("an async defense is awaited, not called on a thread")

    async def acheck(self, text: str) -> Verdict:
        self.loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(5.0 if "HANG" in text else 0.01)
        return Verdict(blocked="bad" in text, score=0.0)


def test_an_async_defense_is_gathered_on_the_service_loop_with_its_timeout() -> None:
    defense = Remote()

    def build(on_results: Results) -> WarnQueue:
        return WarnQueue(defense, on_results=on_results, timeout_s=0.3, max_pending=100)

    async def body(queue: WarnQueue) -> None:
        await queue.start()
        for i, text in enumerate(["fine", "bad news", "HANG up"]):
            queue.offer(f"d{i}", text)

    got = {o.decision_id: o for o in _run(build, body)}
    assert [got[d].verdict.blocked if got[d].verdict else None for d in sorted(got)] == [
        False,
        True,
        None,
    ]
    assert got["d2"].error == "timeout: no answer within 0.3 s"
    assert len(defense.loops) == 1  # one loop: the service's (client sessions live there)
