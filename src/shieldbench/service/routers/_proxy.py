"""The OpenAI-compatible screening proxy: ``POST /v1/chat/completions``.

1. The request is read once, strictly (:func:`._chat.parse_strict`: a key given
   twice, ``NaN`` or nesting past 64 levels is a 400 ``ambiguous_json``); a role
   that is not exactly one of OpenAI's, or a content part of an unknown type, is a
   422. Every message of a role not in ``trusted_roles`` (default: none, so every
   role) and every other field of the request go through the guard, every string
   at any depth (:func:`._chat.request_text`).
2. Blocked: HTTP 400 with OpenAI's error envelope, ``type: "prompt_blocked"`` and the
   ``decision_id``; the request is never forwarded. The caller is told that it was
   blocked and the decision id, not why (the audit log keeps the reasons), unless
   ``expose_reasons: true``.
3. Allowed: the parsed body, re-serialised, is forwarded to
   ``{upstream}/chat/completions`` (what is forwarded is what was screened) with the
   upstream key (``upstream_key_env``; without one, the client's own
   ``Authorization`` is passed on when the service itself has no API keys).
4. The answer goes back through :mod:`._relay`: an allow-list of its fields, every
   kept text screened by the output defense (streams held back by
   :mod:`._outstream`), a malformed answer a 502.
5. Upstream failures: a timeout answers 504, a connection error or a 5xx answers 502,
   each as ``type: "upstream_error"`` with the decision id, and is recorded in the
   audit log (``kind="gateway_error"``).

Every answer carries ``x-shieldbench-decision: <decision id>``.
"""

from __future__ import annotations

import json
import os

import aiohttp
from fastapi import APIRouter, Request
from fastapi.responses import Response

from shieldbench.service._chat import AmbiguousJSON, InvalidMessage, parse_strict, request_text
from shieldbench.service._deps import ReadyService
from shieldbench.service._edges import ServiceError, error_response
from shieldbench.service._guard import Decision
from shieldbench.service._models import ChatRequest
from shieldbench.service._relay import complete, gateway_error, open_stream, upstream_refusal
from shieldbench.service._state import Service

__all__ = ["blocked_message", "proxy_router"]


def _upstream_headers(request: Request, service: Service) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": request.headers.get("accept", "*/*")}
    key = os.environ.get(service.config.upstream_key_env)
    if key:
        headers["authorization"] = f"Bearer {key}"
    elif not service.api_keys and "authorization" in request.headers:
        headers["authorization"] = request.headers["authorization"]
    return headers


def blocked_message(decision: Decision, *, expose_reasons: bool) -> str:
    """What a blocked caller is told: that it was blocked and the decision id; the
    rules that fired only with ``expose_reasons`` (they are an adaptive attacker's oracle)."""
    message = f"the request was blocked by the shieldbench guard (decision {decision.id})"
    if expose_reasons:
        message += f": {', '.join(decision.reasons) or decision.label or 'flagged'}"
    return message


async def _forward(
    request: Request, service: Service, payload: bytes, decision_id: str, stream: bool
) -> Response:
    assert service.upstream is not None
    assert service.config.upstream is not None
    url = service.config.upstream.rstrip("/") + "/chat/completions"
    headers = _upstream_headers(request, service)
    try:
        # No redirects: the screened request (and the upstream key) goes to the upstream only.
        response = await service.upstream.post(
            url, data=payload, headers=headers, allow_redirects=False
        )
    except TimeoutError as exc:
        return await gateway_error(service, decision_id, "timeout", str(exc) or "timed out", 504)
    except aiohttp.ClientError as exc:
        return await gateway_error(service, decision_id, "connect", str(exc) or repr(exc), 502)
    is_sse = "text/event-stream" in response.headers.get("content-type", "")
    if stream and is_sse and response.status < 300:
        return await open_stream(service, response, decision_id)
    try:
        content = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        return await gateway_error(service, decision_id, "timeout", str(exc) or "read", 504)
    finally:
        response.release()
    if response.status >= 500:
        message = f"status {response.status}"
        return await gateway_error(service, decision_id, "status", message, 502)
    if response.status >= 300:
        return await upstream_refusal(service, content, response.status, decision_id)
    # An upstream that ignored "stream": true answered JSON: screened whole, sent as SSE.
    return await complete(service, content, decision_id, as_stream=stream)


def _screened_body(raw: bytes, service: Service) -> tuple[dict[str, object], str]:
    """The request as parsed once, and its screened text (400 / 413 / 422 otherwise)."""
    try:
        body = parse_strict(raw)
    except AmbiguousJSON as exc:
        raise ServiceError(
            400, "ambiguous_json", f"the body cannot be read unambiguously: {exc}"
        ) from None
    if not isinstance(body, dict):
        raise ServiceError(422, "invalid_request", "body: must be a JSON object")
    try:
        text = request_text(body, service.config.trusted_roles)
    except InvalidMessage as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    if len(text) > service.config.max_text_chars:
        raise ServiceError(
            413, "text_too_long", f"text longer than {service.config.max_text_chars} chars"
        )
    return body, text


def proxy_router(header: str) -> APIRouter:
    """The router serving ``POST /v1/chat/completions`` (see the module docstring)."""
    router = APIRouter()

    @router.post(
        "/v1/chat/completions",
        responses={
            200: {
                "description": "the upstream's answer (JSON), or its SSE stream",
                "content": {"application/json": {}, "text/event-stream": {}},
            }
        },
    )
    async def chat_completions(
        chat: ChatRequest, request: Request, service: ReadyService
    ) -> Response:
        """Screen, then forward to the upstream and screen its answer; see the module doc."""
        body, text = _screened_body(await request.body(), service)
        try:
            decision = await service.guard.check(
                text, endpoint="proxy", metadata={"model": chat.model}
            )
        except Exception as exc:  # the audit log could not commit: refuse to answer unlogged
            raise ServiceError(503, "audit_unavailable", f"audit log unavailable: {exc}") from exc
        if decision.blocked:
            expose = service.config.expose_reasons
            extra = {"reasons": list(decision.reasons)} if expose else {}
            return error_response(
                400,
                "prompt_blocked",
                blocked_message(decision, expose_reasons=expose),
                headers={header: decision.id},
                decision_id=decision.id,
                **extra,
            )
        if service.upstream is None:
            raise ServiceError(503, "no_upstream", "no upstream configured (serve --upstream URL)")
        payload = json.dumps(body).encode()  # ASCII: a lone surrogate stays an escape
        return await _forward(request, service, payload, decision.id, chat.stream)

    return router
