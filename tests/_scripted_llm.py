"""One scripted OpenAI-compatible chat server on loopback, shared by the scripted models.

:class:`ScriptedServer` is the machinery: an aiohttp app serving
``POST /v1/chat/completions`` on ``127.0.0.1`` (a free port) from a background
thread with its own event loop, started with :meth:`start` and stopped with
:meth:`stop`. A subclass says what to answer by implementing :meth:`answer`
(the request's body -> a response); :func:`completion` builds the usual
``chat.completion`` body. Two subclasses use it:

- ``tests/e2e/scripted_chat.py`` (``ScriptedChat``): the target and judge models
  of the end-to-end tests, answering by markers in the prompt;
- ``tests/attacks/scripted_attacker.py`` (``ScriptedAttacker``): the attacker,
  evaluator and generator of the LLM-driven attack tests.

Both load this file by its path (:func:`load`), so they work under pytest, from
``benchmarks/`` and as scripts alike.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

from aiohttp import web

__all__ = ["ScriptedServer", "completion", "load"]


def completion(text: str, *, model: str | None = None, usage: dict[str, int] | None = None) -> Any:
    """A ``chat.completion`` response body answering ``text`` (with ``usage`` when given)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class ScriptedServer:
    """The server in a background thread; ``url`` is its /v1 base (see the module doc)."""

    thread_name = "scripted-llm"

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """The response to one chat request (a subclass's policy)."""
        raise NotImplementedError

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.answer)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> Any:
        """Start serving; returns the server once its port is known."""
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start within 10 s")
        return self

    def stop(self) -> None:
        async def _down() -> None:
            assert self._runner is not None
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(_down(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def load() -> Any:
    """This module, loaded once by its path under a fixed name (for the scripted models)."""
    name = "shieldbench_tests_scripted_llm"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve())
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
