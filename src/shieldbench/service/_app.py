"""The FastAPI application: the routers of :mod:`shieldbench.service.routers`, assembled.

:func:`create_app` builds the app for one configuration, in layers from the outside in:

1. the fast path (:func:`~shieldbench.service.routers.check_fast_path`), in front of
   everything, answers the common ``POST /v1/check``; whatever it does not take falls
   through to
2. the middlewares: the API key first, then the body's size, then its JSON depth;
3. the routers, one per area: proxy, check, LiteLLM, feedback, operations (this order
   is the order of the OpenAPI document's paths).

The lifespan wires the :class:`~shieldbench.service._state.Service` (store, audit
writer, screens) and tears it down gracefully. Handlers reach it through the
``service`` dependency, never a global.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI

from shieldbench.service._config import ServeConfig
from shieldbench.service._decide import DECISION_HEADER
from shieldbench.service._deps import get_service
from shieldbench.service._edges import BodyLimit, install_error_handlers
from shieldbench.service._fastpath import FastPathApp
from shieldbench.service._gate import ApiKeyGate, JsonDepthLimit
from shieldbench.service._models import ErrorBody
from shieldbench.service._state import Defenses, Service
from shieldbench.service.routers import (
    check_fast_path,
    check_router,
    feedback_router,
    litellm_router,
    operations_router,
    proxy_router,
)

__all__ = ["create_app", "get_service"]

#: Every operation may answer these, each in the error envelope.
_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody} for s in (400, 401, 404, 413, 422, 502, 503, 504)
}


def _lifespan(
    config: ServeConfig, defenses: Defenses, api_keys: tuple[bytes, ...]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Build the service on start (off the event loop), warm it up in the background,
    close it (journal drained, store closed) on shutdown."""

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

    return lifespan


def create_app(
    config: ServeConfig, defenses: Defenses, *, api_keys: tuple[bytes, ...] = ()
) -> FastAPI:
    """The ASGI app serving ``defenses`` under ``config`` (see the module docstring)."""
    app = FastPathApp(
        title="shieldbench guard",
        version="1",
        lifespan=_lifespan(config, defenses, api_keys),
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
    app.include_router(check_router())
    app.include_router(litellm_router())
    app.include_router(feedback_router())
    app.include_router(operations_router())
    app.fast_path = check_fast_path(app.framework, limit=config.max_body_bytes)
    return app
