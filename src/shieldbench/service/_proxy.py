"""The OpenAI-compatible screening proxy: ``POST /v1/chat/completions``.

1. The screened roles of ``messages`` go through the guard. Blocked: HTTP 400 with
   OpenAI's error envelope, ``type: "prompt_blocked"`` and the ``decision_id``; the
   request is never forwarded.
2. Allowed: the body is forwarded unchanged to ``{upstream}/chat/completions`` with the
   upstream key (``upstream_key_env``; without one, the client's own ``Authorization``
   is passed on when the service itself has no API keys).
3. Output screening (``output_defense``), non-streaming: the answer's text is screened
   before it is returned. A hit (in ``enforce`` mode) empties every choice's content
   and sets ``finish_reason: "content_filter"`` (HTTP 200, as OpenAI reports its own
   filter); the ``x-shieldbench-output`` header says ``block``.
4. Streaming (``"stream": true``): SSE events are passed through as they arrive when no
   output defense is set. With one, events are held until the text they add has been
   screened: every ``stream_check_every_chars`` new characters the last
   ``stream_window_chars`` characters of the accumulated answer are screened, and the
   held events are released only when clean, so no unscreened text reaches the
   client (the cost: up to ``stream_check_every_chars`` characters of delay). On a
   hit the upstream stream is closed, a final chunk with ``finish_reason:
   "content_filter"`` and ``data: [DONE]`` are sent; what was released before stays
   with the client (it was screened clean in its window).
5. Upstream failures: a timeout answers 504, a connection error or a 5xx answers 502,
   each as ``type: "upstream_error"`` with the decision id, and is recorded in the
   audit log (``kind="gateway_error"``). Upstream 4xx answers are passed through.

Every answer carries ``x-shieldbench-decision: <decision id>``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from shieldbench.service._deps import ReadyService
from shieldbench.service._edges import ServiceError, error_response, message_text
from shieldbench.service._models import ChatRequest
from shieldbench.service._state import Service

__all__ = ["proxy_router"]

_log = logging.getLogger("shieldbench.service.proxy")
_DONE = b"data: [DONE]\n\n"


def _upstream_headers(request: Request, service: Service) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": request.headers.get("accept", "*/*")}
    key = os.environ.get(service.config.upstream_key_env)
    if key:
        headers["authorization"] = f"Bearer {key}"
    elif not service.api_keys and "authorization" in request.headers:
        headers["authorization"] = request.headers["authorization"]
    return headers


async def _gateway_error(
    service: Service, decision_id: str, kind: str, message: str, status: int
) -> JSONResponse:
    service.metrics.gateway_errors.labels(kind).inc()
    _log.warning("upstream %s for decision %s: %s", kind, decision_id, message)
    await service.guard.record(
        {"kind": "gateway_error", "ref": decision_id, "error": kind, "message": message}
    )
    return error_response(
        status,
        "upstream_error",
        f"upstream {kind}: {message}",
        headers={"x-shieldbench-decision": decision_id},
        decision_id=decision_id,
    )


async def _screen_output(
    service: Service, decision_id: str, text: str, *, final: bool
) -> tuple[bool, dict[str, Any]]:
    """Screen answer text; returns (enforce a block?, the audit body). Records when final or hit."""
    assert service.output is not None
    result = await service.output.screen(text)
    flagged = result.verdict.blocked if result.verdict is not None else not service.config.fail_open
    enforce = flagged and service.config.mode == "enforce"
    reasons = list(result.verdict.reasons) if result.verdict is not None else [f"{result.error}"]
    body = {
        "kind": "output",
        "ref": decision_id,
        "decision": "block" if enforce else ("warn" if flagged else "allow"),
        "score": None if result.verdict is None else result.verdict.score,
        "reasons": reasons,
        "chars": len(text),
        "defense": {"name": service.output.name, "version": service.output.version},
    }
    if flagged or final:
        service.metrics.output.labels(body["decision"]).inc()
        await service.guard.record(dict(body))
    return enforce, body


def _answer_text(body: Any) -> str:
    parts = []
    for choice in body.get("choices", []) if isinstance(body, dict) else []:
        content = (choice.get("message") or {}).get("content")
        if isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            yield event + b"\n\n"
    if buffer.strip():
        yield buffer + b"\n\n"


def _delta(event: bytes) -> tuple[str, bool]:
    """The content an SSE event adds, and whether it is ``[DONE]``."""
    text = ""
    for line in event.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return text, True
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        for choice in chunk.get("choices", []) if isinstance(chunk, dict) else []:
            piece = (choice.get("delta") or {}).get("content")
            if isinstance(piece, str):
                text += piece
    return text, False


def _filter_chunk(decision_id: str, output: dict[str, Any]) -> bytes:
    chunk = {
        "id": f"shieldbench-{decision_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}],
        "shieldbench": {"output": output["decision"], "reasons": output["reasons"]},
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _stream(
    service: Service, response: aiohttp.ClientResponse, decision_id: str
) -> AsyncIterator[bytes]:
    cfg = service.config
    held: list[bytes] = []
    answer, fresh = "", 0
    try:
        async for event in _events(response):
            if service.output is None:
                yield event
                continue
            piece, done = _delta(event)
            answer += piece
            fresh += len(piece)
            held.append(event)
            if fresh >= cfg.stream_check_every_chars or done:
                window = answer[-cfg.stream_window_chars :]
                enforce, output = await _screen_output(service, decision_id, window, final=done)
                if enforce:
                    yield _filter_chunk(decision_id, output)
                    yield _DONE
                    return
                fresh = 0
                for item in held:
                    yield item
                held.clear()
        if held:  # the stream ended without [DONE]
            window = answer[-cfg.stream_window_chars :]
            enforce, output = await _screen_output(service, decision_id, window, final=True)
            if enforce:
                yield _filter_chunk(decision_id, output)
                yield _DONE
                return
            for item in held:
                yield item
    except (aiohttp.ClientError, TimeoutError) as exc:
        kind = "timeout" if isinstance(exc, TimeoutError) else "stream_error"
        service.metrics.gateway_errors.labels(kind).inc()
        await service.guard.record(
            {"kind": "gateway_error", "ref": decision_id, "error": kind, "message": str(exc)}
        )
        error = {"error": {"type": "upstream_error", "message": f"upstream {kind}: {exc}"}}
        yield b"data: " + json.dumps(error).encode() + b"\n\n"
    finally:
        response.close()


async def _forward(
    request: Request, service: Service, raw: bytes, decision_id: str, stream: bool
) -> Response:
    assert service.upstream is not None
    assert service.config.upstream is not None
    url = service.config.upstream.rstrip("/") + "/chat/completions"
    headers = _upstream_headers(request, service)
    out_headers = {"x-shieldbench-decision": decision_id}
    try:
        response = await service.upstream.post(url, data=raw, headers=headers)
    except TimeoutError as exc:
        return await _gateway_error(service, decision_id, "timeout", str(exc) or "timed out", 504)
    except aiohttp.ClientError as exc:
        return await _gateway_error(service, decision_id, "connect", str(exc) or repr(exc), 502)
    if response.status >= 300 or not stream:
        try:
            content = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            return await _gateway_error(service, decision_id, "timeout", str(exc) or "read", 504)
        finally:
            response.release()
        if response.status >= 500:
            message = f"status {response.status}"
            return await _gateway_error(service, decision_id, "status", message, 502)
        if response.status >= 300:
            media = response.headers.get("content-type", "application/json")
            return Response(content, response.status, out_headers, media_type=media)
        return await _complete(service, content, decision_id, out_headers)
    return StreamingResponse(
        _stream(service, response, decision_id),
        media_type="text/event-stream",
        headers={**out_headers, "cache-control": "no-cache"},
    )


async def _complete(
    service: Service, content: bytes, decision_id: str, headers: dict[str, str]
) -> Response:
    try:
        body = json.loads(content)
    except ValueError:
        return await _gateway_error(service, decision_id, "invalid_body", "not JSON", 502)
    if service.output is not None:
        enforce, output = await _screen_output(service, decision_id, _answer_text(body), final=True)
        headers["x-shieldbench-output"] = output["decision"]
        if enforce:
            for choice in body.get("choices", []):
                if isinstance(choice.get("message"), dict):
                    choice["message"]["content"] = ""
                choice["finish_reason"] = "content_filter"
    return JSONResponse(body, headers=headers)


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
        """Screen, then forward to the upstream (streaming passed through); see the module doc."""
        raw = await request.body()  # forwarded byte for byte
        text = message_text(chat.messages, service.config.roles)
        if len(text) > service.config.max_text_chars:
            raise ServiceError(
                413, "text_too_long", f"text longer than {service.config.max_text_chars} chars"
            )
        try:
            decision = await service.guard.check(
                text, endpoint="proxy", metadata={"model": chat.model}
            )
        except Exception as exc:  # the audit log could not commit: refuse to answer unlogged
            raise ServiceError(503, "audit_unavailable", f"audit log unavailable: {exc}") from exc
        if decision.blocked:
            return error_response(
                400,
                "prompt_blocked",
                "the request was blocked by the shieldbench guard"
                f" ({', '.join(decision.reasons) or decision.label})",
                headers={header: decision.id},
                decision_id=decision.id,
            )
        if service.upstream is None:
            raise ServiceError(503, "no_upstream", "no upstream configured (serve --upstream URL)")
        return await _forward(request, service, raw, decision.id, chat.stream)

    return router
