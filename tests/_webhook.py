"""A real webhook receiver on loopback that records what it gets (``webhook`` fixture).

Registered by ``tests/conftest.py``. ``receiver.fail_next = N`` answers the next N
requests with HTTP 503; ``receiver.delay_s`` sleeps before answering (to exercise
client timeouts). ``receiver.bodies`` are the decoded JSON bodies of the requests it
answered 2xx; ``receiver.attempts`` every request, with its arrival time.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["WebhookReceiver"]


@dataclass
class WebhookReceiver:
    url: str = ""
    fail_next: int = 0
    delay_s: float = 0.0
    bodies: list[Any] = field(default_factory=list)
    attempts: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with receiver.lock:
                receiver.attempts.append(time.monotonic())
                failing = receiver.fail_next > 0
                if failing:
                    receiver.fail_next -= 1
            if receiver.delay_s:
                time.sleep(receiver.delay_s)
            if failing:
                self.send_response(503)
                self.end_headers()
                return
            with receiver.lock:
                receiver.bodies.append(json.loads(body))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

    return Handler


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
