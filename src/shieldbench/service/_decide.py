"""One decision for one request item, shared by every route that screens a text.

The check routes, the fast path in front of them and the LiteLLM guardrail all read an
item the same way (exactly one of ``text`` or ``messages``; the screened roles of the
messages; the text length limit) and ask the guard the same way: a journal that cannot
be written is a 503 ``audit_unavailable``, never an unlogged answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from shieldbench.service._chat import InvalidMessage, message_text
from shieldbench.service._edges import ServiceError
from shieldbench.service._gate import json_too_deep
from shieldbench.service._guard import Decision
from shieldbench.service._models import CheckRequest
from shieldbench.service._state import Service

__all__ = ["DECISION_HEADER", "PlainCheck", "decide", "messages_text", "parse_check", "text_of"]

#: The header every screening answer carries: the id of its decision in the audit log.
DECISION_HEADER = "x-shieldbench-decision"


@dataclass(frozen=True, slots=True)
class PlainCheck:
    """``{"text": "..."}`` (with an object ``metadata`` or without): nearly every check
    body, read by orjson without the model's validation (the model accepts exactly these
    bodies with these values; anything else goes to the model)."""

    text: str
    metadata: dict[str, Any]
    messages: None = None


def parse_check(body: bytes) -> PlainCheck | CheckRequest | None:
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
            return PlainCheck(data["text"], metadata)
    try:
        return CheckRequest.model_validate_json(body)
    except ValidationError:
        return None


def text_of(item: CheckRequest | PlainCheck, service: Service) -> str:
    """The text to screen of one item: 422 unless exactly one of ``text`` and
    ``messages`` is given, 413 past ``max_text_chars``."""
    if (item.text is None) == (item.messages is None):
        raise ServiceError(422, "invalid_request", "give exactly one of 'text' or 'messages'")
    text = item.text
    if text is None:
        assert item.messages is not None
        text = messages_text(item.messages, service)
    if len(text) > service.config.max_text_chars:
        raise ServiceError(
            413,
            "text_too_long",
            f"text has {len(text)} characters; the limit is {service.config.max_text_chars}",
        )
    return text


def messages_text(messages: Any, service: Service) -> str:
    """The screened text of chat messages (every role not in ``trusted_roles``); 422 for
    a role or a content part type the screen does not know."""
    try:
        return message_text(messages, service.config.trusted_roles)
    except InvalidMessage as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None


async def decide(
    service: Service,
    item: CheckRequest | PlainCheck,
    *,
    endpoint: str,
    audit: bool = True,
    count: bool = True,
    text: str | None = None,
) -> Decision:
    """The decision (counted in the metrics unless ``count=False``: the caller counts);
    ``text`` is the item's text when the caller has checked it already."""
    if text is None:
        text = text_of(item, service)
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
