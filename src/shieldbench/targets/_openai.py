"""``openai:`` / ``llm:`` targets: a chat model behind an OpenAI-compatible endpoint.

Spec forms (the same endpoint syntax as the ``llm:`` defense)::

    openai:gpt-4o-mini                      OpenAI, key from $OPENAI_API_KEY
    openai:qwen2.5@http://127.0.0.1:8000/v1 any OpenAI-compatible server
    llm:ollama/llama3.2                     provider prefix -> default base URL
    llm(llama3.2, base_url=http://box:11434/v1, api_key_env=KEY, temperature=0,
        max_tokens=512, timeout=60, rpm=120, stream=false)

Requests use temperature 0 unless told otherwise, so a run can be repeated.
``stream=true`` asks for server-sent events and joins the deltas (for servers or
proxies that only stream). API keys come only from the environment variable named
by ``api_key_env`` (``OPENAI_API_KEY`` by default for api.openai.com): the key is
sent in a header, never stored in the run, never printed, and scrubbed from error
messages. Retries, concurrency and the per-call timeout are the engine's
(``RunConfig``): a 429 / 5xx / transport failure raises
:class:`~shieldbench.errors.TransientDefenseError` for the engine to retry;
``rpm`` spaces requests across every thread and event loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shieldbench.defenses.remote import (
    DEFAULT_NET,
    NetOptions,
    Reply,
    chat_client,
    chat_endpoint,
    json_bytes,
)
from shieldbench.errors import DefenseError, SpecError
from shieldbench.spec import Spec
from shieldbench.targets._protocol import Message

__all__ = ["ChatTarget", "build_chat_target", "chat_content"]

_OPTIONS = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "retries",
        "backoff",
        "rpm",
        "temperature",
        "max_tokens",
        "stream",
    }
)


def chat_content(reply: Reply, *, what: str, stream: bool) -> str:
    """The answer text of a chat-completions reply (JSON, or server-sent events).

    >>> chat_content(Reply(200, "OK", {}, b'{"choices":[{"message":{"content":"hi"}}]}'),
    ...              what="t", stream=False)
    'hi'
    >>> sse = b'data: {"choices":[{"delta":{"content":"h"}}]}\\n\\n' \\
    ...       b'data: {"choices":[{"delta":{"content":"i"}}]}\\n\\ndata: [DONE]\\n\\n'
    >>> chat_content(Reply(200, "OK", {}, sse), what="t", stream=True)
    'hi'
    """
    if stream:
        parts: list[str] = []
        for line in reply.text.splitlines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                delta = json.loads(payload)["choices"][0].get("delta") or {}
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                raise DefenseError(
                    f"{what}: a stream event is not a chat chunk: {payload[:120]!r}"
                ) from None
            piece = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(piece, str):
                parts.append(piece)
        return "".join(parts)
    try:
        data = reply.json()
    except ValueError:
        raise DefenseError(f"{what}: the response is not JSON: {reply.text[:120]!r}") from None
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise DefenseError(
            f"{what}: no choices[0].message.content in the response: {reply.text[:160]!r}"
        ) from None
    if content is None:
        return ""
    if not isinstance(content, str):
        raise DefenseError(f"{what}: message content is {type(content).__name__}, not text")
    return content


def _usage(reply: Reply) -> dict[str, int]:
    """``usage.prompt_tokens`` / ``completion_tokens`` of a JSON reply, when integers."""
    try:
        usage = reply.json().get("usage") or {}
    except (ValueError, AttributeError):
        return {}
    if not isinstance(usage, dict):
        return {}
    keys = ("prompt_tokens", "completion_tokens")
    return {k: usage[k] for k in keys if isinstance(usage.get(k), int) and usage[k] >= 0}


class ChatTarget:
    """A chat model over ``POST {base_url}/chat/completions`` (sync and async)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key_env: str | None = None,
        options: NetOptions = DEFAULT_NET,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        stream: bool = False,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.stream = stream
        self.options = options
        self.name = name or f"openai:{model}"
        self._client = chat_client(
            model, base_url=self.base_url, api_key_env=api_key_env, options=options, role="target"
        )
        self._what = self._client.what

    def __repr__(self) -> str:
        return f"ChatTarget(model={self.model!r}, base_url={self.base_url!r})"

    def describe(self) -> dict[str, Any]:
        """What is recorded with the run (no secret: only the key's variable name)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": self.stream,
            "api_key_env": self.api_key_env,
        }

    def _body(self, messages: Sequence[Message]) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": self.temperature,
            "stream": self.stream,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return json_bytes(body)

    def generate(self, messages: Sequence[Message]) -> str:
        body = self._body(messages)
        reply = self._client.post(body)
        return chat_content(reply, what=self._what, stream=self.stream)

    def generate_with_usage(self, messages: Sequence[Message]) -> tuple[str, dict[str, int]]:
        """The answer and the server's token ``usage`` (``{}`` when it reports none).

        For callers that account for tokens (the LLM attackers of
        :mod:`shieldbench.attacks`); a streamed answer reports none.
        """
        body = self._body(messages)
        reply = self._client.post(body)
        text = chat_content(reply, what=self._what, stream=self.stream)
        return text, {} if self.stream else _usage(reply)

    async def agenerate(self, messages: Sequence[Message]) -> str:
        body = self._body(messages)
        reply = await self._client.apost(body)
        return chat_content(reply, what=self._what, stream=self.stream)

    def close(self) -> None:
        self._client.close()


def build_chat_target(spec: Spec, provider: str | None) -> ChatTarget:
    """A :class:`ChatTarget` from an ``openai:`` / ``llm:`` spec (see the module docstring)."""
    spec.check_options(_OPTIONS)
    where = spec.require_arg("MODEL@BASE_URL")
    end = chat_endpoint(spec, where, provider=provider, timeout_default=60.0)
    temperature = spec.float_option("temperature", 0.0)
    max_tokens = spec.int_option("max_tokens")
    if temperature is None or not 0.0 <= temperature <= 2.0:
        raise SpecError(f"{spec.text!r}: temperature must be within [0, 2]")
    if max_tokens is not None and max_tokens < 1:
        raise SpecError(f"{spec.text!r}: max_tokens must be >= 1")
    return ChatTarget(
        end.model,
        base_url=end.base_url,
        api_key_env=end.api_key_env,
        options=end.options,
        temperature=temperature,
        max_tokens=max_tokens,
        stream=spec.bool_option("stream", False),
        name=f"{spec.name}:{where.split('@', 1)[0]}",
    )
