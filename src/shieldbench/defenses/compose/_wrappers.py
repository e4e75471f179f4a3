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
    Concurrent first calls for the same text may both reach the inner defense.

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

import asyncio
import contextlib
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

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

A = TypeVar("A")
R = TypeVar("R")


def _run_with_timeout(fn: Callable[[A], R], arg: A, timeout_s: float) -> R:
    """``fn(arg)`` in a daemon thread; :class:`TimeoutError` if it is not done in time."""
    box: list[tuple[bool, object]] = []

    def target() -> None:
        try:
            box.append((True, fn(arg)))
        except BaseException as exc:
            box.append((False, exc))

    thread = threading.Thread(target=target, name="shieldbench-fail-safe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not box:
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    ok, value = box[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


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
        """The verdict given instead of an error or a timeout."""
        kind = "timeout" if isinstance(exc, TimeoutError) else "error"
        return Verdict(
            blocked=self.mode == "closed",
            score=None,
            label="ERROR",
            reasons=(f"fail_{self.mode}:{kind}",),
            details={"fail_mode": self.mode, "error": f"{type(exc).__name__}: {exc}"},
        )

    def _check_inner(self, text: str) -> Verdict:
        return checked(self.inner.check(text), self.inner)

    def check(self, text: str) -> Verdict:
        try:
            if self.timeout_s is None:
                return self._check_inner(text)
            return _run_with_timeout(self._check_inner, text, self.timeout_s)
        except Exception as exc:
            return self.fallback(exc)

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        def batch(items: Sequence[str]) -> list[Verdict]:
            return call_batch(self.inner, items)

        try:
            if self.timeout_s is None:
                return batch(texts)
            return _run_with_timeout(batch, texts, self.timeout_s * max(1, len(texts)))
        except TimeoutError as exc:
            return [self.fallback(exc) for _ in texts]
        except Exception:
            return [self.check(t) for t in texts]

    async def _acheck(self, text: str) -> Verdict:
        try:
            return await asyncio.wait_for(call_async(self.inner, text), self.timeout_s)
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
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()
        self._lock = threading.Lock()
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
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _lookup(self, key: str) -> Verdict | None:
        now = self._clock()
        with self._lock:
            entry = None if self._bypass else self._cache.get(key)
            if entry is None:
                self.misses += 1
                return None
            stored_at, verdict = entry
            age = now - stored_at
            if age >= self.window_s:
                del self._cache[key]
                self.misses += 1
                return None
            self._cache.move_to_end(key)
            self.hits += 1
        return merge_details(verdict, dedup="hit", dedup_age_s=round(age, 6))

    def _store(self, key: str, verdict: Verdict) -> Verdict:
        now = self._clock()
        with self._lock:
            if self._bypass:
                return merge_details(verdict, dedup="miss")
            self._cache[key] = (now, verdict)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return merge_details(verdict, dedup="miss")

    def check(self, text: str) -> Verdict:
        key = self._key(text)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        return self._store(key, checked(self.inner.check(text), self.inner))

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
        with self._lock:
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
