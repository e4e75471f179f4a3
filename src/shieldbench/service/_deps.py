"""FastAPI dependencies: the service of this app, API-key auth, readiness.

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency on a worker
thread, a thread hop per request that costs more than everything these functions do.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Annotated, Any

from fastapi import Depends, Request

from shieldbench.service._edges import ServiceError, key_matches
from shieldbench.service._state import Service

__all__ = ["ReadyService", "authorized", "get_service", "presented_key", "ready", "serving"]


def _service(request: Request) -> Service:
    service: Service | None = getattr(request.app.state, "service", None)
    if service is None:
        raise ServiceError(503, "not_ready", "the service is starting")
    return service


async def get_service(request: Request) -> Service:
    """The app's service (503 until the lifespan has built it)."""
    return _service(request)


def presented_key(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The API key of raw ASGI headers: ``Authorization: Bearer KEY``, else ``x-api-key``
    (the first of each header, as Starlette's ``Headers.get`` reads it)."""
    api_key = authorization = None
    for name, value in headers:
        if name == b"x-api-key" and api_key is None:
            api_key = value.decode("latin-1")
        elif name == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
    if authorization is not None and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return api_key


def _check_key(request: Request, service: Service) -> None:
    if service.api_keys and not key_matches(presented_key(request.headers.raw), service.api_keys):
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


def serving(scope: MutableMapping[str, Any]) -> Service | None:
    """:func:`ready` for the fast path, on the raw scope: the service when it may answer
    now (built, warmed up, the key valid), else ``None`` (the route then answers)."""
    service: Service | None = getattr(scope["app"].state, "service", None)
    if service is None or not service.guard.ready:
        return None
    if service.api_keys and not key_matches(presented_key(scope["headers"]), service.api_keys):
        return None
    return service
