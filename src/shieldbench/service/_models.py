"""Request and response bodies of the service (pydantic; they make the OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

__all__ = [
    "BatchRequest",
    "BatchResponse",
    "ChatRequest",
    "CheckRequest",
    "CheckResponse",
    "ContentPart",
    "DefenseRef",
    "ErrorBody",
    "FeedbackRequest",
    "FeedbackResponse",
    "GuardrailRequest",
    "GuardrailResponse",
    "Message",
]


class ContentPart(BaseModel):
    """One part of a message's content; ``type`` is one of OpenAI's part types, exactly
    (a part without one, or ``"Text"``, is a 422); its other fields are free."""

    model_config = ConfigDict(extra="allow")
    type: Literal["text", "input_text", "refusal", "image_url", "input_audio", "file"]


class Message(BaseModel):
    """An OpenAI-style chat message; ``content`` is a string or a list of parts.

    ``role`` is one of OpenAI's roles, exactly (``"User"`` or ``"user "`` is a 422):
    the screen and the upstream must read the same role."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat completions request; every other field is screened and forwarded
    (the parsed body, re-serialised: a key given twice is refused)."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[Message] = Field(min_length=1)
    # strict: pydantic would read 1 or "yes" as true, but the schema (and OpenAI) say boolean
    stream: StrictBool = False


def _exactly_one(schema: dict[str, Any]) -> None:
    props = schema["properties"]
    props["text"] = {"type": "string", "title": "Text"}
    props["messages"] = {"type": "array", "items": props["messages"]["anyOf"][0]["items"]}
    schema["oneOf"] = [{"required": ["text"]}, {"required": ["messages"]}]


class CheckRequest(BaseModel):
    """``text`` or ``messages`` (exactly one); ``metadata`` is stored with the decision."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_exactly_one)
    text: str | None = None
    messages: list[Message] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _one_of(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [k for k in ("text", "messages") if k in data]
            if len(given) != 1 or data[given[0]] is None:
                raise ValueError("give exactly one of 'text' (a string) or 'messages' (a list)")
        return data


class DefenseRef(BaseModel):
    """Which defense decided."""

    name: str
    version: str | None


class CheckResponse(BaseModel):
    """One decision."""

    id: str = Field(description="decision id: give it to /v1/feedback")
    decision: Literal["allow", "block", "warn"]
    blocked: bool = Field(description="true when the caller must not pass the text on")
    score: float | None
    label: str | None
    reasons: list[str]
    latency_ms: float
    path: str = Field(description="fast | deep (tiered defenses)")
    dedup: Literal["hit", "miss"]
    defense: DefenseRef
    warn: str = Field(description="none | pending | skipped | dropped (dual mode)")
    stripped: list[str] = Field(description="preprocessing steps that changed the text")
    error: str | None = None


class BatchRequest(BaseModel):
    """Up to ``max_batch`` checks in one call."""

    model_config = ConfigDict(extra="forbid")
    items: list[CheckRequest] = Field(min_length=1, max_length=256)


class BatchResponse(BaseModel):
    """The decisions, in the order of the items."""

    results: list[CheckResponse]


class FeedbackRequest(BaseModel):
    """A reviewer's ground truth for one decision."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=40)
    label: Literal["attack", "benign"]
    reviewer: str | None = Field(default=None, max_length=200)
    note: str | None = Field(default=None, max_length=4000)


class FeedbackResponse(BaseModel):
    """Acknowledgement."""

    id: str
    label: str
    stored: bool


class GuardrailRequest(BaseModel):
    """LiteLLM's generic guardrail API request (the fields shieldbench uses; others allowed)."""

    model_config = ConfigDict(extra="allow")
    texts: list[str] = Field(default_factory=list)
    input_type: Literal["request", "response"] = "request"
    litellm_call_id: str | None = None
    litellm_trace_id: str | None = None
    # the chat messages' schema, so the OpenAPI document says what is accepted: a known
    # role, known part types (the same rule as /v1/check's messages)
    structured_messages: list[Message] | None = None
    additional_provider_specific_params: dict[str, Any] | None = None


class GuardrailResponse(BaseModel):
    """``BLOCKED`` (with a reason) or ``NONE``."""

    action: Literal["BLOCKED", "NONE"]
    blocked_reason: str | None = None


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"message", "type", "code", ...}}`` (OpenAI's envelope)."""

    error: dict[str, Any]
