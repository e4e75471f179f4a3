"""One call to a defense: building outcomes, naming errors, retrying transient failures.

Everything here sits off the hot path except :func:`ok_or_wrong_type`: the first
attempt of every call is made inline by the execution loops, and only a call that
raised comes here to be retried. The retry loop, its back-off and the error text are
the one guarded-call mechanism's (:func:`shieldbench.defenses.retry_call`), shared
with the ``fail_closed`` / ``dedup`` wrappers and the service.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from shieldbench.defenses import backoff_delay, error_text, retry_call
from shieldbench.errors import DefenseError, TransientDefenseError
from shieldbench.types import Outcome, RunConfig, Status, Verdict

__all__ = [
    "FAILED",
    "Slot",
    "backoff_s",
    "defense_failure",
    "error_outcome",
    "error_text",
    "finish",
    "ok_or_wrong_type",
    "retry_sync",
    "timeout_outcome",
]

A = TypeVar("A")
R = TypeVar("R")


class _Failed:
    """Marker for "no value": the call raised (see the error beside it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FAILED"


FAILED = _Failed()


class Slot:
    """What one worker thread is doing, read by the supervising thread.

    ``started`` is the ``perf_counter()`` at which the current attempt began (0.0
    before the first call and while backing off); ``unit`` is the position (or
    tuple of positions, for a batch) being screened, written after ``started``;
    ``attempts`` is the attempt number; ``abandoned`` is set by the supervisor when
    it gave up on the worker (timeout or stop): the worker then discards whatever
    its call returns. ``thread`` is the worker's thread, so the supervisor can
    count calls still stuck.
    """

    __slots__ = ("abandoned", "attempts", "started", "thread", "unit")

    def __init__(self) -> None:
        self.abandoned = False
        self.attempts = 1
        self.started = 0.0
        self.unit: int | tuple[int, ...] | None = None
        self.thread: threading.Thread | None = None

    # the slot is the retry loop's watch (shieldbench.defenses.RetryWatch)
    def backing_off(self) -> None:
        self.started = 0.0  # sleeping is not a call: no timeout while backing off

    def attempt_started(self, attempt: int, started: float) -> None:
        self.attempts = attempt
        self.started = started

    @property
    def stopped(self) -> bool:
        return self.abandoned


def backoff_s(exc: TransientDefenseError, attempt: int, config: RunConfig) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based).

    The server's ``retry_after_s`` wins when the error carries one; otherwise the
    wait is ``retry_backoff_s * 2 ** (attempt - 1)`` (0.25 s, 0.5 s, 1 s, ...).

    >>> cfg = RunConfig(retry_backoff_s=0.25)
    >>> [backoff_s(TransientDefenseError("503"), a, cfg) for a in (1, 2, 3)]
    [0.25, 0.5, 1.0]
    >>> backoff_s(TransientDefenseError("429", retry_after_s=3.0), 1, cfg)
    3.0
    """
    return backoff_delay(exc, attempt, config.retry_backoff_s)


def ok_or_wrong_type(
    sample_id: str, value: object, latency_ms: float | None, attempts: int
) -> Outcome:
    """An ``ok`` outcome, or an ``error`` one naming the type when ``value`` is no Verdict."""
    if isinstance(value, Verdict):
        return Outcome(sample_id, value, "ok", None, latency_ms, attempts)
    return Outcome(
        sample_id,
        None,
        "error",
        f"TypeError: the defense returned {type(value).__name__}, not a Verdict",
        latency_ms,
        attempts,
    )


def defense_failure(exc: BaseException) -> Exception:
    """What a defense call raised, as a failure of that call.

    ``SystemExit`` from defense code (a ``python:`` defense calling ``sys.exit``) would
    otherwise end the whole run silently: it becomes an error outcome like any other.

    >>> error_text(defense_failure(SystemExit(3)))
    'DefenseError: the defense raised SystemExit(3)'
    """
    if isinstance(exc, Exception):
        return exc
    code = exc.code if isinstance(exc, SystemExit) else None
    return DefenseError(f"the defense raised {type(exc).__name__}({code!r})")


def error_outcome(sample_id: str, exc: BaseException, latency_ms: float, attempts: int) -> Outcome:
    # A defense whose own request timed out (DefenseError.timed_out) timed out: say so.
    status: Status = "timeout" if getattr(exc, "timed_out", False) is True else "error"
    return Outcome(sample_id, None, status, error_text(exc), latency_ms, attempts)


def timeout_outcome(
    sample_id: str,
    timeout_s: float,
    latency_ms: float,
    attempts: int,
    *,
    what: str = "check",
    answered: bool = False,
) -> Outcome:
    """A ``timeout`` outcome whose message says which it was: hung, or answered too late.

    >>> timeout_outcome("a", 2.0, 2100.0, 1).error
    'check of this one text returned no verdict within the 2 s per-text time limit'
    >>> timeout_outcome("a", 2.0, 2500.0, 1, answered=True).error
    'check of this one text answered after 2.5 s, past the 2 s per-text time limit'
    """
    if answered:
        error = (
            f"{what} of this one text answered after {latency_ms / 1000.0:.3g} s,"
            f" past the {timeout_s:g} s per-text time limit"
        )
    else:
        error = (
            f"{what} of this one text returned no verdict within the {timeout_s:g} s"
            " per-text time limit"
        )
    return Outcome(sample_id, None, "timeout", error, latency_ms, attempts)


def finish(
    sample_id: str,
    value: object,
    exc: BaseException | None,
    attempts: int,
    elapsed_s: float,
    timeout_s: float | None,
) -> Outcome:
    """The outcome of a (possibly retried) call, from what :func:`retry_sync` returned."""
    latency_ms = elapsed_s * 1000.0
    if timeout_s is not None and elapsed_s > timeout_s:
        return timeout_outcome(sample_id, timeout_s, latency_ms, attempts, answered=exc is None)
    if exc is not None:
        return error_outcome(sample_id, exc, latency_ms, attempts)
    return ok_or_wrong_type(sample_id, value, latency_ms, attempts)


def retry_sync(
    call: Callable[[A], R],
    arg: A,
    exc: Exception,
    elapsed_s: float,
    config: RunConfig,
    slot: Slot | None,
) -> tuple[R | _Failed, Exception | None, int, float]:
    """Carry on after the first attempt of ``call(arg)`` raised ``exc``.

    Only :class:`~shieldbench.errors.TransientDefenseError` is retried, at most
    ``config.retries`` times, sleeping :func:`backoff_s` between attempts. A worker
    that its supervisor abandoned (``slot.abandoned``) stops retrying.

    Returns ``(value, error, attempts, elapsed_s)``: ``value`` is :data:`FAILED`
    when ``error`` is set; ``elapsed_s`` is the wall time of the last attempt
    (back-off sleeps are the engine's, not the defense's, so they are not latency).
    """
    done = retry_call(
        call,
        arg,
        first_error=exc,
        first_elapsed_s=elapsed_s,
        retries=config.retries,
        backoff_s=config.retry_backoff_s,
        watch=slot,
        sleep=time.sleep,  # looked up per call: tests count the sleeps
    )
    if done.error is not None:
        return FAILED, done.error, done.attempts, done.elapsed_s
    return done.value, None, done.attempts, done.elapsed_s  # type: ignore[return-value]
