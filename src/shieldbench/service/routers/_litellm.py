"""LiteLLM's generic guardrail API: ``POST /beta/litellm_basic_guardrail_api``.

LiteLLM sends the texts of a call (or its structured messages) and expects ``NONE``
or ``BLOCKED`` with a reason it shows to its caller; the decision is audited like a
check, with LiteLLM's call id and input type as its metadata.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from shieldbench.service._decide import DECISION_HEADER, decide, messages_text
from shieldbench.service._deps import ReadyService
from shieldbench.service._models import CheckRequest, GuardrailRequest, GuardrailResponse
from shieldbench.service.routers._proxy import blocked_message

__all__ = ["litellm_router"]


def litellm_router() -> APIRouter:
    """The router of LiteLLM's guardrail API (see the module docstring)."""
    router = APIRouter()

    @router.post("/beta/litellm_basic_guardrail_api", response_model=GuardrailResponse)
    async def litellm_guardrail(request: GuardrailRequest, service: ReadyService) -> JSONResponse:
        """LiteLLM's generic guardrail API: ``BLOCKED`` with a reason, or ``NONE``."""
        text = "\n\n".join(request.texts)
        if request.structured_messages and not text:
            text = messages_text(request.structured_messages, service)
        item = CheckRequest(
            text=text,
            metadata={
                "litellm_call_id": request.litellm_call_id,
                "input_type": request.input_type,
            },
        )
        decision = await decide(service, item, endpoint="litellm")
        headers = {DECISION_HEADER: decision.id}
        if decision.blocked:
            # LiteLLM shows the reason to its caller: the rules only when exposed.
            reason = blocked_message(decision, expose_reasons=service.config.expose_reasons)
            body = {"action": "BLOCKED", "blocked_reason": reason}
            return JSONResponse(body, headers=headers)
        return JSONResponse({"action": "NONE", "blocked_reason": None}, headers=headers)

    return router
