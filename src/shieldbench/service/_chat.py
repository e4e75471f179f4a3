"""Reading a chat request the way its upstream will: one parse, known roles, every text.

What the proxy forwards is exactly what it screened, so the request is read once, by
:func:`parse_strict`, which refuses what two JSON parsers could read differently (a
key given twice in one object, ``NaN`` / ``Infinity``, nesting past
:data:`MAX_DEPTH`), and the upstream gets that parsed value re-serialised, never the
client's bytes.

:func:`request_text` is the text the inline defense screens:

- every message whose role is not in ``trusted_roles`` (default: none trusted, so
  ``system``, ``developer``, ``user``, ``assistant``, ``tool`` and ``function`` are all
  screened). A role must be one of :data:`ROLES` exactly: ``"User"`` or ``"user "``
  are refused (422), not normalised, so the upstream never reads a role the screen
  read differently;
- in such a message, every string at any depth (``content``, each content part's
  ``text`` / ``refusal``, ``name``, ``tool_calls[].function.name`` / ``arguments``,
  ``tool_call_id``, fields OpenAI does not define), and every object key that is not
  a standard field name; a content part's ``type`` must be one of :data:`PART_TYPES`
  (a part without one, or ``"Text"``, is refused); media payloads (a ``data:`` URL,
  ``input_audio.data``, ``file.file_data``) are not text and are not screened;
- every string and non-standard key of the request's other fields (``tools`` and
  their descriptions and JSON schemas, ``response_format``, ``prediction``,
  ``metadata``, ...), whatever the roles.

:func:`message_text` is the same rule for ``/v1/check`` and the LiteLLM API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from shieldbench.errors import ConfigError

__all__ = [
    "MAX_DEPTH",
    "PART_TYPES",
    "ROLES",
    "AmbiguousJSON",
    "InvalidMessage",
    "check_roles",
    "message_text",
    "parse_strict",
    "request_text",
]

#: The roles of OpenAI's chat completions API; any other role is refused.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: Content part types; any other (or none) is refused.
PART_TYPES = ("text", "input_text", "refusal", "image_url", "input_audio", "file")
#: Deepest nesting of a request body that is read (deeper: 400).
MAX_DEPTH = 64

# Field names of OpenAI's chat request (at any depth): a key among them carries no
# text of its own; any other key is screened with the values.
_FIELD_NAMES = (
    "model messages role content name type text refusal image_url url detail "
    "input_audio data format file file_data file_id filename tool_calls id function "
    "arguments tool_call_id function_call tools tool_choice parallel_tool_calls "
    "description parameters strict properties required items enum "
    "additionalProperties anyOf allOf oneOf $ref $defs definitions default title "
    "minimum maximum minItems maxItems minLength maxLength pattern response_format "
    "json_schema schema stream stream_options include_usage temperature top_p n stop "
    "max_tokens max_completion_tokens presence_penalty frequency_penalty logit_bias "
    "logprobs top_logprobs user seed service_tier store metadata modalities audio "
    "voice prediction reasoning_effort verbosity web_search_options "
)
_FIELDS = frozenset(_FIELD_NAMES.split())


class AmbiguousJSON(ValueError):
    """A body two JSON parsers could read differently (the message says where)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise AmbiguousJSON(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise AmbiguousJSON(f"{name} is not JSON")


def parse_strict(raw: bytes) -> Any:
    """The JSON value of ``raw``; :class:`AmbiguousJSON` for a repeated key, ``NaN`` /
    ``Infinity``, nesting deeper than :data:`MAX_DEPTH`, or bytes that are not JSON.

    >>> parse_strict(b'{"a": [1, {"b": "c"}]}')
    {'a': [1, {'b': 'c'}]}
    >>> parse_strict(b'{"content": "x", "content": "hi"}')
    Traceback (most recent call last):
    ...
    shieldbench.service._chat.AmbiguousJSON: the key 'content' appears twice in one object
    """
    try:
        value = json.loads(
            raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant
        )
    except UnicodeDecodeError:
        raise AmbiguousJSON("the body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise AmbiguousJSON(f"not valid JSON: {exc}") from None
    except RecursionError:  # the parser recurses: nesting far past MAX_DEPTH
        raise AmbiguousJSON(f"nested too deep; at most {MAX_DEPTH} levels are read") from None
    deepest = _depth(value) if isinstance(value, (dict, list)) else 0
    if deepest > MAX_DEPTH:
        raise AmbiguousJSON(f"nested {deepest} levels deep; at most {MAX_DEPTH} are read")
    return value


def _depth(value: Any) -> int:
    """How deep containers nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def check_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """``roles`` as a tuple, each one of :data:`ROLES` (else :class:`ConfigError`)."""
    chosen = tuple(roles)
    unknown = [r for r in chosen if r not in ROLES]
    if unknown:
        raise ConfigError(
            f"trusted_roles: unknown role(s) {', '.join(map(repr, unknown))};"
            f" the roles are {', '.join(ROLES)}"
        )
    return chosen


class InvalidMessage(ValueError):
    """A message the screen cannot read as the upstream would (the message says where)."""


def _strings(value: Any) -> Iterator[str]:
    """Every string and non-standard key under ``value``, depth first, in document order."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            children: list[Any] = []
            for key, child in item.items():
                if key not in _FIELDS:
                    children.append(key)
                children.append(child)
            stack.extend(reversed(children))


# A media part's binary payload, not text: the part's field and the prefix that marks it.
_MEDIA = {"image_url": ("url", "data:"), "input_audio": ("data", ""), "file": ("file_data", "")}


def _part_strings(part: dict[str, Any]) -> Iterator[str]:
    """A content part's strings but its type tag and its binary media payload."""
    kind = part["type"]
    for key, value in part.items():
        if key == "type":
            continue
        media = _MEDIA.get(kind)
        if media is not None and key == kind and isinstance(value, dict):
            field, prefix = media
            payload = value.get(field)
            if isinstance(payload, str) and payload[: len(prefix)].lower() == prefix:
                value = {k: v for k, v in value.items() if k != field}
        if key not in _FIELDS:
            yield key
        yield from _strings(value)


def _message_strings(message: dict[str, Any], where: str) -> Iterator[str]:
    """The screened strings of one message (its content part types checked first)."""
    content = message.get("content")
    if isinstance(content, list):
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in PART_TYPES:
                raise InvalidMessage(
                    f"{where}.content.{j}.type: {kind!r} is not a content part type"
                    f" ({', '.join(PART_TYPES)})"
                )
    for key, value in message.items():
        if key == "role":
            continue
        if key not in _FIELDS:
            yield key
        if key == "content" and isinstance(value, list):
            for part in value:
                yield from _part_strings(part)
        else:
            yield from _strings(value)


def _role_of(message: Any, where: str) -> str:
    if not isinstance(message, dict):
        raise InvalidMessage(f"{where}: a message must be an object")
    role = message.get("role")
    if role not in ROLES:
        raise InvalidMessage(f"{where}.role: {role!r} is not a role ({', '.join(ROLES)})")
    assert isinstance(role, str)
    return role


def message_text(messages: Iterable[Any], trusted_roles: Iterable[str] = ()) -> str:
    """The screened text of ``messages`` (see the module docstring), joined by blank lines;
    :class:`InvalidMessage` for an unknown role or content part type."""
    trusted = set(trusted_roles)
    parts: list[str] = []
    for i, message in enumerate(messages):
        item = message if isinstance(message, dict) else _as_dict(message)
        if _role_of(item, f"messages.{i}") in trusted:
            continue
        parts.extend(_message_strings(item, f"messages.{i}"))
    return "\n\n".join(p for p in parts if p)


def _as_dict(message: Any) -> Any:
    dump = getattr(message, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else message


def request_text(body: dict[str, Any], trusted_roles: Iterable[str] = ()) -> str:
    """The screened text of a whole chat request: its messages, then every other field."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidMessage("messages: must be a list of messages")
    parts = [message_text(messages, trusted_roles)]
    for key, value in body.items():
        if key == "messages":
            continue
        if key not in _FIELDS:
            parts.append(key)
        parts.extend(_strings(value))
    return "\n\n".join(p for p in parts if p)
