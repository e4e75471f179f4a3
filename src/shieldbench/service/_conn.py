"""The HTTP connection: a bounded time to send a request's headers (slowloris).

uvicorn times out a connection that is idle *between* requests (keep-alive), but
not one that has started a request and never finishes its headers: a client that
sends one header line every few seconds holds a connection, and its memory and file
descriptor, forever; a few hundred such clients exhaust the server (slowloris).

:func:`protocol_with_header_timeout` is uvicorn's h11 protocol with one more timer:
from a connection's first byte, and from the first byte of each later request on a
kept-alive connection, the request line and all its headers must arrive within
``header_timeout_s``, or the connection is closed. Dripping bytes does not restart
the timer. Once the headers are in, the timer is off: a slow body or a slow answer
(a stream from the upstream) is not cut by it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeaderTimeoutProtocol", "protocol_with_header_timeout"]


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a bound on the time to receive a request's headers."""

    header_timeout_s: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._awaiting_headers():
            self._arm()  # a no-op when the timer runs already: dripping does not reset it
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return bool(self.conn.their_state is h11.IDLE)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            self.logger.info(
                "closed a connection from %s: no complete request headers within %g s",
                f"{self.client[0]}:{self.client[1]}" if self.client else "?",
                self.header_timeout_s,
            )
            self.transport.close()


def protocol_with_header_timeout(header_timeout_s: float) -> type[Any]:
    """The protocol class to give uvicorn (``http=``) for this header timeout."""
    if not header_timeout_s > 0:
        raise ValueError(f"header_timeout_s must be > 0, got {header_timeout_s!r}")
    return type(
        "HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": header_timeout_s}
    )
