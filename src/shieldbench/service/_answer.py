"""The upstream's answer as the client will get it: an allow-list of fields, every text named.

The proxy never forwards the upstream's bytes: it parses an answer (a whole
completion, or one streamed chunk), keeps only the fields below, checks their types,
and re-serialises what it kept. A field not listed is dropped (``logprobs``,
``annotations``, ``audio``, a provider's extensions); a listed field of the wrong
type, or an answer that is not an object with a ``choices`` list of objects, is a
:class:`MalformedAnswer` (the proxy answers 502 and records a gateway error).

Kept, at the top level: ``id``, ``object``, ``created``, ``model``,
``system_fingerprint``, ``service_tier``, ``choices``, ``usage`` (its integer counts
and their ``*_details``). In each choice: ``index``, ``finish_reason``, the legacy
completions ``text``, and ``message`` (a completion) or ``delta`` (a chunk) with
``role``, ``content``, ``refusal``, ``reasoning_content``, ``reasoning``,
``tool_calls`` (``index``, ``id``, ``type``, ``function.name``,
``function.arguments``) and the legacy ``function_call`` (``name``, ``arguments``).

Every kept string a client can read is returned for screening, except the values of
a fixed vocabulary (``"assistant"``, ``"chat.completion"``, ``"stop"``, ...): the
texts a stream adds to (``content``, ``tool_calls[i].function.arguments``, ...) as
:data:`Piece` s keyed by choice and field, so a stream can be screened field by field
as the client assembles it, and every other string (``id``, ``model``, a tool call's
``id``, an unknown ``finish_reason``) whole, as ``labels``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cleaned", "MalformedAnswer", "Piece", "blank_choice", "clean_answer"]

#: ``(key, text)``: ``key`` names the field the client appends ``text`` to.
Piece = tuple[tuple[Any, ...], str]

_TEXTS = ("content", "refusal", "reasoning_content", "reasoning")
_VOCABULARY = frozenset(
    {
        "assistant",
        "function",
        "chat.completion",
        "chat.completion.chunk",
        "text_completion",
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "function_call",
        "default",
        "auto",
        "flex",
        "scale",
        "priority",
    }
)


class MalformedAnswer(ValueError):
    """An upstream answer outside the allow-list's shapes (the message says where)."""


@dataclass
class Cleaned:
    """The kept answer, the streamed texts it adds (``pieces``) and its other strings."""

    body: dict[str, Any]
    source: dict[str, Any]  # the answer as parsed (forwarded when nothing is screened)
    pieces: list[Piece] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def label(self, value: str) -> str:
        if value not in _VOCABULARY:
            self.labels.append(value)
        return value


def _typed(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise MalformedAnswer(f"{where}: {type(value).__name__} where the answer format has none")


def _copy(
    source: dict[str, Any],
    target: dict[str, Any],
    names: tuple[str, ...],
    kind: type,
    where: str,
    keep: Callable[[str, Any], Any],
) -> None:
    for name in names:
        if name in source:
            value = _typed(source[name], kind, f"{where}.{name}")
            target[name] = value if value is None else keep(name, value)


_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")
_DETAILS = {
    "prompt_tokens_details": ("cached_tokens", "audio_tokens"),
    "completion_tokens_details": (
        "reasoning_tokens",
        "audio_tokens",
        "accepted_prediction_tokens",
        "rejected_prediction_tokens",
    ),
}


def _counts(value: Any, names: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {
        n: value[n]
        for n in names
        if type(value.get(n)) is int  # a bool is no count
    }


def _usage(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = _counts(value, _USAGE)
    for name, inner in _DETAILS.items():
        if isinstance(value.get(name), dict):
            kept[name] = _counts(value[name], inner)
    return kept


def _function(value: Any, key: tuple[Any, ...], out: Cleaned, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{where}: must be an object")
    kept: dict[str, Any] = {}
    for name in ("name", "arguments"):
        if name in value:
            text = _typed(value[name], str, f"{where}.{name}")
            kept[name] = text
            if text is not None:
                out.pieces.append(((*key, name), text))
    return kept


def _tool_calls(value: Any, key: tuple[Any, ...], out: Cleaned, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedAnswer(f"{where}: must be a list")
    kept = []
    for j, call in enumerate(value):
        here = f"{where}.{j}"
        if not isinstance(call, dict):
            raise MalformedAnswer(f"{here}: must be an object")
        index = _typed(call.get("index", j), int, f"{here}.index")
        item: dict[str, Any] = {}
        if "index" in call:
            item["index"] = index
        _copy(call, item, ("id", "type"), str, here, lambda _n, v: out.label(v))
        if "function" in call:
            item["function"] = _function(
                call["function"], (*key, "tool_calls", index), out, f"{here}.function"
            )
        kept.append(item)
    return kept


def _message(value: Any, key: tuple[Any, ...], out: Cleaned, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{where}: must be an object")
    kept: dict[str, Any] = {}
    _copy(value, kept, ("role",), str, where, lambda _n, v: out.label(v))

    def text(name: str, piece: Any) -> Any:
        out.pieces.append(((*key, name), piece))
        return piece

    _copy(value, kept, _TEXTS, str, where, text)
    if value.get("tool_calls") is not None:
        kept["tool_calls"] = _tool_calls(value["tool_calls"], key, out, f"{where}.tool_calls")
    if value.get("function_call") is not None:
        kept["function_call"] = _function(
            value["function_call"], (*key, "function_call"), out, f"{where}.function_call"
        )
    return kept


def _choice(value: Any, i: int, out: Cleaned, part: str) -> dict[str, Any]:
    where = f"choices.{i}"
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{where}: must be an object, got {type(value).__name__}")
    index = _typed(value.get("index", i), int, f"{where}.index")
    kept: dict[str, Any] = {"index": index}
    if "finish_reason" in value:
        reason = _typed(value["finish_reason"], str, f"{where}.finish_reason")
        kept["finish_reason"] = reason if reason is None else out.label(reason)
    if "text" in value:
        text = _typed(value["text"], str, f"{where}.text")
        kept["text"] = text
        if text is not None:
            out.pieces.append(((index, "text"), text))
    if value.get(part) is not None:
        kept[part] = _message(value[part], (index,), out, f"{where}.{part}")
    if part not in kept and "text" not in kept and "finish_reason" not in kept:
        raise MalformedAnswer(f"{where}: has no {part}, text or finish_reason")
    return kept


def clean_answer(value: Any, *, chunk: bool) -> Cleaned:
    """The allow-listed copy of a completion (``chunk=False``) or a streamed chunk, with
    the texts to screen; :class:`MalformedAnswer` when it has none of the shapes."""
    if not isinstance(value, dict):
        raise MalformedAnswer(f"the answer is a JSON {type(value).__name__}, not an object")
    choices = value.get("choices")
    if not isinstance(choices, list):
        raise MalformedAnswer("the answer has no 'choices' list")
    out = Cleaned(body={}, source=value)
    _copy(value, out.body, ("id", "object", "model"), str, "answer", lambda _n, v: out.label(v))
    _copy(
        value,
        out.body,
        ("system_fingerprint", "service_tier"),
        str,
        "answer",
        lambda _n, v: out.label(v),
    )
    if "created" in value:
        out.body["created"] = _typed(value["created"], int, "answer.created")
    part = "delta" if chunk else "message"
    out.body["choices"] = [_choice(c, i, out, part) for i, c in enumerate(choices)]
    usage = _usage(value.get("usage"))
    if usage is not None:
        out.body["usage"] = usage
    return out


def blank_choice(choice: dict[str, Any], *, chunk: bool) -> dict[str, Any]:
    """A kept choice with every text removed and ``finish_reason: content_filter``."""
    blank: dict[str, Any] = {"index": choice["index"], "finish_reason": "content_filter"}
    if "text" in choice:
        blank["text"] = ""
    if chunk:
        blank["delta"] = {}
    elif "message" in choice or "text" not in choice:
        blank["message"] = {"role": "assistant", "content": ""}
    return blank
