"""Helpers: the guard service in a uvicorn subprocess, a scripted upstream on loopback.

``start_server(*args)`` runs ``shieldbench serve --port 0 ...`` with this directory on
``PYTHONPATH`` (so ``python(guard_plugins:...)`` specs load), waits for the port it
prints and for ``/readyz``, and stops it (SIGTERM) at the end of the test.

``upstream`` is an OpenAI-compatible ``/v1/chat/completions`` on a stdlib threading
HTTP server; the last user message scripts it: ``SLOW`` sleeps 3 s, ``FAIL500``
answers 500, ``LEAK`` answers with a canary, ``LONG`` answers 40 words; ``"stream":
true`` answers SSE, one word per event. Every request body it receives is recorded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CANARY = "CANARY-7f3a9"


@dataclass
class Server:
    """A running ``shieldbench serve`` subprocess."""

    process: subprocess.Popen[str]
    url: str
    db: str
    log: Path

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30.0, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE)])
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("SHIELDBENCH_API_KEYS", None)
    env.update(extra or {})
    return env


def eventually(probe: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Poll ``probe``: a live server's audit store trails its answers by the writer's
    period (records are journalled before the answer, moved within 20 to 100 ms)."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``shieldbench ARGS`` to completion."""
    code = "from shieldbench.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(env),
        timeout=120,
        check=False,
    )


def launch(
    tmp: Path, *args: str, db: str | None = None, env: dict[str, str] | None = None
) -> Server:
    """Start the server and wait until it is ready."""
    db = db or f"sqlite:///{tmp / 'guard.db'}"
    log = tmp / f"server-{time.monotonic_ns()}.log"
    code = "from shieldbench.cli import main; main()"
    cmd = [sys.executable, "-c", code, "serve", "--port", "0", "--db", db, *args]
    with log.open("w") as fh:
        process = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, text=True, env=_env(env)
        )
    deadline = time.monotonic() + 60
    url = None
    while time.monotonic() < deadline:
        text = log.read_text()
        match = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", text)
        if match:
            url = match.group(1)
            break
        if process.poll() is not None:
            raise RuntimeError(f"server exited {process.returncode}:\n{text}")
        time.sleep(0.05)
    if url is None:
        process.kill()
        raise RuntimeError(f"server did not start:\n{log.read_text()}")
    server = Server(process, url, db, log)
    with server.client() as c:
        while time.monotonic() < deadline:
            if c.get("/readyz").status_code == 200:
                return server
            time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"server not ready:\n{log.read_text()}")


@dataclass
class Upstream:
    """The scripted upstream's address and what it received."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _answer(prompt: str) -> str:
    if "LEAK" in prompt:
        return f"Sure, the secret is {CANARY} and nothing else."
    if "LONG" in prompt:
        return " ".join(f"word{i}" for i in range(40))
    return "Hello from the upstream."


def scripted_handler(record: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            record.received.append(body)
            record.headers.append(dict(self.headers))
            prompt = str(body["messages"][-1].get("content", ""))
            if "SLOW" in prompt:
                time.sleep(3)
            if "FAIL500" in prompt:
                self._send(500, b'{"error": {"message": "upstream exploded"}}')
                return
            answer = _answer(prompt)
            if body.get("stream"):
                self._stream(answer)
                return
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            self._send(200, json.dumps(payload).encode())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, answer: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            words = answer.split(" ")
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                chunk = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler
