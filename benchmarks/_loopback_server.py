"""A tiny HTTP/1.1 guard API on loopback for benchmarks: every answer takes ``DELAY_S``.

``python benchmarks/_loopback_server.py [DELAY_S]`` prints the port it listens on,
then serves until killed. Connections are kept alive; each request is answered
``DELAY_S`` after it arrived, by a timer on the event loop, so the server answers
as many concurrent requests as there are connections without queueing them.

It is a bare :class:`asyncio.Protocol` (no streams, no task per connection) and
imports nothing but the standard library, so it starts fast and runs in its own
process. On a 2-core machine its CPU competes with the client being measured, so
the harness must stay cheap: measured ~0.075 ms of CPU per request (kernel time
included) at 64 connections, against ~0.08-0.11 ms for the asyncio-streams
version it replaced.

Every request gets ``{"blocked": false, "score": 0.1}``; with a second argument
``chat`` (``_loopback_server.py 0 chat``) a one-choice chat completion instead, for the
screening proxy (which forwards only answers of OpenAI's shapes).
"""

from __future__ import annotations

import asyncio
import sys

GUARD_BODY = b'{"blocked": false, "score": 0.1}'
CHAT_BODY = (
    b'{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",'
    b' "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},'
    b' "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2,'
    b' "total_tokens": 7}}'
)


def _response(body: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    return head % len(body) + body


RESPONSE = _response(CHAT_BODY if sys.argv[2:3] == ["chat"] else GUARD_BODY)


class Guard(asyncio.Protocol):
    """One connection: parse requests as they arrive, answer each ``delay_s`` later, in order."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.last_due = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            length = 0
            for line in buffer[:end].split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if len(buffer) < end + 4 + length:
                break  # the body is still coming
            buffer = buffer[end + 4 + length :]
            loop = asyncio.get_running_loop()
            due = max(loop.time() + self.delay_s, self.last_due)  # pipelined: keep the order
            self.last_due = due
            loop.call_at(due, self.answer)
        self.buffer = buffer

    def answer(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(RESPONSE)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Guard(delay_s), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.020))
