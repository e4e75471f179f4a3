"""A loopback upstream that answers each request with the next scripted reply, byte for byte.

``Replay.script`` is a queue of :class:`Reply`: status, content type and the body as a
list of byte chunks, each written and flushed on its own (so a test chooses where TCP
segments, and hence the proxy's reads, split an SSE stream). Every request body it
receives is recorded raw in ``Replay.received``. With an empty script it answers a
plain chat completion.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CLEAN = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}


@dataclass
class Reply:
    """One scripted answer."""

    chunks: list[bytes]
    status: int = 200
    content_type: str = "application/json"
    pause_s: float = 0.0

    @classmethod
    def json(cls, body: Any, status: int = 200) -> Reply:
        return cls([json.dumps(body).encode()], status=status)

    @classmethod
    def sse(cls, events: list[Any], *, done: bool = True, pause_s: float = 0.0) -> Reply:
        """One SSE event per item (dicts as JSON), then ``[DONE]``."""
        chunks = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events]
        return cls(
            chunks + ([b"data: [DONE]\n\n"] if done else []), 200, "text/event-stream", pause_s
        )


@dataclass
class Replay:
    """The upstream's address, its script and what it received."""

    url: str = ""
    script: list[Reply] = field(default_factory=list)
    received: list[bytes] = field(default_factory=list)
    sent: int = 0  # body chunks written so far, over all replies

    def bodies(self) -> list[Any]:
        return [json.loads(raw) for raw in self.received]


def _handler(record: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            record.received.append(self.rfile.read(int(self.headers["content-length"])))
            reply = record.script.pop(0) if record.script else Reply.json(CLEAN)
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            if reply.content_type == "text/event-stream":
                self.send_header("connection", "close")
                self.close_connection = True
            else:
                self.send_header("content-length", str(sum(map(len, reply.chunks))))
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
                record.sent += 1
                if reply.pause_s:
                    time.sleep(reply.pause_s)

    return Handler


@contextmanager
def replay_upstream() -> Iterator[Replay]:
    """A running :class:`Replay` upstream on 127.0.0.1, stopped at the end."""
    record = Replay()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(record))
    server.daemon_threads = True
    record.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()
