"""What a request must pass before any route sees it: the API key, then the JSON depth.

Order matters, and it is the order of the checks an unauthenticated client can
observe: with API keys configured, a request without a valid key gets 401 before
its body is read, parsed or measured, on every route (the OpenAPI document and the
``/docs`` and ``/redoc`` pages included) except the probes ``/healthz`` and
``/readyz``. Then a body larger than ``max_body_bytes`` gets 413, and a body whose
objects and arrays nest more than :data:`MAX_JSON_DEPTH` levels deep gets 400
``json_too_deep``, whatever the route and the JSON parser behind it (a parser's own
recursion limit differs from route to route; a stored record must also be
serialisable again).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from shieldbench.service._deps import presented_key
from shieldbench.service._edges import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    error_response,
    key_matches,
    read_body,
    replay_body,
)

__all__ = ["MAX_JSON_DEPTH", "PUBLIC_PATHS", "ApiKeyGate", "JsonDepthLimit", "json_too_deep"]

MAX_JSON_DEPTH = 64
"""Objects and arrays nested deeper than this in a request body are refused (400)."""

PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})
"""The only routes answered without an API key when keys are configured."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_TO_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON ``body`` nests objects/arrays more than ``limit`` levels deep.

    Linear and parser-free (a parser is what deep nesting attacks): escapes are
    dropped, the text between quotes is dropped, what is left is reduced to its
    brackets, and innermost pairs are peeled ``limit`` times. A body with at most
    ``limit`` opening brackets in all is shallow enough without looking further; a
    body that is not JSON is left to the parser (``False`` unless it is deep).
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    outside = b"".join(_ESCAPE.sub(b"", body).split(b'"')[0::2])
    shape = outside.translate(_TO_SQUARE, _NOT_BRACKET)
    for _ in range(limit):
        peeled = shape.replace(b"[]", b"")
        if len(peeled) == len(shape):
            return False
        shape = peeled
    return b"[]" in shape


class ApiKeyGate:
    """Pure ASGI: with keys configured, 401 for a request without a valid key, before
    anything reads its body (every path but :data:`PUBLIC_PATHS`)."""

    def __init__(
        self, app: ASGIApp, *, keys: Collection[bytes], public: Collection[str] = PUBLIC_PATHS
    ) -> None:
        self.app = app
        self.keys = tuple(keys)
        self.public = frozenset(public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.keys
            and scope["path"] not in self.public
            and not key_matches(presented_key(scope["headers"]), self.keys)
        ):
            response = error_response(401, "unauthorized", "missing or invalid API key")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class JsonDepthLimit:
    """Pure ASGI: reads a request's body, answers 400 ``json_too_deep`` if it nests
    more than ``limit`` levels, else hands the body on unchanged."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return
        if json_too_deep(body, self.limit):
            response = error_response(
                400,
                "json_too_deep",
                f"the request body nests objects and arrays more than {self.limit} levels"
                f" deep (the limit); flatten it (metadata included)",
            )
            await response(scope, receive, send)
            return
        await self.app(scope, replay_body(body, receive), send)
