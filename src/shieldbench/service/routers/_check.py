"""The check routes: ``/v1/check``, ``/v1/check/batch`` and the scores-only ``/v1/score``,
and the fast path that answers the common ``/v1/check`` before FastAPI's stack.

The route ``/v1/check`` stays declared (it makes the OpenAPI document and answers
whatever the fast path lets fall through: a missing key, a body the fast parser does
not take, a service still warming up); :func:`check_fast_path` answers the rest with
the same decision, headers and body.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from shieldbench.service._decide import DECISION_HEADER, PlainCheck, decide, parse_check, text_of
from shieldbench.service._deps import ReadyService, serving
from shieldbench.service._edges import ServiceError, error_response
from shieldbench.service._fastpath import Answered, ASGIApp, CheckFastPath
from shieldbench.service._models import BatchRequest, BatchResponse, CheckRequest, CheckResponse
from shieldbench.service._state import Service

__all__ = ["check_fast_path", "check_router"]

_JSON = (b"content-type", b"application/json")
_DECISION = DECISION_HEADER.encode()


async def _fast_check(item: CheckRequest | PlainCheck, service: Service) -> Answered | None:
    """The fast path's answer: the route's, as two raw ASGI messages (``service`` is
    what :func:`serving` gave the fast path's ``admit``: ready, the key valid)."""
    try:
        decision = await decide(service, item, endpoint="check", count=False)
    except ServiceError as exc:
        return Answered.of(error_response(exc.status, exc.kind, str(exc), **exc.extra))
    headers = [_JSON, (_DECISION, decision.id.encode())]
    # The metrics are counted once the answer is out (they are not part of it).
    return Answered(
        200, headers, decision.to_bytes(), partial(service.guard.count, decision, "check")
    )


def check_fast_path(framework: ASGIApp, *, limit: int) -> CheckFastPath:
    """The fast path of ``POST /v1/check`` in front of ``framework`` (the whole app), for
    bodies up to ``limit`` bytes (see :mod:`shieldbench.service._fastpath`)."""
    return CheckFastPath(
        framework,
        path="/v1/check",
        parse=parse_check,
        answer=_fast_check,
        admit=serving,  # the service, or None: not ready / 401, the route answers them
        limit=limit,
    )


def check_router() -> APIRouter:
    """The router of the check routes (see the module docstring)."""
    router = APIRouter()

    @router.post("/v1/check", response_model=CheckResponse)
    async def check(item: CheckRequest, service: ReadyService) -> Response:
        """Screen one text (or the screened roles of ``messages``); the decision is audited."""
        decision = await decide(service, item, endpoint="check")
        return Response(
            decision.to_bytes(),
            media_type="application/json",
            headers={DECISION_HEADER: decision.id},
        )

    @router.post("/v1/check/batch", response_model=BatchResponse)
    async def check_batch(batch: BatchRequest, service: ReadyService) -> dict[str, Any]:
        """Screen up to 256 items; each is its own audited decision. Every item is checked
        first: one bad item refuses the batch before any item is screened, audited or counted."""
        texts = []
        for index, item in enumerate(batch.items):
            try:
                texts.append(text_of(item, service))
            except ServiceError as exc:
                raise ServiceError(
                    exc.status, exc.kind, f"items.{index}: {exc}", **exc.extra
                ) from None
        decisions = await asyncio.gather(
            *(
                decide(service, item, endpoint="batch", text=text)
                for item, text in zip(batch.items, texts, strict=True)
            )
        )
        return {"results": [d.to_json() for d in decisions]}

    @router.post("/v1/score", response_model=CheckResponse)
    async def score(item: CheckRequest, service: ReadyService) -> dict[str, Any]:
        """The scores-only twin of /v1/check (calibration): nothing is written to the audit log."""
        return (await decide(service, item, endpoint="score", audit=False)).to_json()

    return router
