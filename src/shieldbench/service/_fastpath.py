"""The fast path of ``POST /v1/check``: the common request without the framework's layers.

A check is the service's hot path, and on 2 cores the framework around it cost more
than the check itself. Measured in the server at concurrency 1 (idle machine, per
request, against the benchmark's bare ASGI floor): FastAPI's own stack in front of any
middleware (its telemetry probe, which asks OpenTelemetry for three providers on every
request, the error, exception-telemetry and body-limit middlewares) ~16 us, the
request object, the readiness dependency and Starlette's response ~25 us more.

:class:`FastPathApp` is FastAPI with :class:`CheckFastPath` in front of all of that:
it answers the common request directly (``POST`` to the path, a JSON content type, a
declared length within the body limit, a body ``parse`` accepts (the request model), a valid API
key or none configured, a ready service) with two raw ASGI messages. Anything else
falls through, body and all, to the whole FastAPI application, so every error, status
and message is exactly the framework's, and the OpenAPI document (made from the route)
is unchanged. An :class:`Answered` may carry ``after``: bookkeeping (the metrics) run
once the answer has been handed to the server, in the same task, before anything else
can run on the event loop, so a metrics scrape that follows an answer sees it counted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from starlette.responses import Response
from starlette.types import Receive as _Receive
from starlette.types import Scope as _Scope
from starlette.types import Send as _Send

from shieldbench.service._edges import read_body, replay_body

__all__ = ["ASGIApp", "Answered", "CheckFastPath", "FastPathApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Answered:
    """An answer of the fast path: status, headers (without the length), body, and
    what to run once it is sent."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    after: Callable[[], None] | None = None

    @classmethod
    def of(cls, response: Response) -> Answered:
        """A rendered Starlette response (an error envelope) as an answer."""
        headers = [(k, v) for k, v in response.raw_headers if k != b"content-length"]
        return cls(response.status_code, headers, bytes(response.body))


#: ``parse(body)``: the request item, or ``None`` when the body is not one.
Parse = Callable[[bytes], Any]
#: ``answer(item, admitted)``: the answer, or ``None`` to let the application answer;
#: ``admitted`` is what ``admit`` returned for the request.
Answer = Callable[[Any, Any], Awaitable[Answered | None]]
#: ``admit(scope)``: what the answer needs (the service) when the fast path may read the
#: body (the API key is valid and the service ready); else ``None``, and the application
#: answers (401, 503) without the body being read. Asked once a request: a second look
#: at the scope (the app's state, the headers' key) cost as much as the first.
Admit = Callable[[Scope], Any]


class CheckFastPath:
    """Pure ASGI: ``POST path`` answered by ``answer`` when it can (see the module doc);
    ``app`` answers everything else."""

    def __init__(
        self, app: ASGIApp, *, path: str, parse: Parse, answer: Answer, admit: Admit, limit: int
    ) -> None:
        self.app = app
        self.admit = admit
        self.path = path
        self.parse = parse
        self.answer = answer
        self.limit = limit

    def takes(self, scope: Scope) -> bool:
        """Whether the request is for the fast path's route (it may still fall through)."""
        return bool(
            scope["type"] == "http" and scope["path"] == self.path and scope["method"] == "POST"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted = None
        if self.takes(scope) and self._eligible(scope["headers"]):
            admitted = self.admit(scope)  # checked before the body is read or parsed
        if admitted is None:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return
        answered = None
        if len(body) <= self.limit:
            item = self.parse(body)
            if item is not None:
                answered = await self.answer(item, admitted)
        if answered is None:
            await self.app(scope, replay_body(body, receive), send)
            return
        headers = [*answered.headers, (b"content-length", b"%d" % len(answered.body))]
        await send({"type": "http.response.start", "status": answered.status, "headers": headers})
        await send({"type": "http.response.body", "body": answered.body})
        if answered.after is not None:
            answered.after()

    def _eligible(self, headers: list[tuple[bytes, bytes]]) -> bool:
        json_body = sized = False
        for name, value in headers:
            if name == b"content-type":
                json_body = value.split(b";", 1)[0].strip().lower() == b"application/json"
            elif name == b"content-length":
                sized = value.isdigit() and int(value) <= self.limit
        return json_body and sized


class FastPathApp(FastAPI):
    """FastAPI with an optional :class:`CheckFastPath` in front of its whole stack."""

    fast_path: CheckFastPath | None = None

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        fast = self.fast_path
        if fast is not None and fast.takes(scope):
            scope["app"] = self  # what the framework would set: the fast path reads state
            await fast(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The application without the fast path (where the fast path falls through)."""
        await super().__call__(scope, receive, send)
