"""The service's edges: body size limit, API keys, JSON errors.

Every error is JSON in OpenAI's envelope, ``{"error": {"message", "type", "code"}}``,
so OpenAI clients surface it as-is: 400 malformed body, 401 missing/wrong key, 413
body or text too large, 422 a body that parses but has the wrong fields, 503 not ready
or the audit log unavailable.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

__all__ = [
    "BodyLimit",
    "ServiceError",
    "error_response",
    "install_error_handlers",
    "key_matches",
    "read_body",
    "replay_body",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client left before sending it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left: nobody to answer
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already, then defers to the real one."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class ServiceError(Exception):
    """An error answered as JSON with a status, an error type and a message."""

    def __init__(self, status: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.extra = extra


def error_response(
    status: int, kind: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """The JSON error envelope."""
    body = {"error": {"message": message, "type": kind, "code": kind, "param": None, **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


def _too_large(limit: int) -> bytes:
    import json

    body = {
        "error": {
            "message": f"request body larger than {limit} bytes",
            "type": "request_too_large",
            "code": "request_too_large",
            "param": None,
        }
    }
    return json.dumps(body).encode()


class BodyLimit:
    """Pure ASGI middleware: bodies over ``limit`` bytes get 413 before any parsing."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit:
                    await self._reject(send)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _Oversize
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _Oversize:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        body = _too_large(self.limit)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _Oversize(BaseException):
    """Raised from ``receive``; a BaseException so body parsers cannot swallow it as a 400."""


def key_matches(presented: str | None, keys: Iterable[bytes]) -> bool:
    """Constant-time comparison of the presented key against every accepted key."""
    if presented is None:
        return False
    given = presented.encode("utf-8", "surrogateescape")
    ok = False
    for key in keys:  # no early exit: the time does not depend on which key matched
        ok |= hmac.compare_digest(given, key)
    return ok


def install_error_handlers(app: Any) -> None:
    """Malformed bodies, validation errors and HTTP errors answer in the JSON envelope."""

    async def validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "invalid_json", "the request body is not valid JSON")
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        message = f"{where}: {first.get('msg', 'invalid')}"
        return error_response(422, "invalid_request", message)

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        kind = "invalid_body" if exc.status_code == 400 else f"http_{exc.status_code}"
        headers = dict(exc.headers) if exc.headers else None
        return error_response(exc.status_code, kind, str(exc.detail), headers=headers)

    async def service_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        return error_response(exc.status, exc.kind, str(exc), **exc.extra)

    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ServiceError, service_error)
