"""The HTTP connection: httptools, a bounded time to send a request's headers
(slowloris) and a bounded size of those headers.

The service speaks HTTP/1.1 through uvicorn's httptools protocol (llhttp, the C parser
of Node.js) on uvloop. Measured on the idle 2-core development machine, one server
process at concurrency 32 (``benchmarks/http_protocol.py``, side by side with uvicorn's
h11 protocol, pure Python, on asyncio's loop): a bare ASGI answer costs the server
about 90 us of CPU against 325 us, a ``/v1/check`` about 500 us against 730 us, and a
worker answers about 1.5x the checks per second.

uvicorn times out a connection that is idle *between* requests (keep-alive), but not
one that has started a request and never finishes its headers: a client that sends
one header line every few seconds holds a connection, and its memory and file
descriptor, forever; a few hundred such clients exhaust the server (slowloris). And
llhttp, unlike h11, puts no bound on the size of a request's headers.

:func:`http_protocol` is uvicorn's httptools protocol with both bounds:

- **time**: from a connection's first byte, and from the first byte of each later
  request on a kept-alive connection, the request line and all its headers must arrive
  within ``header_timeout_s``, or the connection is closed. Dripping bytes does not
  restart the timer. Once the headers are in, the timer is off: a slow body or a slow
  answer (a stream from the upstream) is not cut by it;
- **size**: the request target and the header names and values together may be at most
  ``max_header_bytes`` (16 KiB by default, h11's own bound); a request over it gets
  ``431 Request Header Fields Too Large`` and the connection is closed, before any of
  its headers reach the application. httptools gathers a header's name and value in
  full before it hands them on, so the bytes received while a request's headers are
  incomplete are counted too: one endless header is refused once it passes the bound
  (by at most one read of the socket), not when it ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["BoundedHeadersProtocol", "http_protocol"]

_TOO_LARGE = b"request headers too large\n"
_ANSWER_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE), _TOO_LARGE)
)


class BoundedHeadersProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on the time to receive a request's
    headers and on their size (see the module doc)."""

    header_timeout_s: float = 10.0
    max_header_bytes: int = 16 * 1024
    _header_timer: asyncio.TimerHandle | None = None
    _header_bytes: int = 0  # the target's and the headers' bytes, as the parser hands them on
    _raw_bytes: int = 0  # bytes read while the headers were incomplete (see data_received)
    _in_headers: bool = True
    _refused: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        # A read that began and ended inside one request's headers is all header bytes.
        # (The read in which a request begins may hold the end of the one before it, so
        # it is not counted here: the callbacks count its complete fields.)
        in_headers = self._in_headers
        super().data_received(data)
        if in_headers and self._in_headers and not self._refused:
            self._raw_bytes += len(data)
            if self._raw_bytes > self.max_header_bytes:
                self._refuse()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # llhttp's callbacks: a message begins at its first byte; its headers are complete
    # before its body. Once a request is refused, the rest of what was read is ignored
    # (the transport is closing: nothing more is read).
    def on_message_begin(self) -> None:
        if self._refused:
            return
        self._header_bytes = self._raw_bytes = 0
        self._in_headers = True
        self._arm()  # a no-op when the timer runs already: dripping does not reset it
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        if self._counted(len(url)):
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._counted(len(name) + len(value)):
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._in_headers = False
        self._disarm()
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def _counted(self, size: int) -> bool:
        """Count ``size`` more header bytes; refuse the request past the bound."""
        if self._refused:
            return False
        self._header_bytes += size
        if self._header_bytes <= self.max_header_bytes:
            return True
        self._refuse()
        return False

    def _refuse(self) -> None:
        """Answer 431 and close the connection, once the requests before it are answered.

        A pipelined request may follow requests still being answered: those answers go
        out first. Reading stops meanwhile, so the refused headers cannot grow."""
        self._refused = True
        self._disarm()
        self.logger.info(
            "refused a request from %s: headers over %d bytes",
            self._peer(),
            self.max_header_bytes,
        )
        self.flow.pause_reading()
        self._close_if_answered()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._refused:
            self.flow.pause_reading()  # the base class resumed it for the next request
            self._close_if_answered()

    def _close_if_answered(self) -> None:
        answered = self.cycle is None or (self.cycle.response_complete and not self.pipeline)
        if answered and not self.transport.is_closing():
            self.transport.write(_ANSWER_431)
            self.transport.close()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.logger.info(
                "closed a connection from %s: no complete request headers within %g s",
                self._peer(),
                self.header_timeout_s,
            )
            self.transport.close()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"


def http_protocol(
    *, header_timeout_s: float = 10.0, max_header_bytes: int = 16 * 1024
) -> type[Any]:
    """The protocol class to give uvicorn (``http=``) for these bounds (the defaults are
    :class:`~shieldbench.service.ServeConfig`'s)."""
    if not header_timeout_s > 0:
        raise ValueError(f"header_timeout_s must be > 0, got {header_timeout_s!r}")
    if not max_header_bytes >= 1:
        raise ValueError(f"max_header_bytes must be >= 1, got {max_header_bytes!r}")
    bounds = {"header_timeout_s": header_timeout_s, "max_header_bytes": max_header_bytes}
    return type("BoundedHeadersProtocol", (BoundedHeadersProtocol,), bounds)
