"""What operators read: ``/v1/stats``, ``/metrics``, ``/healthz`` and ``/readyz``.

``/v1/stats`` reads its rolling window from the store, so every replica over one
store answers with the same figures; ``/metrics`` is this replica's Prometheus
exposition (each series labelled with the replica). ``/healthz`` answers as soon as
the process serves; ``/readyz`` once the defenses are built and warmed up.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response

from shieldbench.service._deps import authorized
from shieldbench.service._edges import ServiceError
from shieldbench.service._state import Service

__all__ = ["operations_router", "parse_window"]

_WINDOW = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|h|d)?\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
# What the OpenAPI document declares (stricter than the parser: no spaces).
_WINDOW_PATTERN = r"^(0*[1-9][0-9]*(\.[0-9]+)?|0*\.[0-9]*[1-9][0-9]*)(s|m|h|d)?$"
_MAX_WINDOW_S = 3650 * 86400.0


def parse_window(raw: str) -> float:
    """``300``, ``90s``, ``5m``, ``1h``, ``7d`` -> seconds (> 0; at most ten years)."""
    match = _WINDOW.match(raw)
    if match is None or float(match.group(1)) <= 0:
        raise ServiceError(422, "invalid_request", f"window {raw!r}: use e.g. 300, 5m, 1h or 7d")
    return min(float(match.group(1)) * _UNITS[match.group(2)], _MAX_WINDOW_S)


def operations_router() -> APIRouter:
    """The router of the operations routes (see the module docstring)."""
    router = APIRouter()

    @router.get("/v1/stats")
    async def stats(
        service: Annotated[Service, Depends(authorized)],
        window: Annotated[str, Query(max_length=24, pattern=_WINDOW_PATTERN)] = "1h",
    ) -> dict[str, Any]:
        """Rolling metrics over the window; precision/recall/FPR from feedback (Wilson 95%)."""
        return await asyncio.to_thread(service.stats, parse_window(window))

    @router.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "exposition text"}},
    )
    async def metrics(service: Annotated[Service, Depends(authorized)]) -> Response:
        """Prometheus text exposition."""
        return Response(service.metrics.scrape(), media_type="text/plain; version=0.0.4")

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Alive."""
        return {"status": "ok"}

    @router.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """Ready: the defenses are built and warmed up (503 until then)."""
        service: Service | None = getattr(request.app.state, "service", None)
        if service is None or not service.guard.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "defense": service.guard.inline.name})

    return router
