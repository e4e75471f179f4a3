"""The FastAPI application: check, batch, scores-only, LiteLLM guardrail, feedback, stats.

:func:`create_app` builds the app for one configuration; the lifespan wires the
:class:`~shieldbench.service._state.Service` (store, audit writer, screens) and tears it
down gracefully. Handlers reach it through the ``service`` dependency, never a global.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

import orjson
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from shieldbench.service._chat import InvalidMessage, message_text
from shieldbench.service._config import ServeConfig
from shieldbench.service._deps import ReadyService, authorized, get_service, serving
from shieldbench.service._edges import (
    BodyLimit,
    ServiceError,
    error_response,
    install_error_handlers,
)
from shieldbench.service._fastpath import Answered, CheckFastPath, FastPathApp
from shieldbench.service._gate import ApiKeyGate, JsonDepthLimit, json_too_deep
from shieldbench.service._guard import Decision
from shieldbench.service._models import (
    BatchRequest,
    BatchResponse,
    CheckRequest,
    CheckResponse,
    ErrorBody,
    FeedbackRequest,
    FeedbackResponse,
    GuardrailRequest,
    GuardrailResponse,
)
from shieldbench.service._proxy import blocked_message, proxy_router
from shieldbench.service._state import Defenses, Service

__all__ = ["create_app", "get_service"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody} for s in (400, 401, 404, 413, 422, 502, 503, 504)
}
DECISION_HEADER = "x-shieldbench-decision"
_JSON = (b"content-type", b"application/json")
_DECISION = DECISION_HEADER.encode()


@dataclass(frozen=True, slots=True)
class _PlainCheck:
    """``{"text": "..."}`` (with an object ``metadata`` or without): nearly every check
    body, read by orjson without the model's validation (the model accepts exactly these
    bodies with these values; anything else goes to the model)."""

    text: str
    metadata: dict[str, Any]
    messages: None = None


def parse_check(body: bytes) -> _PlainCheck | CheckRequest | None:
    """The check request of a body (the fast path's parser), or ``None`` if it is not one
    (a body nested too deep is not: the application refuses it)."""
    if json_too_deep(body):
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if type(data) is dict and type(data.get("text")) is str:
        metadata = data.get("metadata", {})
        if type(metadata) is dict and len(data) == 1 + ("metadata" in data):
            return _PlainCheck(data["text"], metadata)
    try:
        return CheckRequest.model_validate_json(body)
    except ValidationError:
        return None


def _text_of(item: CheckRequest | _PlainCheck, service: Service) -> str:
    if (item.text is None) == (item.messages is None):
        raise ServiceError(422, "invalid_request", "give exactly one of 'text' or 'messages'")
    text = item.text
    if text is None:
        assert item.messages is not None
        text = _messages_text(item.messages, service)
    if len(text) > service.config.max_text_chars:
        raise ServiceError(
            413,
            "text_too_long",
            f"text has {len(text)} characters; the limit is {service.config.max_text_chars}",
        )
    return text


def _messages_text(messages: Any, service: Service) -> str:
    """The screened text of chat messages (every role not in ``trusted_roles``); 422 for
    a role or a content part type the screen does not know."""
    try:
        return message_text(messages, service.config.trusted_roles)
    except InvalidMessage as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None


async def _decide(
    service: Service,
    item: CheckRequest | _PlainCheck,
    *,
    endpoint: str,
    audit: bool = True,
    count: bool = True,
    text: str | None = None,
) -> Decision:
    """The decision (counted in the metrics unless ``count=False``: the caller counts);
    ``text`` is the item's text when the caller has checked it already."""
    if text is None:
        text = _text_of(item, service)
    try:
        decision = await service.guard.decide(
            text, endpoint=endpoint, metadata=item.metadata, audit=audit
        )
    except ServiceError:
        raise
    except Exception as exc:  # the audit journal could not be written: refuse to answer unlogged
        raise ServiceError(
            503, "audit_unavailable", f"the audit log is unavailable: {exc}"
        ) from exc
    if count:
        service.guard.count(decision, endpoint)
    return decision


#: How long feedback waits for a decision another replica has journalled but not yet
#: moved into the store (its writer moves every 20 ms; longer while the store is slow).
_PEER_WAIT_S = 5.0


async def _find_decision(service: Service, decision_id: str) -> dict[str, Any] | None:
    """The decision's record from the store, whichever replica made it (``None``: unknown
    after :data:`_PEER_WAIT_S`; at once on SQLite, where this process is the only writer)."""
    deadline = time.monotonic() + (_PEER_WAIT_S if service.store.backend != "sqlite" else 0.0)
    while True:
        found = await asyncio.to_thread(service.store.decision, decision_id)
        if found is not None or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(0.05)


_WINDOW = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|h|d)?\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


_WINDOW_PATTERN = r"^(0*[1-9][0-9]*(\.[0-9]+)?|0*\.[0-9]*[1-9][0-9]*)(s|m|h|d)?$"
_MAX_WINDOW_S = 3650 * 86400.0


def parse_window(raw: str) -> float:
    """``300``, ``90s``, ``5m``, ``1h``, ``7d`` -> seconds (> 0; at most ten years)."""
    match = _WINDOW.match(raw)
    if match is None or float(match.group(1)) <= 0:
        raise ServiceError(422, "invalid_request", f"window {raw!r}: use e.g. 300, 5m, 1h or 7d")
    return min(float(match.group(1)) * _UNITS[match.group(2)], _MAX_WINDOW_S)


def create_app(
    config: ServeConfig, defenses: Defenses, *, api_keys: tuple[bytes, ...] = ()
) -> FastAPI:
    """The ASGI app serving ``defenses`` under ``config`` (see the module docstring)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await asyncio.to_thread(Service.build, config, defenses, api_keys=api_keys)
        app.state.service = service
        warm = asyncio.get_running_loop().create_task(service.warm_up())
        try:
            yield
        finally:
            warm.cancel()
            await service.close()

    app = FastPathApp(
        title="shieldbench guard",
        version="1",
        lifespan=lifespan,
        responses=_ERRORS,
        description="Screens texts and chat requests with a shieldbench defense.",
        # No redirect built from the request's Host header: /v1/check/ is a 404.
        redirect_slashes=False,
    )
    install_error_handlers(app)
    # The last added runs first: the API key, then the body's size, then its depth.
    app.add_middleware(JsonDepthLimit)
    app.add_middleware(BodyLimit, limit=config.max_body_bytes)
    app.add_middleware(ApiKeyGate, keys=api_keys)
    app.include_router(proxy_router(DECISION_HEADER))

    async def answer_check(item: CheckRequest, service: Service) -> Response:
        decision = await _decide(service, item, endpoint="check")
        return Response(
            decision.to_bytes(),
            media_type="application/json",
            headers={DECISION_HEADER: decision.id},
        )

    async def fast_check(item: CheckRequest | _PlainCheck, scope: Any) -> Answered | None:
        service = serving(scope)
        if service is None:
            return None  # not ready / 401: the route answers them, as for any request
        try:
            decision = await _decide(service, item, endpoint="check", count=False)
        except ServiceError as exc:
            return Answered.of(error_response(exc.status, exc.kind, str(exc), **exc.extra))
        headers = [_JSON, (_DECISION, decision.id.encode())]
        # The metrics are counted once the answer is out (they are not part of it).
        return Answered(
            200, headers, decision.to_bytes(), partial(service.guard.count, decision, "check")
        )

    app.fast_path = CheckFastPath(  # in front of FastAPI's whole stack
        app.framework,
        path="/v1/check",
        parse=parse_check,
        answer=fast_check,
        admit=lambda scope: serving(scope) is not None,
        limit=config.max_body_bytes,
    )

    @app.post("/v1/check", response_model=CheckResponse)
    async def check(item: CheckRequest, service: ReadyService) -> Response:
        """Screen one text (or the screened roles of ``messages``); the decision is audited."""
        return await answer_check(item, service)

    @app.post("/v1/check/batch", response_model=BatchResponse)
    async def check_batch(batch: BatchRequest, service: ReadyService) -> dict[str, Any]:
        """Screen up to 256 items; each is its own audited decision. Every item is checked
        first: one bad item refuses the batch before any item is screened, audited or counted."""
        texts = []
        for index, item in enumerate(batch.items):
            try:
                texts.append(_text_of(item, service))
            except ServiceError as exc:
                raise ServiceError(
                    exc.status, exc.kind, f"items.{index}: {exc}", **exc.extra
                ) from None
        decisions = await asyncio.gather(
            *(
                _decide(service, item, endpoint="batch", text=text)
                for item, text in zip(batch.items, texts, strict=True)
            )
        )
        return {"results": [d.to_json() for d in decisions]}

    @app.post("/v1/score", response_model=CheckResponse)
    async def score(item: CheckRequest, service: ReadyService) -> dict[str, Any]:
        """The scores-only twin of /v1/check (calibration): nothing is written to the audit log."""
        return (await _decide(service, item, endpoint="score", audit=False)).to_json()

    @app.post("/beta/litellm_basic_guardrail_api", response_model=GuardrailResponse)
    async def litellm_guardrail(request: GuardrailRequest, service: ReadyService) -> JSONResponse:
        """LiteLLM's generic guardrail API: ``BLOCKED`` with a reason, or ``NONE``."""
        text = "\n\n".join(request.texts)
        if request.structured_messages and not text:
            text = _messages_text(request.structured_messages, service)
        item = CheckRequest(
            text=text,
            metadata={
                "litellm_call_id": request.litellm_call_id,
                "input_type": request.input_type,
            },
        )
        decision = await _decide(service, item, endpoint="litellm")
        headers = {DECISION_HEADER: decision.id}
        if decision.blocked:
            # LiteLLM shows the reason to its caller: the rules only when exposed.
            reason = blocked_message(decision, expose_reasons=service.config.expose_reasons)
            body = {"action": "BLOCKED", "blocked_reason": reason}
            return JSONResponse(body, headers=headers)
        return JSONResponse({"action": "NONE", "blocked_reason": None}, headers=headers)

    @app.post("/v1/feedback", response_model=FeedbackResponse)
    async def feedback(item: FeedbackRequest, service: ReadyService) -> dict[str, Any]:
        """Attach a reviewer's ground-truth label to a decision (404 if the id is unknown)."""
        try:  # the decision may still be on its way from the journal to the store
            await asyncio.wait_for(service.writer.flushed(), 10.0)
        except TimeoutError:
            raise ServiceError(
                503, "audit_unavailable", "the audit store is not keeping up"
            ) from None
        found = await _find_decision(service, item.id)
        if found is None or found.get("kind") != "decision":
            raise ServiceError(404, "not_found", f"no decision with id {item.id!r}")
        await asyncio.to_thread(
            service.store.add_feedback, item.id, item.label, reviewer=item.reviewer, note=item.note
        )
        return {"id": item.id, "label": item.label, "stored": True}

    @app.get("/v1/stats")
    async def stats(
        service: Annotated[Service, Depends(authorized)],
        window: Annotated[str, Query(max_length=24, pattern=_WINDOW_PATTERN)] = "1h",
    ) -> dict[str, Any]:
        """Rolling metrics over the window; precision/recall/FPR from feedback (Wilson 95%)."""
        return await asyncio.to_thread(service.stats, parse_window(window))

    @app.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "exposition text"}},
    )
    async def metrics(service: Annotated[Service, Depends(authorized)]) -> Response:
        """Prometheus text exposition."""
        return Response(service.metrics.scrape(), media_type="text/plain; version=0.0.4")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Alive."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """Ready: the defenses are built and warmed up (503 until then)."""
        service: Service | None = getattr(request.app.state, "service", None)
        if service is None or not service.guard.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "defense": service.guard.inline.name})

    return app
