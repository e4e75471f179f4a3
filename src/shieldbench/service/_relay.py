"""The upstream's answer on its way back: kept fields only, screened, or a 502 that says why.

With an output defense, only the allow-list of :mod:`._answer` reaches the client;
without one nothing is screened, and an answer of a valid shape is forwarded whole (as
parsed and re-serialised: ``logprobs`` and extensions included).

- A whole answer (JSON) is cleaned to the allow-list of :mod:`._answer`, every kept
  text is screened in one call, and on a hit (``enforce`` mode) every choice loses
  its texts and gets ``finish_reason: "content_filter"`` (HTTP 200, as OpenAI
  reports its own filter; header ``x-shieldbench-output``). A client that asked for a
  stream from an upstream that answered plain JSON gets the same answer as one SSE
  chunk and ``data: [DONE]``.
- A stream is read event by event; each chunk is cleaned and re-serialised, and with
  an output defense held back by :class:`._outstream.HoldBack`. On a hit the
  upstream stream is closed, the client gets a final chunk with ``finish_reason:
  "content_filter"`` and ``data: [DONE]``.
- Malformed answers: an answer that is not JSON or not of the allow-list's shapes
  (``{"choices": ["x"]}``), a stream whose first event is, or an empty stream,
  answer 502 ``upstream_error`` with the decision id; a malformed event later in a
  stream (after the 200 went out) ends it with an SSE error event. Each is recorded
  (``kind="gateway_error"``, ``error="invalid_body"``).
- An upstream 4xx keeps only its error envelope's ``message``, ``type``, ``code`` and
  ``param``, screened like an answer.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from fastapi.responses import JSONResponse, Response, StreamingResponse

from shieldbench.service._answer import Cleaned, MalformedAnswer, blank_choice, clean_answer
from shieldbench.service._edges import error_response
from shieldbench.service._outstream import EventTooLarge, HoldBack, sse_data, sse_events
from shieldbench.service._state import Service

__all__ = ["complete", "gateway_error", "open_stream", "record_gateway_error", "upstream_refusal"]

_log = logging.getLogger("shieldbench.service.proxy")
_DONE = b"data: [DONE]\n\n"


async def record_gateway_error(service: Service, decision_id: str, kind: str, message: str) -> None:
    """Count and record (``kind="gateway_error"``) an upstream failure."""
    service.metrics.gateway_errors.labels(kind).inc()
    _log.warning("upstream %s for decision %s: %s", kind, decision_id, message)
    await service.guard.record(
        {"kind": "gateway_error", "ref": decision_id, "error": kind, "message": message}
    )


async def gateway_error(
    service: Service, decision_id: str, kind: str, message: str, status: int
) -> JSONResponse:
    """The recorded upstream failure as a JSON error (502 / 504)."""
    await record_gateway_error(service, decision_id, kind, message)
    return error_response(
        status,
        "upstream_error",
        f"upstream {kind}: {message}",
        headers={"x-shieldbench-decision": decision_id},
        decision_id=decision_id,
    )


class _Output:
    """Output screening for one answer: one audit record when flagged first, one at the end."""

    def __init__(self, service: Service, decision_id: str) -> None:
        self.service = service
        self.decision_id = decision_id
        self.flagged_before = False
        self.chars = 0

    async def screen(self, texts: list[str], *, final: bool) -> tuple[bool, dict[str, Any]]:
        """Screen ``texts`` in one call; (enforce a block?, the audit body)."""
        service = self.service
        assert service.output is not None
        text = "\n\n".join(texts)
        self.chars += len(text)
        result = await service.output.screen(text)
        verdict = result.verdict
        flagged = verdict.blocked if verdict is not None else not service.config.fail_open
        enforce = flagged and service.config.mode == "enforce"
        body = {
            "kind": "output",
            "ref": self.decision_id,
            "decision": "block" if enforce else ("warn" if flagged else "allow"),
            "score": None if verdict is None else verdict.score,
            "reasons": list(verdict.reasons) if verdict is not None else [f"{result.error}"],
            "chars": self.chars,
            "defense": {"name": service.output.name, "version": service.output.version},
        }
        if (flagged and not self.flagged_before) or final or enforce:
            service.metrics.output.labels(body["decision"]).inc()
            await service.guard.record(dict(body))
        self.flagged_before = self.flagged_before or flagged
        return enforce, body

    def extension(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the client is told about a block (the reasons only when exposed)."""
        told: dict[str, Any] = {"output": body["decision"], "decision_id": self.decision_id}
        if self.service.config.expose_reasons:
            told["reasons"] = body["reasons"]
        return told


def holdback_of(service: Service) -> int | None:
    """The stream hold-back: ``stream_holdback_chars``, else the output defense's
    ``max_match_chars``, else ``None`` (the whole answer is screened before release)."""
    if service.config.stream_holdback_chars is not None:
        return service.config.stream_holdback_chars
    assert service.output is not None
    declared = getattr(service.output.defense, "max_match_chars", None)
    return declared if isinstance(declared, int) and declared >= 1 else None


def _texts(cleaned: Cleaned) -> list[str]:
    return [text for _, text in cleaned.pieces] + cleaned.labels


def _as_chunk(body: dict[str, Any]) -> bytes:
    chunk = dict(body, object="chat.completion.chunk")
    chunk["choices"] = [
        {("delta" if k == "message" else k): v for k, v in choice.items()}
        for choice in body["choices"]
    ]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def complete(
    service: Service, content: bytes, decision_id: str, *, as_stream: bool
) -> Response:
    """A whole upstream answer, cleaned and screened (see the module docstring)."""
    headers = {"x-shieldbench-decision": decision_id}
    try:
        cleaned = clean_answer(json.loads(content), chunk=False)
    except ValueError as exc:  # not JSON, or a MalformedAnswer
        message = str(exc) if isinstance(exc, MalformedAnswer) else "not JSON"
        return await gateway_error(service, decision_id, "invalid_body", message, 502)
    body = cleaned.body if service.output is not None else cleaned.source
    if service.output is not None:
        output = _Output(service, decision_id)
        enforce, audit = await output.screen(_texts(cleaned), final=True)
        headers["x-shieldbench-output"] = audit["decision"]
        if enforce:  # no text of the answer stays, its id and model included
            body = {
                "id": f"shieldbench-{decision_id}",
                "object": "chat.completion",
                "created": int(time.time()),
                "choices": [blank_choice(c, chunk=False) for c in body["choices"]],
                "shieldbench": output.extension(audit),
            }
    if as_stream:
        chunks = [_as_chunk(body), _DONE]
        return StreamingResponse(_iterate(chunks), media_type="text/event-stream", headers=headers)
    return JSONResponse(body, headers=headers)


async def _iterate(items: list[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def upstream_refusal(
    service: Service, content: bytes, status: int, decision_id: str
) -> JSONResponse:
    """An upstream 3xx / 4xx: its error envelope's kept fields, screened."""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    error = value.get("error") if isinstance(value, dict) else None
    kept = {
        k: error[k]
        for k in ("message", "type", "code", "param")
        if isinstance(error, dict) and type(error.get(k)) in (str, int)  # a bool is no code
    }
    if not isinstance(kept.get("message"), str):
        kept["message"] = f"the upstream answered HTTP {status}"
    if service.output is not None:
        output = _Output(service, decision_id)
        texts = [v for v in kept.values() if isinstance(v, str)]
        enforce, _ = await output.screen(texts, final=True)
        if enforce:
            kept = {
                "message": f"the upstream answered HTTP {status}; its message was withheld"
                " by output screening",
                "type": "upstream_error",
            }
    kept["decision_id"] = decision_id
    return JSONResponse({"error": kept}, status, headers={"x-shieldbench-decision": decision_id})


def _chunk(data: str) -> Cleaned | None:
    """A streamed chunk, cleaned; ``None`` for ``[DONE]``."""
    if data.strip() == "[DONE]":
        return None
    try:
        value = json.loads(data)
    except ValueError:
        raise MalformedAnswer("a stream event whose data is not JSON") from None
    if isinstance(value, dict) and "error" in value and "choices" not in value:
        raise MalformedAnswer("the upstream sent an error event")
    return clean_answer(value, chunk=True)


async def _next_data(events: AsyncIterator[bytes]) -> str | None:
    """The next event's data (events without data, comments, are skipped); None at the end."""
    async for event in events:
        data = sse_data(event)
        if data is not None:
            return data
    return None


_STREAM_ERRORS = (aiohttp.ClientError, TimeoutError, EventTooLarge, MalformedAnswer)


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "invalid_body" if isinstance(exc, (MalformedAnswer, EventTooLarge)) else "stream_error"


async def open_stream(
    service: Service, response: aiohttp.ClientResponse, decision_id: str
) -> Response:
    """Read the first event (a malformed or empty stream is a 502), then relay the rest."""
    events = sse_events(response.content.iter_any())
    try:
        data = await _next_data(events)
        if data is None:
            raise MalformedAnswer("the stream ended before its first event")
        first = _chunk(data)
    except _STREAM_ERRORS as exc:
        response.close()
        status = 504 if isinstance(exc, TimeoutError) else 502
        return await gateway_error(service, decision_id, _error_kind(exc), str(exc), status)
    return StreamingResponse(
        _relay(service, response, events, first, decision_id),
        media_type="text/event-stream",
        headers={"x-shieldbench-decision": decision_id, "cache-control": "no-cache"},
    )


def _sse(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _filtered(decision_id: str, indices: set[int], told: dict[str, Any]) -> bytes:
    chunk = {
        "id": f"shieldbench-{decision_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "choices": [
            {"index": i, "delta": {}, "finish_reason": "content_filter"}
            for i in sorted(indices or {0})
        ],
        "shieldbench": told,
    }
    return _sse(chunk)


async def _relay(
    service: Service,
    response: aiohttp.ClientResponse,
    events: AsyncIterator[bytes],
    cleaned: Cleaned | None,
    decision_id: str,
) -> AsyncIterator[bytes]:
    """The stream's events, cleaned, held back and screened (see the module docstring)."""
    output = None if service.output is None else _Output(service, decision_id)
    holdback = None if output is None else holdback_of(service)
    hold = HoldBack(holdback=holdback, check_every=service.config.stream_check_every_chars)
    indices: set[int] = set()
    try:
        while cleaned is not None:
            indices.update(c["index"] for c in cleaned.body["choices"])
            if output is None:  # nothing screened: the chunk as parsed, whole
                yield _sse(cleaned.source)
            elif hold.add(_sse(cleaned.body), cleaned.pieces, cleaned.labels) and holdback:
                enforce, audit = await output.screen(hold.windows(final=False), final=False)
                if enforce:
                    yield _filtered(decision_id, indices, output.extension(audit))
                    yield _DONE
                    return
                for item in hold.clean(final=False):
                    yield item
            data = await _next_data(events)
            if data is None:
                break  # the upstream ended without [DONE]: what it sent is still screened
            cleaned = _chunk(data)
        if output is not None:
            enforce, audit = await output.screen(hold.windows(final=True), final=True)
            if enforce:
                yield _filtered(decision_id, indices, output.extension(audit))
                yield _DONE
                return
        for item in hold.clean(final=True):
            yield item
        yield _DONE
    except _STREAM_ERRORS as exc:
        await record_gateway_error(service, decision_id, _error_kind(exc), str(exc))
        error = {
            "error": {
                "type": "upstream_error",
                "message": f"upstream {_error_kind(exc)}: {exc}",
                "decision_id": decision_id,
            }
        }
        yield _sse(error)
    finally:
        response.close()
