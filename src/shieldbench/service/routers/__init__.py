"""The service's routes, one router per area (FastAPI's "bigger applications" layout).

- :func:`check_router`: ``POST /v1/check``, ``/v1/check/batch``, ``/v1/score``;
- :func:`litellm_router`: ``POST /beta/litellm_basic_guardrail_api`` (LiteLLM's guardrail);
- :func:`proxy_router`: ``POST /v1/chat/completions`` (the OpenAI-compatible proxy);
- :func:`feedback_router`: ``POST /v1/feedback`` (reviewers' labels);
- :func:`operations_router`: ``GET /v1/stats``, ``/metrics``, ``/healthz``, ``/readyz``.

Each function returns a fresh :class:`fastapi.APIRouter`; handlers reach the running
service through the dependencies of :mod:`shieldbench.service._deps`, never a global,
so one process can hold several applications (the tests do). :func:`check_fast_path`
is not a router: it is the bare-ASGI answer to the common ``POST /v1/check`` that
:func:`shieldbench.service.create_app` puts in front of the whole FastAPI stack.
"""

from __future__ import annotations

from shieldbench.service.routers._check import check_fast_path, check_router
from shieldbench.service.routers._feedback import feedback_router
from shieldbench.service.routers._litellm import litellm_router
from shieldbench.service.routers._operations import operations_router
from shieldbench.service.routers._proxy import blocked_message, proxy_router

__all__ = [
    "blocked_message",
    "check_fast_path",
    "check_router",
    "feedback_router",
    "litellm_router",
    "operations_router",
    "proxy_router",
]
