"""One guarded call: a time limit, retries, de-duplication and a fail policy.

Three callers put a defense behind guards, each in its own setting, and all of them
use the pieces below (there is no second copy of any of them):

========================  =========================================================
caller                    what it takes from here
========================  =========================================================
the engine                :func:`retry_call` and :func:`backoff_delay` (transient
(``engine/_threads.py``,  errors retried with back-off, attempts counted),
``engine/_async.py``)     :func:`error_text`. Its time limit stays the engine's
                          own supervisor: one thread per *worker*, not per call,
                          because a run makes millions of calls.
``fail_closed`` /         :func:`call_with_timeout` (sync), :func:`await_with_timeout`
``fail_open``             (async), :func:`fail_verdict` (the verdict given instead
                          of an error or a timeout).
``dedup``                 :class:`TtlCache` (verdicts by :func:`text_hash` for a
                          window) and :class:`SingleFlight` (concurrent identical
                          texts run once).
the service's screen      :class:`TtlCache`, :class:`AsyncSingleFlight`,
(``service/_screen.py``)  :func:`await_with_timeout`, :func:`text_hash`.
========================  =========================================================

The guarantees, each attacked by a property test in ``tests/defenses/test_guarded.py``:

- **A time limit holds.** :func:`call_with_timeout` returns or raises
  :class:`TimeoutError` no later than ``timeout_s`` plus scheduling slack, however long
  the call itself takes. Python cannot stop a thread: a late sync call keeps running
  in its daemon thread and its answer is dropped. Async calls are cancelled.
- **Fail-closed blocks, fail-open allows, and says why.** :func:`fail_verdict` gives
  ``blocked=True`` (closed) or ``False`` (open), ``label="ERROR"``, ``score=None``,
  ``reasons=("fail_<mode>:timeout" | ":error",)`` and the error as ``"Type: message"``
  in ``details["error"]``.
- **Concurrent identical texts run once.** While a call for a key is in flight, every
  other caller with that key waits for it and gets its answer (or its exception)
  instead of calling again.
- **Retries stop at the limit.** :func:`retry_call` makes at most ``retries`` extra
  attempts, only after a :class:`~shieldbench.errors.TransientDefenseError`, sleeping
  :func:`backoff_delay` between them; any other error ends it at once.

Example::

    >>> from shieldbench.types import Verdict
    >>> def hangs(text):
    ...     import time; time.sleep(1); return Verdict(blocked=False)
    >>> try:
    ...     call_with_timeout(hangs, "hello", 0.01)
    ... except TimeoutError as exc:
    ...     fail_verdict("closed", exc).reasons
    ('fail_closed:timeout',)
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from time import perf_counter
from typing import Generic, Literal, Protocol, TypeVar

from shieldbench.errors import TransientDefenseError
from shieldbench.types import Verdict

__all__ = [
    "AsyncSingleFlight",
    "FailMode",
    "Retried",
    "RetryWatch",
    "SingleFlight",
    "TtlCache",
    "await_with_timeout",
    "backoff_delay",
    "call_with_timeout",
    "error_text",
    "fail_verdict",
    "retry_call",
    "text_hash",
]

A = TypeVar("A")
R = TypeVar("R")
V = TypeVar("V")
K = TypeVar("K", bound=Hashable)

FailMode = Literal["closed", "open"]


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text (lone surrogates kept), hex: the de-duplication key.

    >>> text_hash("a")[:16]
    'ca978112ca1bbdca'
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def error_text(exc: BaseException) -> str:
    """``"ExcType: message"`` (just the type when the message is empty).

    >>> error_text(ValueError("bad input"))
    'ValueError: bad input'
    >>> error_text(RuntimeError())
    'RuntimeError'
    """
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


# --- time limit --------------------------------------------------------------------


def call_with_timeout(fn: Callable[[A], R], arg: A, timeout_s: float) -> R:
    """``fn(arg)`` on a daemon thread; :class:`TimeoutError` when not done in ``timeout_s``.

    What ``fn`` raises is raised here. A late call is not stopped (Python cannot stop
    a thread): it finishes on its own thread and its answer is dropped, so a stuck call
    never delays the caller's next one, nor interpreter exit.
    """
    box: list[tuple[bool, object]] = []

    def target() -> None:
        try:
            box.append((True, fn(arg)))
        except BaseException as exc:  # handed to the caller below
            box.append((False, exc))

    thread = threading.Thread(target=target, name="shieldbench-guarded", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not box:
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    ok, value = box[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


async def await_with_timeout(call: Awaitable[R], timeout_s: float | None) -> R:
    """``await call``, cancelled and :class:`TimeoutError` after ``timeout_s`` (None: no limit)."""
    return await asyncio.wait_for(call, timeout_s)


# --- fail policy -------------------------------------------------------------------


def fail_verdict(mode: FailMode, exc: BaseException) -> Verdict:
    """The verdict given instead of an error or a timeout (``exc``) under ``mode``.

    >>> v = fail_verdict("open", RuntimeError("backend down"))
    >>> v.blocked, v.label, v.reasons, v.details["error"]
    (False, 'ERROR', ('fail_open:error',), 'RuntimeError: backend down')
    """
    kind = "timeout" if isinstance(exc, TimeoutError) else "error"
    return Verdict(
        blocked=mode == "closed",
        score=None,
        label="ERROR",
        reasons=(f"fail_{mode}:{kind}",),
        details={"fail_mode": mode, "error": f"{type(exc).__name__}: {exc}"},
    )


# --- retries -----------------------------------------------------------------------


def backoff_delay(exc: TransientDefenseError, attempt: int, base_s: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based).

    The server's ``retry_after_s`` wins when the error carries one; otherwise the wait
    doubles from ``base_s``: ``base_s * 2 ** (attempt - 1)``.

    >>> [backoff_delay(TransientDefenseError("503"), a, 0.25) for a in (1, 2, 3)]
    [0.25, 0.5, 1.0]
    >>> backoff_delay(TransientDefenseError("429", retry_after_s=3.0), 1, 0.25)
    3.0
    """
    if exc.retry_after_s is not None:
        return max(0.0, float(exc.retry_after_s))
    return float(base_s * 2 ** (attempt - 1))


class RetryWatch(Protocol):
    """Who watches a retried call (the engine's worker slot): told when it sleeps and
    when an attempt starts, and asked whether to give up (``stopped``)."""

    def backing_off(self) -> None: ...

    def attempt_started(self, attempt: int, started: float) -> None: ...

    @property
    def stopped(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Retried(Generic[R]):
    """How a retried call ended: ``value`` (``None`` when ``error`` is set), the last
    ``error``, the ``attempts`` made, and ``elapsed_s``, the wall time of the last
    attempt (back-off sleeps are the caller's, not the defense's, so not latency)."""

    value: R | None
    error: Exception | None
    attempts: int
    elapsed_s: float


def retry_call(
    call: Callable[[A], R],
    arg: A,
    *,
    first_error: Exception,
    first_elapsed_s: float,
    retries: int,
    backoff_s: float,
    watch: RetryWatch | None = None,
    sleep: Callable[[float], object] | None = None,
) -> Retried[R]:
    """Carry on after the first attempt of ``call(arg)`` raised ``first_error``.

    The first attempt is the caller's (inline, on its hot path); only a call that
    raised comes here. Only :class:`~shieldbench.errors.TransientDefenseError` is
    retried, at most ``retries`` more times, sleeping :func:`backoff_delay` between
    attempts (``sleep``, :func:`time.sleep` by default); a ``watch`` that says
    ``stopped`` ends the retries after the sleep.
    """
    sleep = time.sleep if sleep is None else sleep
    exc, elapsed_s, attempt = first_error, first_elapsed_s, 1
    while isinstance(exc, TransientDefenseError) and attempt <= retries:
        if watch is not None:
            watch.backing_off()
        sleep(backoff_delay(exc, attempt, backoff_s))
        if watch is not None and watch.stopped:
            break
        attempt += 1
        t0 = perf_counter()
        if watch is not None:
            watch.attempt_started(attempt, t0)
        try:
            value = call(arg)
        except Exception as again:
            exc, elapsed_s = again, perf_counter() - t0
            continue
        return Retried(value, None, attempt, perf_counter() - t0)
    return Retried(None, exc, attempt, elapsed_s)


# --- de-duplication ----------------------------------------------------------------


class TtlCache(Generic[V]):
    """Values by key for ``window_s`` seconds, at most ``max_entries`` (least recently
    used evicted). Thread-safe; ``clock`` is injectable for tests."""

    def __init__(
        self,
        window_s: float,
        max_entries: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window_s = window_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[V, float] | None:
        """The value stored under ``key`` and its age in seconds, or ``None`` (never
        stored, evicted, or ``window_s`` old: then forgotten)."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            stored_at, value = entry
            age = now - stored_at
            if age >= self.window_s:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
        return value, age

    def put(self, key: str, value: V) -> None:
        """Store ``value`` under ``key`` from now, evicting the least recently used."""
        now = self._clock()
        with self._lock:
            self._entries[key] = (now, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class _Flight:
    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None


class SingleFlight(Generic[K]):
    """Concurrent calls with the same key run once (threads).

    :meth:`run` calls ``fn`` unless a call for ``key`` is already in flight; then it
    waits for that call and returns its value (or raises its exception). Nothing is
    remembered once the call is over: pair it with a :class:`TtlCache`, and store
    inside ``fn`` so that no caller finds neither the flight nor the cache entry.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[K, _Flight] = {}

    def run(self, key: K, fn: Callable[[], R]) -> tuple[R, bool]:
        """``(value, shared)``: ``shared`` is True when another caller's call answered."""
        with self._lock:
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value, True  # type: ignore[return-value]
        try:
            flight.value = value = fn()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()
        return value, False

    def __contains__(self, key: object) -> bool:
        return key in self._flights


class AsyncSingleFlight(Generic[K]):
    """Concurrent calls with the same key run once (one event loop).

    Like :class:`SingleFlight` for coroutines. When the first call is cancelled, its
    waiters are cancelled too (they must not hang).
    """

    def __init__(self) -> None:
        self._flights: dict[K, asyncio.Future[object]] = {}

    async def run(self, key: K, make: Callable[[], Awaitable[R]]) -> tuple[R, bool]:
        """``(value, shared)``; ``make()`` is awaited only by the first caller."""
        pending = self._flights.get(key)
        if pending is not None:
            shared = await asyncio.shield(pending)
            return shared, True  # type: ignore[return-value]
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._flights[key] = future
        try:
            value = await make()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        finally:
            del self._flights[key]
        future.set_result(value)
        return value, False

    def __contains__(self, key: object) -> bool:
        return key in self._flights
