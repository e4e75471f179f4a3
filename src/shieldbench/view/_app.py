"""The FastAPI application: routers per page area, packaged assets, errors as pages."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.staticfiles import StaticFiles

from shieldbench.errors import StatisticsError, StoreError
from shieldbench.store import Store
from shieldbench.view import _attacks, _compare, _runs, _samples, _trend
from shieldbench.view._pages import BadRequest, Unreadable, page
from shieldbench.view._security import Guard

__all__ = ["create_app"]


def create_app(store: Store, *, token: str | None = None) -> FastAPI:
    """The viewer over ``store`` (open it with ``open_store(..., read_only=True)``).

    ``token``: when given, every request must carry it (see
    :mod:`shieldbench.view._security`); without one only loopback ``Host`` names are
    answered. The app never writes: it only calls the store's read methods.
    """
    app = FastAPI(
        title="shieldbench view",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.store = store
    for module in (_runs, _samples, _compare, _trend, _attacks):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(packages=[("shieldbench.view", "static")]), name="static")
    app.add_middleware(BaseHTTPMiddleware, dispatch=Guard(token))

    @app.exception_handler(StoreError)
    async def _not_found(request: Request, error: StoreError) -> Response:
        return _problem(request, 404, "Not found", str(error))

    @app.exception_handler(BadRequest)
    async def _bad(request: Request, error: BadRequest) -> Response:
        return _problem(request, 400, "Bad request", str(error))

    @app.exception_handler(Unreadable)
    async def _unreadable(request: Request, error: Unreadable) -> Response:
        return _problem(request, 422, "Unreadable record", str(error))

    @app.exception_handler(StatisticsError)
    async def _incomparable(request: Request, error: StatisticsError) -> Response:
        # e.g. two runs whose records claim the same data but hold other sample ids
        return _problem(request, 422, "Cannot compare these records", str(error))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> Response:
        lines = [
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'invalid')}"
            for e in error.errors()
        ]
        return _problem(request, 400, "Bad request", "; ".join(lines))

    return app


def _problem(request: Request, status: int, title: str, message: str) -> Response:
    """The error as a page, or for a JSON route (``/api/...``) as
    ``{"status", "error", "message"}``: what is wrong, naming the record or parameter."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"status": status, "error": title, "message": message}, status)
    return page(request, "problem.html", status_code=status, title=title, message=message)
