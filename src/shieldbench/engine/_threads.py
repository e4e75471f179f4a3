"""Synchronous defenses: ``check`` inline or on worker threads, ``check_batch`` in batches.

Design, and why:

- **No per-sample hand-off.** Workers pull the next position themselves from one
  shared iterator (``next`` on a list or range iterator is atomic under the GIL),
  so a call costs no queue, future or lock. With ``concurrency=1`` and no
  timeout the loop runs inline in the caller's thread.
- **Exactly one outcome per position.** Worker and supervisor *claim* a position
  with ``dict.setdefault`` (atomic): whoever claims first wins, the other's
  outcome is dropped. Batches claim all their positions under a lock.
- **Timeouts without killing threads.** Python cannot stop a running thread. The
  caller's thread supervises: when a call outlives ``timeout_s`` it claims the
  position with a ``timeout`` outcome, abandons the worker and starts a
  replacement. The stuck call keeps its daemon thread until it returns, then
  loses its claim and exits; daemon threads never hold up the end of the run nor
  interpreter exit. If more abandoned calls are still running than
  :func:`stuck_limit`, the defense is hung and the run stops with
  :class:`~shieldbench.errors.RunError` (finished outcomes stay in the checkpoint).
- **One guarded-call mechanism.** Retries, back-off and error texts are those of
  :func:`shieldbench.defenses.retry_call` (through :func:`~shieldbench.engine._calls.retry_sync`),
  shared with the ``fail_closed`` / ``dedup`` wrappers and the service. The time limit
  is this supervisor rather than :func:`shieldbench.defenses.call_with_timeout`'s thread
  per call: a run makes millions of calls, and a thread each would cost more than most
  checks.
- **Checkpoint and progress from one thread.** Workers only append finished
  outcomes to a deque; the supervising thread hands them to the
  :class:`~shieldbench.engine._record.Recorder` (checkpoint, progress), so neither
  needs to be thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from math import inf
from time import perf_counter
from typing import Generic, TypeVar

from shieldbench.engine._calls import (
    FAILED,
    Slot,
    defense_failure,
    finish,
    ok_or_wrong_type,
    retry_sync,
    timeout_outcome,
)
from shieldbench.engine._latency import BatchTally
from shieldbench.engine._record import Recorder, Sink
from shieldbench.errors import RunError
from shieldbench.types import Outcome, RunConfig, Verdict

__all__ = ["Sink", "run_batches", "run_checks", "stuck_limit"]

_TICK_S = 0.1  # how often the supervisor wakes to report progress and write the checkpoint
_IDLE_TICK_S = 1.0  # ... and when it has neither: every wake costs the workers a GIL hand-off
U = TypeVar("U", int, tuple[int, ...])
_SPLIT = Outcome("", None, "timeout", "split: retried alone")  # a claim, never recorded


def stuck_limit(config: RunConfig) -> int:
    """How many abandoned calls may still be running before the run gives up."""
    return max(32, 4 * config.concurrency)


class _Job(Generic[U]):
    """State shared by the workers and the supervising thread.

    ``claimed`` maps position -> outcome (who claims a position first writes
    ``results[position]``); ``lock`` guards worker bookkeeping (``live``,
    ``slots``) and batch claims.
    """

    def __init__(
        self,
        units: Iterator[U],
        ids: Sequence[str],
        recorder: Recorder,
    ) -> None:
        self.lock = threading.Lock()
        self.units: Iterator[U] = units
        self.ids = ids
        self.results = recorder.results
        self.claimed: dict[int, Outcome] = {}
        self.out: deque[Outcome] | None = None if recorder.quiet else deque()
        self.live = 0
        self.slots: list[Slot] = []
        self.stuck: list[threading.Thread] = []
        self.finished = threading.Event()
        self.crash: BaseException | None = None
        self.split: list[int] = []  # positions of batches past their limit, to retry alone


def _run_worker(job: _Job[U], slot: Slot, body: Callable[[Slot], None]) -> None:
    try:
        body(slot)
    except BaseException as exc:  # a bug or SystemExit in a worker: re-raised by the supervisor
        job.crash = exc
    finally:
        with job.lock:
            if not slot.abandoned:
                job.live -= 1
                job.slots.remove(slot)
            if job.live == 0:
                job.finished.set()


def _spawn(job: _Job[U], body: Callable[[Slot], None]) -> None:
    """Start one worker (caller holds the lock)."""
    slot = Slot()
    job.slots.append(slot)
    job.live += 1
    thread = threading.Thread(
        target=_run_worker, args=(job, slot, body), name="shieldbench-engine", daemon=True
    )
    slot.thread = thread
    thread.start()


def _expired(job: _Job[U], slot: Slot, now: float, timeout: float, what: str) -> float:
    """Abandon ``slot`` if its call outlived its limit (caller holds the lock).

    The limit is per text: ``timeout`` for a call of one text, ``n * timeout`` for a
    batch of ``n``. A batch past its limit is not failed: its positions go to
    ``job.split``, to be screened again one text per call (each with its own
    limit), so only a text that hangs alone becomes a ``timeout``. Returns the
    seconds left before the call expires, or 0.0 when it was abandoned now.
    """
    # Workers write started, then unit; reading unit first means started is the
    # start of that call or of a later one. A later one only happens after the
    # worker claimed unit, and then the claim below fails: no harm either way.
    unit = slot.unit
    started = slot.started
    if not started or unit is None:
        return inf
    positions = unit if isinstance(unit, tuple) else (unit,)
    left = started + timeout * len(positions) - now
    if left > 0:
        return left
    if len(positions) > 1:
        if any(i in job.claimed for i in positions):
            return inf  # the batch returned just now and its worker claimed it
        for i in positions:
            job.claimed[i] = _SPLIT
        job.split.extend(positions)
    else:
        latency_ms = (now - started) * 1000.0
        outcome = timeout_outcome(
            job.ids[positions[0]], timeout, latency_ms, slot.attempts, what=what
        )
        if job.claimed.setdefault(positions[0], outcome) is not outcome:
            return inf  # the call returned just now and its worker claimed the position
        job.results[positions[0]] = outcome
        if job.out is not None:
            job.out.append(outcome)
    slot.abandoned = True
    job.slots.remove(slot)
    job.live -= 1
    if slot.thread is not None:
        job.stuck.append(slot.thread)
    return 0.0


def _supervise(
    job: _Job[U],
    body: Callable[[Slot], None],
    workers: int,
    *,
    config: RunConfig,
    recorder: Recorder,
    what: str,
) -> None:
    timeout = config.timeout_s
    tick = _IDLE_TICK_S if recorder.quiet else _TICK_S
    if timeout is not None:  # a call starting just after a wake is caught by 1.5 x timeout
        tick = min(tick, timeout / 2)
    try:
        with job.lock:
            for _ in range(workers):
                _spawn(job, body)
        while True:
            wait = tick
            now = perf_counter()
            if timeout is not None:
                with job.lock:
                    for slot in list(job.slots):
                        left = _expired(job, slot, now, timeout, what)
                        if left > 0:
                            wait = min(wait, left)
                            continue
                        job.stuck = [t for t in job.stuck if t.is_alive()]
                        if len(job.stuck) > stuck_limit(config):
                            raise RunError(
                                f"{len(job.stuck)} calls are still running past the"
                                f" {timeout:g} s timeout: the defense appears to hang."
                                " Fix or restart it, then resume from the checkpoint."
                            )
                        _spawn(job, body)
            _drain(job, recorder, now)
            if job.finished.wait(max(wait, 0.001)):
                break
    except BaseException:
        with job.lock:
            for slot in job.slots:
                slot.abandoned = True
            job.slots.clear()
        _drain(job, recorder, perf_counter())
        raise
    _drain(job, recorder, perf_counter())
    if job.crash is not None:
        raise job.crash


def _drain(job: _Job[U], recorder: Recorder, now: float) -> None:
    out = job.out
    if out:
        finished = []
        while out:
            finished.append(out.popleft())
        recorder.logged(finished)
    recorder.tick(now)


def _inline(
    check: Callable[[str], Verdict],
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    config: RunConfig,
    recorder: Recorder,
) -> None:
    """``concurrency=1`` and no timeout: a plain loop in the caller's thread."""
    put = recorder.put
    for i in positions:
        t0 = perf_counter()
        try:
            value: object = check(texts[i])
        except (Exception, SystemExit) as caught:
            exc = defense_failure(caught)
            value, err, attempts, elapsed = retry_sync(
                check, texts[i], exc, perf_counter() - t0, config, None
            )
            outcome = finish(ids[i], value, err, attempts, elapsed, None)
            t1 = perf_counter()
        else:
            t1 = perf_counter()
            if isinstance(value, Verdict):
                outcome = Outcome(ids[i], value, "ok", None, (t1 - t0) * 1000.0, 1)
            else:
                outcome = ok_or_wrong_type(ids[i], value, (t1 - t0) * 1000.0, 1)
        put(i, outcome)
        if t1 >= recorder.report_at:
            recorder.tick(t1)


def run_checks(
    check: Callable[[str], Verdict],
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    *,
    config: RunConfig,
    recorder: Recorder,
) -> None:
    """Fill ``results[i]`` for every ``i`` in ``positions`` by calling ``check``."""
    if not positions:
        return
    if config.concurrency == 1 and config.timeout_s is None:
        _inline(check, texts, ids, positions, config, recorder)
        return
    job: _Job[int] = _Job(iter(positions), ids, recorder)
    results = recorder.results
    limit = inf if config.timeout_s is None else config.timeout_s

    def body(slot: Slot) -> None:
        claim, out = job.claimed.setdefault, job.out
        for i in job.units:
            t0 = slot.started = perf_counter()
            slot.unit = i
            try:
                value: object = check(texts[i])
            except (Exception, SystemExit) as caught:
                exc = defense_failure(caught)
                value, err, attempts, elapsed = retry_sync(
                    check, texts[i], exc, perf_counter() - t0, config, slot
                )
                slot.attempts = 1
                outcome = finish(ids[i], value, err, attempts, elapsed, config.timeout_s)
            else:
                elapsed = perf_counter() - t0
                if elapsed > limit:
                    outcome = finish(ids[i], value, None, 1, elapsed, config.timeout_s)
                elif isinstance(value, Verdict):
                    outcome = Outcome(ids[i], value, "ok", None, elapsed * 1000.0, 1)
                else:
                    outcome = ok_or_wrong_type(ids[i], value, elapsed * 1000.0, 1)
            if claim(i, outcome) is not outcome or slot.abandoned:
                return
            results[i] = outcome
            if out is not None:
                out.append(outcome)

    workers = min(config.concurrency, len(positions))
    _supervise(job, body, workers, config=config, recorder=recorder, what="check")


def run_batches(
    check_batch: Callable[[list[str]], object],
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    *,
    config: RunConfig,
    recorder: Recorder,
    tally: BatchTally | None = None,
) -> list[int]:
    """Screen ``positions`` with ``check_batch``, one batch at a time, on one worker.

    Batches run one after another: a batch defense parallelises inside its call
    (vectorised model code), and concurrent batches would only oversubscribe the
    cores. A batch's texts get ``latency_ms=None`` (no text waited for the batch
    alone; a batch of one text is a one-text call and keeps its time); the wall
    time of every batch of several texts goes to ``tally`` (the amortised cost).

    Returned, for the caller to screen one by one with ``check``: the positions of
    a batch that raised (after retries of transient errors), returned something
    other than a list/tuple of the right length, or ran past its limit. The time
    limit is per text, so a batch of ``n`` texts has ``n * timeout_s``; one past it
    is abandoned and its texts retried alone, each with ``timeout_s``, so only a
    text that hangs on its own becomes a ``timeout``. A batch that answers, however
    late, is recorded as answered.
    """
    size = config.batch_size
    units = [tuple(positions[k : k + size]) for k in range(0, len(positions), size)]
    if not units:
        return []
    job: _Job[tuple[int, ...]] = _Job(iter(units), ids, recorder)
    results = recorder.results
    fallback: list[int] = []

    def body(slot: Slot) -> None:
        for unit in job.units:
            batch = [texts[i] for i in unit]
            t0 = slot.started = perf_counter()
            slot.unit = unit
            try:
                value: object = check_batch(batch)
                err: Exception | None = None
                attempts, elapsed = 1, perf_counter() - t0
            except (Exception, SystemExit) as caught:
                exc = defense_failure(caught)
                value, err, attempts, elapsed = retry_sync(
                    check_batch, batch, exc, perf_counter() - t0, config, slot
                )
                slot.attempts = 1
            outcomes = _batch_outcomes(unit, ids, value, err, attempts, elapsed)
            with job.lock:
                if slot.abandoned or unit[0] in job.claimed:
                    return
                slot.started = 0.0  # a unit left unclaimed for fallback must not time out
                if outcomes is None:
                    fallback.extend(unit)
                    continue
                for i, outcome in zip(unit, outcomes, strict=True):
                    job.claimed[i] = results[i] = outcome
                if tally is not None and len(unit) > 1:
                    tally.add(len(unit), elapsed)
            if job.out is not None:
                job.out.extend(outcomes)

    _supervise(job, body, 1, config=config, recorder=recorder, what="check_batch")
    return sorted(fallback + job.split)


def _batch_outcomes(
    unit: tuple[int, ...],
    ids: Sequence[str],
    value: object,
    err: Exception | None,
    attempts: int,
    elapsed: float,
) -> list[Outcome] | None:
    """One outcome per text of a finished batch, or None to fall back to ``check``."""
    if err is not None or value is FAILED:
        return None
    if not isinstance(value, list | tuple) or len(value) != len(unit):
        return None
    latency_ms = elapsed * 1000.0 if len(unit) == 1 else None
    return [
        ok_or_wrong_type(ids[i], v, latency_ms, attempts) for i, v in zip(unit, value, strict=True)
    ]
