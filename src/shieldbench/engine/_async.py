"""Async defenses: ``acheck`` on one event loop with bounded concurrency.

``concurrency`` worker coroutines pull positions from one shared iterator (no
task, semaphore or future per sample). Each call runs under
:func:`asyncio.timeout`, so a slow call is cancelled and recorded as a
``timeout``; transient errors are retried with ``await asyncio.sleep`` back-off.

The loop is new for every engine call (:func:`asyncio.run`). When the caller's
thread already runs an event loop (a notebook, an async web handler), the engine
runs its loop in a worker thread and blocks the caller until it ends: the
engine's API is synchronous. An async defense that keeps loop-bound resources
(an ``httpx.AsyncClient`` and its pooled connections) across engine calls must
therefore create them per running loop. A coroutine that blocks the loop (calls
``time.sleep``) cannot be timed out: use the sync ``check`` for blocking code.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from time import perf_counter
from typing import Any

from shieldbench.engine._calls import backoff_s, error_outcome, ok_or_wrong_type, timeout_outcome
from shieldbench.engine._progress import Reporter
from shieldbench.engine._threads import Sink
from shieldbench.errors import TransientDefenseError
from shieldbench.types import Outcome, RunConfig

__all__ = ["run_async"]

ACheck = Callable[[str], Awaitable[object]]


async def _acall(acheck: ACheck, text: str, sample_id: str, config: RunConfig) -> Outcome:
    timeout = config.timeout_s
    attempt = 1
    while True:
        t0 = perf_counter()
        scope = None if timeout is None else asyncio.timeout(timeout)
        try:
            if scope is None:
                value = await acheck(text)
            else:
                async with scope:
                    value = await acheck(text)
        except Exception as exc:
            latency_ms = (perf_counter() - t0) * 1000.0
            if scope is not None and scope.expired():
                assert timeout is not None
                return timeout_outcome(sample_id, timeout, latency_ms, attempt, what="acheck")
            if isinstance(exc, TransientDefenseError) and attempt <= config.retries:
                await asyncio.sleep(backoff_s(exc, attempt, config))
                attempt += 1
                continue
            return error_outcome(sample_id, exc, latency_ms, attempt)
        return ok_or_wrong_type(sample_id, value, (perf_counter() - t0) * 1000.0, attempt)


async def _amain(
    acheck: ACheck,
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    config: RunConfig,
    results: list[Outcome | None],
    sink: Sink | None,
    reporter: Reporter | None,
) -> None:
    pending = iter(positions)
    done = 0

    async def worker() -> None:
        nonlocal done
        for i in pending:
            outcome = await _acall(acheck, texts[i], ids[i], config)
            results[i] = outcome
            done += 1
            if sink is not None:
                sink.add(outcome)
            if reporter is not None:
                reporter.update(done, perf_counter())

    workers = min(config.concurrency, len(positions))
    await asyncio.gather(*(worker() for _ in range(workers)))


def run_async(
    acheck: ACheck,
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    *,
    config: RunConfig,
    results: list[Outcome | None],
    sink: Sink | None,
    reporter: Reporter | None,
) -> None:
    """Fill ``results[i]`` for every ``i`` in ``positions`` by awaiting ``acheck``."""
    if not positions:
        return
    main = _amain(acheck, texts, ids, positions, config, results, sink, reporter)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main)
        return
    _run_in_thread(main)


def _run_in_thread(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on a fresh loop in a daemon thread; this thread waits for it."""
    box: dict[str, Any] = {}
    started = threading.Event()

    async def wrapper() -> None:
        box["loop"] = asyncio.get_running_loop()
        box["task"] = asyncio.current_task()
        started.set()
        await main

    def target() -> None:
        try:
            asyncio.run(wrapper())
        except BaseException as exc:
            box["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=target, name="shieldbench-engine-loop", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:  # KeyboardInterrupt: stop the loop's calls, then re-raise
        started.wait()
        loop, task = box.get("loop"), box.get("task")
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
            thread.join(timeout=5.0)
        raise
    error = box.get("error")
    if error is not None:
        raise error
