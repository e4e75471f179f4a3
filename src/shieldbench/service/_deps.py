"""FastAPI dependencies: the service of this app, API-key auth, readiness.

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency on a worker
thread, a thread hop per request that costs more than everything these functions do.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from shieldbench.service._edges import ServiceError, key_matches
from shieldbench.service._state import Service

__all__ = ["ReadyService", "authorized", "get_service", "ready"]


def _service(request: Request) -> Service:
    service: Service | None = getattr(request.app.state, "service", None)
    if service is None:
        raise ServiceError(503, "not_ready", "the service is starting")
    return service


async def get_service(request: Request) -> Service:
    """The app's service (503 until the lifespan has built it)."""
    return _service(request)


def _check_key(request: Request, service: Service) -> None:
    if not service.api_keys:
        return
    headers = request.headers
    presented = headers.get("x-api-key")
    authorization = headers.get("authorization")
    if authorization is not None and authorization[:7].lower() == "bearer ":
        presented = authorization[7:].strip()
    if not key_matches(presented, service.api_keys):
        raise ServiceError(401, "unauthorized", "missing or invalid API key")


async def authorized(request: Request) -> Service:
    """API keys: ``Authorization: Bearer KEY`` (or ``x-api-key``, LiteLLM's header)."""
    service = _service(request)
    _check_key(request, service)
    return service


async def ready(request: Request) -> Service:
    """Authorized and warmed up (one dependency: each level costs per request)."""
    service = _service(request)
    _check_key(request, service)
    if not service.guard.ready:
        raise ServiceError(503, "not_ready", "the defense is still loading")
    return service


ReadyService = Annotated[Service, Depends(ready)]
