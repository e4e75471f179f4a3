"""Remote defenses: a guard behind a network endpoint.

- ``_http``: ``http:``, any REST guard API with a response-to-verdict mapping.
- ``_llm``, ``_llm_parse``: ``llm:`` / ``openai:``, an LLM as a classifier, its
  prompt and the parsing of its answer.
- ``_chat``: the one OpenAI-compatible chat client (endpoint, key, options), used by
  ``llm:`` and by the ``openai:`` target.
- ``_net``: what both share (secrets, retries, rate limits); ``_clients``: the HTTP
  clients (httpx for ``check``, aiohttp for ``acheck``).
"""

from __future__ import annotations

from shieldbench.defenses.remote._chat import (
    PROVIDERS,
    ChatClient,
    ChatEndpoint,
    chat_client,
    chat_endpoint,
    net_options,
    resolve_endpoint,
)
from shieldbench.defenses.remote._net import DEFAULT_NET, NetOptions, Reply, json_bytes

__all__ = [
    "DEFAULT_NET",
    "PROVIDERS",
    "ChatClient",
    "ChatEndpoint",
    "NetOptions",
    "Reply",
    "chat_client",
    "chat_endpoint",
    "json_bytes",
    "net_options",
    "resolve_endpoint",
]
