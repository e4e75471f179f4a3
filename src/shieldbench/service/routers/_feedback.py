"""Reviewers' labels: ``POST /v1/feedback`` attaches ground truth to a decision.

The decision may have been made by any replica over the same store: feedback first
waits for this replica's own journal to reach the store, then looks the id up in the
store, waiting up to :data:`PEER_WAIT_S` for another replica's writer to move it in.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter

from shieldbench.service._deps import ReadyService
from shieldbench.service._edges import ServiceError
from shieldbench.service._models import FeedbackRequest, FeedbackResponse
from shieldbench.service._state import Service

__all__ = ["PEER_WAIT_S", "feedback_router", "find_decision"]

#: How long feedback waits for a decision another replica has journalled but not yet
#: moved into the store (its writer moves every 20 to 100 ms; longer while the store is slow).
PEER_WAIT_S = 5.0


async def find_decision(service: Service, decision_id: str) -> dict[str, Any] | None:
    """The decision's record from the store, whichever replica made it (``None``: unknown
    after :data:`PEER_WAIT_S`; at once on SQLite, where this process is the only writer)."""
    deadline = time.monotonic() + (PEER_WAIT_S if service.store.backend != "sqlite" else 0.0)
    while True:
        found = await asyncio.to_thread(service.store.decision, decision_id)
        if found is not None or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(0.05)


def feedback_router() -> APIRouter:
    """The router of ``POST /v1/feedback`` (see the module docstring)."""
    router = APIRouter()

    @router.post("/v1/feedback", response_model=FeedbackResponse)
    async def feedback(item: FeedbackRequest, service: ReadyService) -> dict[str, Any]:
        """Attach a reviewer's ground-truth label to a decision (404 if the id is unknown)."""
        try:  # the decision may still be on its way from the journal to the store
            await asyncio.wait_for(service.writer.flushed(), 10.0)
        except TimeoutError:
            raise ServiceError(
                503, "audit_unavailable", "the audit store is not keeping up"
            ) from None
        found = await find_decision(service, item.id)
        if found is None or found.get("kind") != "decision":
            raise ServiceError(404, "not_found", f"no decision with id {item.id!r}")
        await asyncio.to_thread(
            service.store.add_feedback, item.id, item.label, reviewer=item.reviewer, note=item.note
        )
        return {"id": item.id, "label": item.label, "stored": True}

    return router
