"""Wrappers around one defense: ``fail_closed`` / ``fail_open`` and ``dedup``.

``fail_closed(d, timeout=2)`` / ``fail_open(d, timeout=2)``
    Production guards must answer. When the inner defense raises (any exception,
    including a non-Verdict return) or takes longer than ``timeout`` seconds, the
    wrapper answers anyway: ``fail_closed`` blocks, ``fail_open`` allows. The verdict
    says so: ``label="ERROR"``, ``score=None``, ``reasons=("fail_closed:timeout",)``
    (or ``:error``) and ``details={"fail_mode": ..., "error": "Type: message"}``.
    Without ``timeout`` only errors are caught. In a benchmark this turns errors into
    verdicts on purpose; leave it out to let the engine's error policy count them.

    A sync call that times out cannot be killed: it keeps running in its daemon
    thread and its result is dropped (each call with a timeout runs in its own
    thread, so a stuck call never delays the next). Async calls are cancelled.
    A batch gets ``timeout x batch size``; a batch that raises is retried text by
    text so one bad text does not fail the others.

``dedup(d, window=60)``
    Identical texts inside a time window are screened once: verdicts are cached by
    the SHA-256 of the text for ``window`` seconds (at most ``max_entries``, least
    recently used evicted). ``details["dedup"]`` is ``"hit"`` (with ``dedup_age_s``)
    or ``"miss"``; ``hits`` / ``misses`` count them. Failures are not cached.
    Concurrent ``check`` calls for the same text reach the inner defense once: the
    others wait for the first and share its verdict (a hit, ``dedup_age_s=0``) or
    its error. (``acheck`` callers on one event loop may each call once.)

Both are built from :mod:`shieldbench.defenses._guarded`, the one guarded-call
mechanism the engine and the service use too.

Example:
    >>> from shieldbench.types import Verdict
    >>> class Broken:
    ...     name = "broken"
    ...     def check(self, text): raise RuntimeError("backend down")
    >>> v = FailSafe(Broken(), mode="closed").check("hello")
    >>> v.blocked, v.label, v.reasons, v.details["error"]
    (True, 'ERROR', ('fail_closed:error',), 'RuntimeError: backend down')
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from shieldbench.defenses._guarded import (
    SingleFlight,
    TtlCache,
    await_with_timeout,
    call_with_timeout,
    fail_verdict,
    text_hash,
)
from shieldbench.defenses._protocol import Defense
from shieldbench.defenses.compose._composite import (
    Composite,
    build_children,
    call_async,
    call_batch,
    checked,
    float_opt,
    int_opt,
    merge_details,
    named,
)
from shieldbench.errors import ConfigError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["Dedup", "FailSafe"]


class FailSafe(Composite):
    """Errors and timeouts of the inner defense become blocked (closed) or allowed (open)."""

    def __init__(
        self,
        inner: Defense,
        *,
        mode: Literal["closed", "open"] = "closed",
        timeout_s: float | None = None,
    ) -> None:
        if mode not in ("closed", "open"):
            raise ConfigError(f"fail-safe mode must be 'closed' or 'open', got {mode!r}")
        if timeout_s is not None and not timeout_s > 0:
            raise ConfigError(f"fail_{mode}: timeout must be > 0 seconds, got {timeout_s}")
        self.inner = inner
        self.mode = mode
        self.timeout_s = timeout_s
        options = "" if timeout_s is None else f"timeout={timeout_s:g}"
        super().__init__(f"fail_{mode}", [inner], options=options)

    def fallback(self, exc: BaseException) -> Verdict:
        """The verdict given instead of an error or a timeout (:func:`fail_verdict`)."""
        return fail_verdict(self.mode, exc)

    def _check_inner(self, text: str) -> Verdict:
        return checked(self.inner.check(text), self.inner)

    def check(self, text: str) -> Verdict:
        try:
            if self.timeout_s is None:
                return self._check_inner(text)
            return call_with_timeout(self._check_inner, text, self.timeout_s)
        except Exception as exc:
            return self.fallback(exc)

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        def batch(items: Sequence[str]) -> list[Verdict]:
            return call_batch(self.inner, items)

        try:
            if self.timeout_s is None:
                return batch(texts)
            return call_with_timeout(batch, texts, self.timeout_s * max(1, len(texts)))
        except TimeoutError as exc:
            return [self.fallback(exc) for _ in texts]
        except Exception:
            return [self.check(t) for t in texts]

    async def _acheck(self, text: str) -> Verdict:
        try:
            return await await_with_timeout(call_async(self.inner, text), self.timeout_s)
        except Exception as exc:
            return self.fallback(exc)


class Dedup(Composite):
    """Caches verdicts of identical texts for ``window_s`` seconds."""

    def __init__(
        self,
        inner: Defense,
        *,
        window_s: float = 60.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not window_s > 0:
            raise ConfigError(f"dedup: window must be > 0 seconds, got {window_s}")
        if max_entries < 1:
            raise ConfigError(f"dedup: max_entries must be >= 1, got {max_entries}")
        self.inner = inner
        self.window_s = window_s
        self.max_entries = max_entries
        self._cache: TtlCache[Verdict] = TtlCache(window_s, max_entries, clock=clock)
        self._flight: SingleFlight[str] = SingleFlight()
        self._lock = threading.Lock()  # guards the counters
        self.hits = 0
        self.misses = 0
        self._bypass = 0  # open uncached() contexts: no lookup, no store
        super().__init__("dedup", [inner], options=f"window={window_s:g}")

    @contextlib.contextmanager
    def uncached(self) -> Iterator[None]:
        """The verdict cache and the inner defense's caches bypassed while inside."""
        with self._lock:
            self._bypass += 1
        try:
            with Composite.uncached(self):
                yield
        finally:
            with self._lock:
                self._bypass -= 1

    @staticmethod
    def _key(text: str) -> str:
        return text_hash(text)

    def _lookup(self, key: str) -> Verdict | None:
        entry = None if self._bypass else self._cache.get(key)
        with self._lock:
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
        verdict, age = entry
        return merge_details(verdict, dedup="hit", dedup_age_s=round(age, 6))

    def _store(self, key: str, verdict: Verdict) -> Verdict:
        if not self._bypass:
            self._cache.put(key, verdict)
        return merge_details(verdict, dedup="miss")

    def check(self, text: str) -> Verdict:
        key = self._key(text)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        if self._bypass:
            return self._store(key, checked(self.inner.check(text), self.inner))

        def fresh() -> Verdict:
            return self._store(key, checked(self.inner.check(text), self.inner))

        verdict, shared = self._flight.run(key, fresh)
        if not shared:
            return verdict
        with self._lock:  # another caller's call answered: a hit after all
            self.hits += 1
            self.misses -= 1
        return merge_details(verdict, dedup="hit", dedup_age_s=0.0)

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        keys = [self._key(t) for t in texts]
        out: list[Verdict | None] = [self._lookup(k) for k in keys]
        todo: dict[str, list[int]] = {}
        for i, verdict in enumerate(out):
            if verdict is None:
                todo.setdefault(keys[i], []).append(i)
        if todo:
            firsts = [idx[0] for idx in todo.values()]
            fresh = call_batch(self.inner, [texts[i] for i in firsts])
            for (key, indices), verdict in zip(todo.items(), fresh, strict=True):
                out[indices[0]] = self._store(key, verdict)
                for i in indices[1:]:  # duplicates inside the batch are hits of the first
                    out[i] = merge_details(verdict, dedup="hit", dedup_age_s=0.0)
                with self._lock:
                    self.hits += len(indices) - 1
                    self.misses -= len(indices) - 1
        return [v for v in out if v is not None]

    async def _acheck(self, text: str) -> Verdict:
        key = self._key(text)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        return self._store(key, await call_async(self.inner, text))

    def clear(self) -> None:
        """Forget every cached verdict."""
        self._cache.clear()


def _one_child(spec: Spec, usage: str) -> Defense:
    if len(spec.args) != 1:
        raise SpecError(f"{spec.text!r}: {spec.name!r} wraps exactly one defense: {usage}")
    return build_children(spec)[0]


def _fail_safe(spec: Spec, mode: Literal["closed", "open"]) -> FailSafe:
    spec.check_options({"timeout"})
    timeout = spec.float_option("timeout")
    if timeout is not None and not timeout > 0:
        raise SpecError(f"{spec.text!r}: timeout must be > 0 seconds, got {timeout:g}")
    inner = _one_child(spec, f"fail_{mode}(DEFENSE, timeout=SECONDS)")
    return named(FailSafe(inner, mode=mode, timeout_s=timeout), spec)


@defenses.register(
    "fail_closed",
    description="Errors and timeouts of the wrapped defense become BLOCKED verdicts.",
    usage="fail_closed(DEFENSE, timeout=SECONDS)",
    example="fail_closed(pattern, timeout=5)",
)
def _fail_closed(spec: Spec) -> FailSafe:
    return _fail_safe(spec, "closed")


@defenses.register(
    "fail_open",
    description="Errors and timeouts of the wrapped defense become ALLOWED verdicts.",
    usage="fail_open(DEFENSE, timeout=SECONDS)",
    example="fail_open(pattern, timeout=5)",
)
def _fail_open(spec: Spec) -> FailSafe:
    return _fail_safe(spec, "open")


@defenses.register(
    "dedup",
    description="Screens identical texts once per time window (verdict cache keyed by hash).",
    usage="dedup(DEFENSE, window=60, max_entries=10000)",
    example="dedup(pattern, window=60)",
)
def _dedup(spec: Spec) -> Dedup:
    spec.check_options({"window", "max_entries"})
    window = float_opt(spec, "window", 60.0)
    max_entries = int_opt(spec, "max_entries", 10_000)
    if not window > 0 or max_entries < 1:
        raise SpecError(f"{spec.text!r}: need window > 0 and max_entries >= 1")
    inner = _one_child(spec, "dedup(DEFENSE, window=SECONDS)")
    return named(Dedup(inner, window_s=window, max_entries=max_entries), spec)
