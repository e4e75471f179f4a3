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
    ``timeout_s`` limits each phase of a request (connect, waiting for a pooled
    connection, each read); the engine's per-call timeout bounds the total.

Clients
    :mod:`shieldbench.defenses.remote._clients`: httpx for ``check``, aiohttp (one session
    per running event loop) for ``acheck``. Both hand back a :class:`Reply` and
    raise :class:`NetworkError` on transport failures, so this module's retry
    policy does not depend on the client library.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shieldbench._redact import register_secret
from shieldbench.errors import ConfigError, DefenseError, TransientDefenseError

__all__ = [
    "DEFAULT_NET",
    "JSON_HEADERS",
    "NetOptions",
    "NetworkError",
    "RateLimiter",
    "Reply",
    "Secret",
    "env_secret",
    "json_bytes",
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
    register_secret(value)  # masked wherever it could surface (shieldbench._redact)
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
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT")  # a date in the past: now
    0.0
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            import email.utils  # ~5 ms to import: only for the rare HTTP-date form

            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer as the network defenses read it, whichever client fetched it.

    ``headers`` is the client's case-insensitive mapping; ``content`` the raw body.

    >>> reply = Reply(200, "OK", {}, b'{"blocked": true}')
    >>> reply.json(), reply.text
    ({'blocked': True}, '{"blocked": true}')
    """

    status: int
    reason: str
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        """The body as text (invalid UTF-8 replaced): for error messages."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; ``ValueError`` when it is not JSON."""
        try:
            return json.loads(self.content.decode("utf-8"))
        except ValueError:  # UTF-16/32 or a BOM: let json detect the encoding
            return json.loads(self.content)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
JSON_HEADERS = {"Content-Type": "application/json"}


def json_bytes(body: object) -> bytes:
    """Compact UTF-8 JSON: the request body both clients send (NaN and infinities refused).

    Lone surrogates (possible in texts decoded from JSON) cannot be encoded as UTF-8
    and become ``?``.

    >>> json_bytes({"text": "hi \\ud800", "n": [1, 2]})
    b'{"text":"hi ?","n":[1,2]}'
    """
    return _ENCODER.encode(body).encode("utf-8", "replace")


class NetworkError(Exception):
    """A request that got no HTTP answer: refused, reset, timed out, broken response.

    Raised by the clients (:mod:`shieldbench.defenses.remote._clients`) in place of their own
    exception types; always transient. ``kind`` names the client's exception type.
    """

    def __init__(self, cause: BaseException, *, timed_out: bool) -> None:
        self.kind = type(cause).__name__
        self.detail = str(cause)
        self.timed_out = timed_out
        super().__init__(f"{self.kind}: {self.detail}" if self.detail else self.kind)


class _Attempts:
    """The retry policy shared by :func:`send_sync` and :func:`send_async`."""

    def __init__(self, what: str, options: NetOptions, secrets: tuple[Secret, ...]) -> None:
        self.what = what
        self.options = options
        self.secrets = secrets
        self.attempt = 0
        self.message = ""
        self.retry_after: float | None = None
        self.timed_out = False  # whether the last attempt timed out

    def response(self, response: Reply) -> Reply | None:
        """The response when usable; ``None`` when transient; raises when permanent."""
        status = response.status
        if 200 <= status < 300:
            return response
        snippet = redact(response.text[:200], self.secrets)
        self.message = f"{self.what}: HTTP {status} {response.reason}: {snippet!r}"
        self.timed_out = False
        if status in _TRANSIENT_STATUS or status >= 500:
            self.retry_after = parse_retry_after(response.headers.get("retry-after"))
            return None
        hint = ""
        if status in (401, 403):
            hint = " (check the API key environment variable)"
        elif 300 <= status < 400:
            hint = f" (redirect to {response.headers.get('location')!r}: use that URL)"
        raise DefenseError(self.message + hint)

    def exception(self, exc: NetworkError) -> None:
        """Record a transport failure (always transient)."""
        if exc.timed_out:
            detail = f"timed out after {self.options.timeout_s:g} s ({exc.kind})"
        else:
            detail = str(exc)
        self.message = redact(f"{self.what}: {detail}", self.secrets)
        self.retry_after = None
        self.timed_out = exc.timed_out

    def wait_s(self) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up (and raise)."""
        if self.attempt > self.options.retries:
            return None
        if self.retry_after is not None:
            return self.retry_after if self.retry_after <= MAX_BACKOFF_S else None
        backoff: float = self.options.backoff_s * 2.0 ** (self.attempt - 1)
        return min(MAX_BACKOFF_S, backoff)

    def give_up(self) -> DefenseError:
        error: DefenseError
        if self.options.retries == 0:
            error = TransientDefenseError(self.message, retry_after_s=self.retry_after)
        else:
            error = DefenseError(f"{self.message} (gave up after {self.attempt} attempts)")
        # The engine files an error whose last attempt timed out as a timeout outcome.
        error.timed_out = self.timed_out
        return error


def send_sync(
    send: Callable[[], Reply],
    *,
    what: str,
    options: NetOptions,
    limiter: RateLimiter,
    secrets: tuple[Secret, ...] = (),
) -> Reply:
    """``send()`` under the rate limit and retry policy; raises ``DefenseError`` subclasses.

    ``send`` makes one request and raises :class:`NetworkError` when it gets no answer.
    """
    state = _Attempts(what, options, secrets)
    while True:
        wait = limiter.reserve()
        if wait > 0.0:
            time.sleep(wait)
        state.attempt += 1
        try:
            response = state.response(send())
        except NetworkError as exc:
            state.exception(exc)
            response = None
        if response is not None:
            return response
        backoff = state.wait_s()
        if backoff is None:
            raise state.give_up()
        time.sleep(backoff)


async def send_async(
    send: Callable[[], Awaitable[Reply]],
    *,
    what: str,
    options: NetOptions,
    limiter: RateLimiter,
    secrets: tuple[Secret, ...] = (),
) -> Reply:
    """The async twin of :func:`send_sync`; ``send()`` returns an awaitable :class:`Reply`."""
    state = _Attempts(what, options, secrets)
    while True:
        wait = limiter.reserve()
        if wait > 0.0:
            await asyncio.sleep(wait)
        state.attempt += 1
        try:
            response = state.response(await send())
        except NetworkError as exc:
            state.exception(exc)
            response = None
        if response is not None:
            return response
        backoff = state.wait_s()
        if backoff is None:
            raise state.give_up()
        await asyncio.sleep(backoff)
