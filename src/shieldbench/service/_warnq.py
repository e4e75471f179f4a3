"""Dual mode's warn-only checks: the request path appends, background workers batch.

The warn-only defense must never add latency to an answer, and in a cheap inline
check even a thread hop per request (a future, its completion callback on the event
loop, a task) is as costly as the check itself. So :meth:`WarnQueue.offer` only
appends ``(decision id, text)`` to a bounded deque: no lock, no wake-up, no future.
A few worker threads poll the deque (every ``poll_s`` while it is empty, at once
while it is not) and take up to ``batch_size`` texts at a time:

- a defense with ``check_batch`` gets the whole batch in one call;
- a sync defense gets one ``check`` per text, fanned out over a shared thread pool
  (a defense that sleeps on a model or a socket does not hold the CPU meanwhile);
- an async defense (``acheck``) gets the batch gathered on the service's event loop
  in one hand-over (its client sessions live there).

Every call has the ``timeout_s`` of the warn defense; identical texts in a batch, or
within ``window_s`` of a verdict, are checked once. An error or a timeout is an
outcome (``error`` set), never lost. The outcomes of a batch go back to the event
loop in one callback (``on_results``), which counts and records them in bulk.

When ``max_pending`` texts are waiting, :meth:`offer` refuses (the caller records the
decision's warn state as ``dropped`` and counts it) rather than block or queue without
bound. :meth:`close` lets the workers empty the queue (graceful shutdown) and returns
what was still queued at its deadline, so the caller can record it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from shieldbench.defenses import Defense, TtlCache, defense_version, text_hash
from shieldbench.types import Verdict

__all__ = ["WarnOutcome", "WarnQueue"]

_log = logging.getLogger("shieldbench.service")
_THREADS = 64  # concurrent per-text checks of a sync defense without check_batch
_Result = tuple[Verdict | None, str | None, float, bool]  # verdict, error, ms, cached


@dataclass(frozen=True, slots=True)
class WarnOutcome:
    """The warn-only verdict on one decision's text (or the error that replaced it)."""

    decision_id: str
    verdict: Verdict | None
    error: str | None
    defense_ms: float
    cached: bool = False


def _error(exc: BaseException) -> str:
    return f"error: {type(exc).__name__}: {exc}"


def _timed_check(check: Callable[[str], Any], text: str) -> tuple[Any, float]:
    start = time.perf_counter()
    verdict = check(text)
    return verdict, (time.perf_counter() - start) * 1000


class WarnQueue:
    """A bounded queue of warn-only checks and the workers that batch them (module doc)."""

    def __init__(
        self,
        defense: Defense,
        *,
        on_results: Callable[[list[WarnOutcome]], None],
        timeout_s: float,
        max_pending: int,
        window_s: float = 5.0,
        workers: int = 4,
        batch_size: int = 64,
        poll_s: float = 0.02,
    ) -> None:
        self.defense = defense
        self.name = str(getattr(defense, "name", type(defense).__name__))
        self.version = defense_version(defense)
        self.timeout_s = timeout_s
        self.max_pending = max_pending
        self.window_s = window_s
        self.batch_size = batch_size
        self.poll_s = poll_s
        self.batches = 0  # batches run (what the tests read to see batching)
        self.checked = 0  # texts that reached the defense (after de-duplication)
        self._on_results = on_results
        self._queue: deque[tuple[str, str]] = deque()
        self._recent: TtlCache[Verdict] = TtlCache(window_s, 50_000)
        self._lock = threading.Lock()
        self._wake = threading.Event()  # set only to stop: offers never signal
        self._stopping = False
        self._abandoned = False
        self._running: dict[int, list[tuple[str, str]]] = {}  # per worker thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="shieldbench-warn")
        self._acheck: Callable[[str], Any] | None = getattr(defense, "acheck", None)
        self._check_batch: Callable[[Sequence[str]], Any] | None = getattr(
            defense, "check_batch", None
        )
        self._threads = [
            threading.Thread(target=self._work, name=f"shieldbench-warn-batch-{i}", daemon=True)
            for i in range(workers)
        ]

    def __len__(self) -> int:
        """Texts waiting (not counting the batches being checked)."""
        return len(self._queue)

    def full(self) -> bool:
        """Whether :meth:`offer` would refuse now."""
        return len(self._queue) >= self.max_pending or self._stopping

    def offer(self, decision_id: str, text: str) -> bool:
        """Queue a check of ``text`` for ``decision_id``; ``False`` when full (not queued)."""
        if self.full():
            return False
        self._queue.append((decision_id, text))
        return True

    async def start(self) -> None:
        """Check the warm-up text once (models load lazily), then start the workers."""
        self._loop = asyncio.get_running_loop()
        warm = await asyncio.to_thread(self._run, [("warm-up", "shieldbench warm-up: hello")])
        if warm[0].error is not None:
            _log.warning("warn-only defense %s failed its warm-up: %s", self.name, warm[0].error)
        self.batches = self.checked = 0  # the warm-up is not counted
        for thread in self._threads:
            thread.start()

    def close(self, timeout_s: float = 30.0) -> list[tuple[str, str]]:
        """Let the workers check what is queued, then stop them (blocking: call it off the
        event loop). Returns the ``(decision id, text)`` pairs not checked by the deadline
        (still queued, or in a batch still running, whose late verdicts are then ignored):
        each offered text is either in an ``on_results`` call or in this list, once."""
        self._stopping = True
        self._wake.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._abandoned = True
            left = [item for batch in self._running.values() for item in batch]
            self._running.clear()
            while self._queue:
                left.append(self._queue.popleft())
        self._pool.shutdown(wait=False, cancel_futures=True)
        return left

    def _take(self) -> list[tuple[str, str]] | None:
        queue = self._queue
        while True:
            with self._lock:  # offers append without it; takers and close() hold it
                if self._abandoned:
                    return None
                items: list[tuple[str, str]] = []
                while queue and len(items) < self.batch_size:
                    items.append(queue.popleft())
                if items:
                    self._running[threading.get_ident()] = items
                    return items
            if self._stopping:
                return None
            self._wake.wait(self.poll_s)

    def _work(self) -> None:
        while (batch := self._take()) is not None:
            try:
                outcomes = self._run(batch)
            except Exception as exc:  # never lose a batch: each text gets the error
                outcomes = [WarnOutcome(i, None, _error(exc), 0.0) for i, _ in batch]
            with self._lock:  # close() may have handed this batch back meanwhile
                if self._running.pop(threading.get_ident(), None) is None:
                    continue
                self._post(outcomes)

    def _post(self, outcomes: list[WarnOutcome]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._on_results, outcomes)
                return
            except RuntimeError:  # closed meanwhile
                pass
        self._on_results(outcomes)

    def _run(self, batch: list[tuple[str, str]]) -> list[WarnOutcome]:
        """Check a batch: cached verdicts, then each distinct text once."""
        self.batches += 1
        keys = [text_hash(text) for _, text in batch]
        known: dict[str, _Result] = {}
        todo: dict[str, str] = {}
        for key, (_, text) in zip(keys, batch, strict=True):
            entry = self._recent.get(key)
            if entry is not None:
                known[key] = (entry[0], None, 0.0, True)
            elif key not in known:
                todo[key] = text
        if todo:
            self.checked += len(todo)
            fresh = self._call(list(todo.values()))
            known.update(zip(todo, fresh, strict=True))
            for key, (verdict, _, _, _) in zip(todo, fresh, strict=True):
                if verdict is not None:
                    self._recent.put(key, verdict)
        return [
            WarnOutcome(decision_id, *known[key])
            for (decision_id, _), key in zip(batch, keys, strict=True)
        ]

    def _call(self, texts: list[str]) -> list[_Result]:
        timeout = f"timeout: no answer within {self.timeout_s:g} s"
        if self._acheck is not None:
            if self._loop is None:
                raise RuntimeError("the warn queue is not started")
            gathered = asyncio.run_coroutine_threadsafe(self._agather(texts), self._loop)
            return gathered.result()
        if self._check_batch is not None:
            future = self._pool.submit(_timed_check, self._check_batch, texts)  # type: ignore[arg-type]
            try:
                verdicts, ms = future.result(self.timeout_s)
            except TimeoutError:
                return [(None, timeout, self.timeout_s * 1000, False)] * len(texts)
            except Exception as exc:
                return [(None, _error(exc), 0.0, False)] * len(texts)
            if not isinstance(verdicts, list) or len(verdicts) != len(texts):
                error = f"error: check_batch returned {type(verdicts).__name__} for {len(texts)}"
                return [(None, error, ms, False)] * len(texts)
            return [self._outcome(v, ms / len(texts)) for v in verdicts]
        futures = [self._pool.submit(_timed_check, self.defense.check, t) for t in texts]
        wait(futures, self.timeout_s)
        return [self._settled(future, timeout) for future in futures]

    def _settled(self, future: Future[tuple[Any, float]], timeout: str) -> _Result:
        if not future.done():
            future.cancel()  # not started: frees the pool; running: abandoned
            return (None, timeout, self.timeout_s * 1000, False)
        exc = future.exception()
        if exc is not None:
            return (None, _error(exc), 0.0, False)
        verdict, ms = future.result()
        return self._outcome(verdict, ms)

    def _outcome(self, verdict: Any, ms: float) -> _Result:
        if not isinstance(verdict, Verdict):
            return (
                None,
                f"error: TypeError: {self.name} returned {type(verdict).__name__}",
                ms,
                False,
            )
        return (verdict, None, ms, False)

    async def _agather(self, texts: list[str]) -> list[_Result]:
        assert self._acheck is not None
        acheck = self._acheck

        async def one(text: str) -> _Result:
            start = time.perf_counter()
            try:
                verdict = await asyncio.wait_for(acheck(text), self.timeout_s)
            except TimeoutError:
                return (None, f"timeout: no answer within {self.timeout_s:g} s", 0.0, False)
            except Exception as exc:
                return (None, _error(exc), 0.0, False)
            return self._outcome(verdict, (time.perf_counter() - start) * 1000)

        return list(await asyncio.gather(*(one(t) for t in texts)))
