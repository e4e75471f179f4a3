"""The HTTP clients behind ``http:`` and ``llm:``: httpx for ``check``, aiohttp for ``acheck``.

Why two libraries
    ``check`` runs on engine worker threads and needs a blocking, thread-safe
    client: one pooled ``httpx.Client`` (aiohttp has no blocking API). ``acheck``
    is the path the engine prefers for these defenses (``concurrency`` calls in
    flight on one event loop), and there the client's CPU cost per request decides
    the throughput: measured on a 2-core machine against a loopback server at 64
    requests in flight, ``httpx.AsyncClient`` spent ~6-7 ms of CPU per request
    (its connection pool scans every connection on each request and event) and
    aiohttp's ``ClientSession`` ~0.25 ms: ``benchmarks/engine_speed.py --httpx``
    shows the difference (~26x vs ~1.5x the ideal wall time there). Both paths
    send the same bytes and both return a :class:`Reply`, so everything above
    this module (retries, errors, mapping) is shared.

Sessions: one per running event loop
    Connections belong to the loop that opened them, and the engine runs a fresh
    loop (:func:`asyncio.run`) for every call. So ``acheck`` uses one
    ``aiohttp.ClientSession`` per running loop, created on first use and closed
    when that loop shuts down: an async generator parked on the loop holds it,
    and ``asyncio.run`` / ``asyncio.Runner`` finalise async generators before
    closing the loop, which closes the session (no "Unclosed client session").
    :meth:`ClientPool.close` closes the sync client and every session whose loop
    is still open. A loop closed by hand without ``loop.shutdown_asyncgens()``
    leaves its session (and sockets) behind: use ``asyncio.run`` or call
    ``close()`` before closing such a loop.

Behaviour both clients share
    ``timeout_s`` limits each phase (connect / pool wait, and each read: httpx's
    ``Timeout(timeout_s)``; aiohttp's ``connect`` and ``sock_read``); no total
    limit (the engine's per-call timeout bounds the total). No redirects are
    followed. Certificates are checked against certifi's bundle. Proxies come
    from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``), read when first needed. At most :data:`MAX_CONNECTIONS`
    connections per client; more calls wait for one. Transport failures
    (connection refused or reset, timeouts, broken responses) raise
    :class:`~shieldbench.defenses.remote._net.NetworkError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from shieldbench.defenses.remote._net import NetworkError, Reply

if TYPE_CHECKING:
    import ssl

    import aiohttp
    import httpx

__all__ = ["MAX_CONNECTIONS", "ClientPool", "env_proxy"]

MAX_CONNECTIONS = 100
"""Connections one client keeps open at most (httpx's and aiohttp's default)."""


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url``, or ``None`` (``NO_PROXY`` honoured).

    ``HTTP_PROXY`` / ``HTTPS_PROXY`` by the URL's scheme, else ``ALL_PROXY``; lower-case
    names win, as in :func:`urllib.request.getproxies` (and httpx).
    """
    import urllib.request  # ~15 ms to import: only when a session is first used

    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.netloc):
        return None
    return proxy


class ClientPool:
    """A sync client for ``check`` and one aiohttp session per event loop for ``acheck``.

    ``headers`` go with every request (API keys included: they are never logged);
    a defense that sends JSON bodies names ``Content-Type`` there.
    """

    def __init__(self, *, timeout_s: float, headers: Mapping[str, str] | None = None) -> None:
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})
        self._lock = threading.Lock()
        self._sync: httpx.Client | None = None
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._holders: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self._proxies: dict[str, str | None] = {}
        self._ssl: ssl.SSLContext | None = None

    def _ssl_context(self) -> ssl.SSLContext:
        # One context for every client: building one costs milliseconds.
        with self._lock:
            if self._ssl is None:
                import ssl

                import certifi

                self._ssl = ssl.create_default_context(cafile=certifi.where())
            return self._ssl

    # -- sync: httpx --------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        client = self._sync
        if client is None:
            import httpx

            context = self._ssl_context()
            with self._lock:
                if self._sync is None:
                    self._sync = httpx.Client(
                        timeout=httpx.Timeout(self.timeout_s),
                        headers=self.headers,
                        follow_redirects=False,
                        verify=context,
                        limits=httpx.Limits(max_connections=MAX_CONNECTIONS),
                    )
                client = self._sync
        return client

    def send(self, method: str, url: str, *, content: bytes | None = None) -> Reply:
        """One request with the shared sync client; :class:`NetworkError` on transport failure."""
        import httpx

        try:
            response = self._client().request(method, url, content=content)
        except httpx.TransportError as exc:
            raise NetworkError(exc, timed_out=isinstance(exc, httpx.TimeoutException)) from exc
        return Reply(
            response.status_code, response.reason_phrase, response.headers, response.content
        )

    # -- async: aiohttp, one session per running loop -----------------------------------

    async def asend(self, method: str, url: str, *, content: bytes | None = None) -> Reply:
        """The async twin of :meth:`send`, on the running loop's aiohttp session."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None:
            session = await self._open(loop)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        proxy = self._proxies.get(origin, _UNSET)
        if proxy is _UNSET:
            proxy = self._proxies.setdefault(origin, env_proxy(origin))
        try:
            async with session.request(
                method, url, data=content, proxy=proxy, allow_redirects=False
            ) as response:
                body = await response.read()
                return Reply(response.status, response.reason or "", response.headers, body)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(exc, timed_out=isinstance(exc, TimeoutError)) from exc

    async def _open(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        import aiohttp

        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.timeout_s, sock_connect=self.timeout_s,
            sock_read=self.timeout_s,
        )  # fmt: skip
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=self._ssl_context()),
            headers=self.headers,
            timeout=timeout,
            trust_env=False,  # True would read netrc and proxies in a thread on every request
        )
        holder = self._closer(loop, session)
        with self._lock:
            self._sessions[loop] = session
            self._holders[loop] = holder
        await anext(holder)  # parked on the loop: loop shutdown finalises it (closes the session)
        return session

    async def _closer(
        self, loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._sessions.get(loop) is session:
                    del self._sessions[loop]
                    self._holders.pop(loop, None)
            await session.close()

    def open_sessions(self) -> int:
        """How many event loops have an open session (for tests and diagnostics)."""
        with self._lock:
            return len(self._sessions)

    def close(self) -> None:
        """Close the sync client and every session whose loop is still open."""
        with self._lock:
            sync, self._sync = self._sync, None
            holders = list(self._holders.items())
            self._holders.clear()
            self._sessions.clear()
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


_UNSET: Any = object()


async def _aclose(holder: AsyncGenerator[None, None]) -> None:
    await holder.aclose()
