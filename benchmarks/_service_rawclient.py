"""A lean HTTP/1.1 load client for the scale benchmark: keep-alive connections, one
request in flight on each, requests encoded before the clock starts.

Why not aiohttp (what the other ``service_*`` benchmarks use): on the 2-core machine
the client runs on the same cores as the server, and aiohttp's client costs about as
much CPU per request as the server's bare ASGI floor (``service_scale.py`` measures
it), so it takes the core a second worker would use. This client is an
:class:`asyncio.Protocol` per connection: a request is one ``write`` of prepared
bytes, an answer is parsed from its ``content-length`` (every answer of the guard
service has one; an answer without it is an error here, never guessed).

:func:`load` has the harness's signature and result: latencies, wall time, and each
answer's ``(status, body)``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

__all__ = ["load"]

_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


def _requests(url: str, bodies: Sequence[Any]) -> tuple[str, int, list[bytes]]:
    """The host, port and every request's bytes (POST of each body as JSON)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None or parts.port is None:
        raise ValueError(f"{url!r}: an http://HOST:PORT/path URL")
    head = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nhost: {parts.netloc}\r\n"
        "content-type: application/json\r\ncontent-length: "
    ).encode()
    out = []
    for body in bodies:
        data = json.dumps(body).encode()
        out.append(b"%s%d\r\n\r\n%s" % (head, len(data), data))
    return parts.hostname, parts.port, out


class _Connection(asyncio.Protocol):
    """One keep-alive connection taking requests from the shared ``queue``."""

    def __init__(self, queue: list[bytes], latencies: list[float], answers: list[Any]) -> None:
        self.queue = queue
        self.latencies = latencies
        self.answers = answers
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.buffer = b""
        self.need = -1
        self.started = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transport is an asyncio transport in all but its class
        self.transport = cast(asyncio.Transport, transport)
        self._send_next()

    def _send_next(self) -> None:
        assert self.transport is not None
        if not self.queue:
            self.transport.close()
            return
        request = self.queue.pop()
        self.started = time.perf_counter()
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.need < 0:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            match = _LENGTH.search(self.buffer, 0, end + 2)
            if match is None:
                self._fail(ValueError(f"an answer without content-length: {self.buffer[:200]!r}"))
                return
            self.need = end + 4 + int(match.group(1))
        if len(self.buffer) < self.need:
            return
        self.latencies.append(time.perf_counter() - self.started)
        head_end = self.buffer.find(b"\r\n\r\n") + 4
        self.answers.append((int(self.buffer[9:12]), self.buffer[head_end : self.need]))
        self.buffer, self.need = b"", -1  # answered: nothing owed on this connection
        self._send_next()

    def _fail(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done.done():
            return
        if self.queue or self.need >= 0 or self.buffer:
            self.done.set_exception(exc or ConnectionError("the server closed the connection"))
        else:
            self.done.set_result(None)


async def _load(url: str, bodies: Sequence[Any], concurrency: int) -> tuple[Any, ...]:
    host, port, requests = _requests(url, bodies)
    queue = list(reversed(requests))
    latencies: list[float] = []
    answers: list[Any] = []
    loop = asyncio.get_running_loop()
    wall = time.perf_counter()
    connections = []
    for _ in range(min(concurrency, len(queue))):
        _, protocol = await loop.create_connection(
            lambda: _Connection(queue, latencies, answers), host, port
        )
        connections.append(protocol)
    await asyncio.gather(*(c.done for c in connections))
    return latencies, time.perf_counter() - wall, answers


def load(
    url: str, bodies: Sequence[Any], *, concurrency: int
) -> tuple[list[float], float, list[Any]]:
    """POST every body to ``url`` over ``concurrency`` keep-alive connections (on uvloop,
    the server's loop, where it exists: ~20% less CPU per request than asyncio's)."""
    if sys.platform == "win32":
        latencies, wall, answers = asyncio.run(_load(url, bodies, concurrency))
    else:
        import uvloop

        latencies, wall, answers = uvloop.run(_load(url, bodies, concurrency))
    return latencies, wall, answers
