"""What the network defenses (``http:``, ``llm:``) share: secrets, retries, rate limits, clients.

Secrets
    API keys come only from environment variables. They are held in :class:`Secret`
    (whose ``repr`` / ``str`` are ``<redacted>``), sent only in request headers,
    and scrubbed from every error message (:func:`redact`). Specs name the variable
    (``api_key_env=OPENAI_API_KEY``, ``header.Authorization=Bearer env:GUARD_KEY``),
    never the value, so the spec recorded in a run holds no secret.

Retries: one layer, never two
    The engine retries :class:`~shieldbench.errors.TransientDefenseError` itself
    (``RunConfig.retries``, honouring ``retry_after_s``, counted in
    ``Outcome.attempts``). So by default (``retries=0``) a network defense does not
    retry: a 429, 408, 5xx or transport error (connection refused or reset,
    timeout) raises ``TransientDefenseError(retry_after_s=<Retry-After>)`` and the
    engine decides. Outside the engine (a service, a script), give ``retries=N``: the
    defense then retries internally with exponential back-off (``backoff_s``,
    doubled each attempt, capped at 30 s; a server's ``Retry-After`` wins) and, when
    the attempts are spent, raises a plain ``DefenseError``, which no outer layer
    retries again. Other 4xx answers are permanent errors at once.

Rate limit
    ``rpm`` spaces request starts at least ``60 / rpm`` seconds apart, across every
    thread and event loop using the defense (retries included).

Timeouts
    ``timeout_s`` is httpx's per-phase limit (connect, write, each read, pool); the
    engine's per-call timeout bounds the total.

Clients
    One pooled ``httpx.Client`` serves ``check`` from any thread. ``acheck`` uses one
    ``httpx.AsyncClient`` per running event loop (connections belong to a loop; the
    engine runs a fresh loop per call), closed when that loop shuts down
    (``asyncio.run`` finalises it) or by ``close()``.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import threading
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from shieldbench.errors import ConfigError, DefenseError, TransientDefenseError

__all__ = [
    "DEFAULT_NET",
    "ClientPool",
    "NetOptions",
    "RateLimiter",
    "Secret",
    "env_secret",
    "parse_retry_after",
    "redact",
    "send_async",
    "send_sync",
]

MAX_BACKOFF_S = 30.0
_TRANSIENT_STATUS = frozenset({408, 425, 429})


class Secret:
    """A string that never shows itself in a repr, str, log line or error."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


def env_secret(var: str, *, what: str) -> Secret:
    """The value of environment variable ``var``; a :class:`ConfigError` when unset or empty."""
    value = os.environ.get(var)
    if not value:
        raise ConfigError(f"{what}: environment variable {var} is not set; export {var}=...")
    return Secret(value)


def redact(message: str, secrets: tuple[Secret, ...]) -> str:
    """``message`` with every secret value replaced by ``<redacted>``."""
    for secret in secrets:
        value = secret.reveal()
        if value:
            message = message.replace(value, "<redacted>")
    return message


@dataclass(frozen=True, slots=True)
class NetOptions:
    """Timeout, retries and rate limit of a network defense (see the module docstring)."""

    timeout_s: float = 30.0
    retries: int = 0
    backoff_s: float = 0.5
    rpm: float | None = None

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise ConfigError(f"timeout must be > 0 seconds, got {self.timeout_s}")
        if self.retries < 0:
            raise ConfigError(f"retries must be >= 0, got {self.retries}")
        if not self.backoff_s >= 0:
            raise ConfigError(f"backoff must be >= 0 seconds, got {self.backoff_s}")
        if self.rpm is not None and not self.rpm > 0:
            raise ConfigError(f"rpm must be > 0 requests per minute, got {self.rpm}")


DEFAULT_NET = NetOptions()


class RateLimiter:
    """Spaces request starts ``60 / rpm`` seconds apart; shared by threads and loops."""

    def __init__(self, rpm: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = 0.0 if rpm is None else 60.0 / rpm
        self._clock = clock
        self._next = -math.inf
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Claim the next slot; return how long to wait before starting the request."""
        if self.interval_s == 0.0:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval_s
        return slot - now


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), ``None`` if absent.

    >>> parse_retry_after("3"), parse_retry_after(None), parse_retry_after("soon")
    (3.0, None, None)
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


class _Attempts:
    """The retry policy shared by :func:`send_sync` and :func:`send_async`."""

    def __init__(self, what: str, options: NetOptions, secrets: tuple[Secret, ...]) -> None:
        self.what = what
        self.options = options
        self.secrets = secrets
        self.attempt = 0
        self.message = ""
        self.retry_after: float | None = None

    def response(self, response: httpx.Response) -> httpx.Response | None:
        """The response when usable; ``None`` when transient; raises when permanent."""
        status = response.status_code
        if 200 <= status < 300:
            return response
        snippet = redact(response.text[:200], self.secrets)
        self.message = f"{self.what}: HTTP {status} {response.reason_phrase}: {snippet!r}"
        if status in _TRANSIENT_STATUS or status >= 500:
            self.retry_after = parse_retry_after(response.headers.get("retry-after"))
            return None
        hint = ""
        if status in (401, 403):
            hint = " (check the API key environment variable)"
        elif 300 <= status < 400:
            hint = f" (redirect to {response.headers.get('location')!r}: use that URL)"
        raise DefenseError(self.message + hint)

    def exception(self, exc: httpx.TransportError) -> None:
        """Record a transport failure (always transient)."""
        if isinstance(exc, httpx.TimeoutException):
            detail = f"timed out after {self.options.timeout_s:g} s ({type(exc).__name__})"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        self.message = redact(f"{self.what}: {detail}", self.secrets)
        self.retry_after = None

    def wait_s(self) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up (and raise)."""
        if self.attempt > self.options.retries:
            return None
        if self.retry_after is not None:
            return self.retry_after if self.retry_after <= MAX_BACKOFF_S else None
        backoff: float = self.options.backoff_s * 2.0 ** (self.attempt - 1)
        return min(MAX_BACKOFF_S, backoff)

    def give_up(self) -> DefenseError:
        if self.options.retries == 0:
            return TransientDefenseError(self.message, retry_after_s=self.retry_after)
        return DefenseError(f"{self.message} (gave up after {self.attempt} attempts)")


def send_sync(
    send: Callable[[], httpx.Response],
    *,
    what: str,
    options: NetOptions,
    limiter: RateLimiter,
    secrets: tuple[Secret, ...] = (),
) -> httpx.Response:
    """``send()`` under the rate limit and retry policy; raises ``DefenseError`` subclasses."""
    state = _Attempts(what, options, secrets)
    while True:
        time.sleep(limiter.reserve())
        state.attempt += 1
        try:
            response = state.response(send())
        except httpx.TransportError as exc:
            state.exception(exc)
            response = None
        if response is not None:
            return response
        wait = state.wait_s()
        if wait is None:
            raise state.give_up()
        time.sleep(wait)


async def send_async(
    send: Callable[[], Any],
    *,
    what: str,
    options: NetOptions,
    limiter: RateLimiter,
    secrets: tuple[Secret, ...] = (),
) -> httpx.Response:
    """The async twin of :func:`send_sync`; ``send()`` returns an awaitable response."""
    state = _Attempts(what, options, secrets)
    while True:
        await asyncio.sleep(limiter.reserve())
        state.attempt += 1
        try:
            response = state.response(await send())
        except httpx.TransportError as exc:
            state.exception(exc)
            response = None
        if response is not None:
            return response
        wait = state.wait_s()
        if wait is None:
            raise state.give_up()
        await asyncio.sleep(wait)


async def _aclose(holder: AsyncGenerator[None, None]) -> None:
    await holder.aclose()


class ClientPool:
    """A sync client for ``check`` and one async client per event loop for ``acheck``."""

    def __init__(self, *, timeout_s: float, headers: Mapping[str, str] | None = None) -> None:
        self._kwargs: dict[str, Any] = {
            "timeout": httpx.Timeout(timeout_s),
            "headers": dict(headers or {}),
            "follow_redirects": False,
        }
        self._lock = threading.Lock()
        self._sync: httpx.Client | None = None
        self._async: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        self._holders: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self._ssl: Any = None

    def _verify(self) -> Any:
        # One SSL context for every client: building one costs milliseconds.
        with self._lock:
            if self._ssl is None:
                import ssl

                import certifi

                self._ssl = ssl.create_default_context(cafile=certifi.where())
            return self._ssl

    def sync(self) -> httpx.Client:
        """The shared, thread-safe sync client (created on first use)."""
        client = self._sync
        if client is None:
            verify = self._verify()
            with self._lock:
                if self._sync is None:
                    self._sync = httpx.Client(verify=verify, **self._kwargs)
                client = self._sync
        return client

    async def aclient(self) -> httpx.AsyncClient:
        """The async client of the running event loop (created on first use)."""
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is not None:
            return client
        client = httpx.AsyncClient(verify=self._verify(), **self._kwargs)
        holder = self._closer(loop, client)
        with self._lock:
            self._async[loop] = client
            self._holders[loop] = holder
        await anext(holder)  # asyncio.run() finalises it at loop shutdown: closes the client
        return client

    async def _closer(
        self, loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._async.get(loop) is client:
                    del self._async[loop]
                    self._holders.pop(loop, None)
            await client.aclose()

    def close(self) -> None:
        """Close every client: the sync one, and async ones whose loop is still open."""
        with self._lock:
            sync, self._sync = self._sync, None
            holders = list(self._holders.items())
            self._holders.clear()
            self._async.clear()
        if sync is not None:
            sync.close()
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, holder in holders:
            if loop.is_closed():
                continue  # nothing can run there any more
            closing = _aclose(holder)
            if loop is current:
                loop.create_task(closing)
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(closing, loop).result(timeout=10)
            else:
                loop.run_until_complete(closing)
