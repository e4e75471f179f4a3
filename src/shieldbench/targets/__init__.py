"""Targets: the model behind the defense, for end-to-end runs.

A target answers a conversation: ``generate(messages) -> str`` (and optionally
``async agenerate``). Build one from a spec with :func:`build_target`:

- ``openai:MODEL@BASE_URL`` / ``llm:PROVIDER/MODEL``: any OpenAI-compatible chat
  endpoint (Ollama, vLLM, LiteLLM, OpenAI), temperature 0 by default, API key from
  the environment only;
- ``python:MODULE:ATTRIBUTE``: a local object, function or factory.

The engine sends each sample that the input defense let through as a conversation
(:func:`conversation`): the run's system prompt, which by default carries a fresh
canary token (:func:`new_canary`, :data:`DEFAULT_SYSTEM_PROMPT`), then the sample's
turns. Third-party targets register through the entry-point group
``shieldbench.targets``.

Example:
    >>> from shieldbench.targets import build_target
    >>> t = build_target("python:shieldbench.targets._examples:echo")
    >>> t.generate([{"role": "user", "content": "hi"}])
    'You said: hi'
"""

from __future__ import annotations

from shieldbench.targets._builtin import targets
from shieldbench.targets._openai import ChatTarget, build_chat_target
from shieldbench.targets._protocol import (
    DEFAULT_SYSTEM_PROMPT,
    SCREEN_MODES,
    Message,
    ScreenMode,
    Target,
    conversation,
    new_canary,
    screened_text,
    system_prompt_with,
)
from shieldbench.targets._python import FunctionTarget

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "SCREEN_MODES",
    "ChatTarget",
    "FunctionTarget",
    "Message",
    "ScreenMode",
    "Target",
    "build_chat_target",
    "build_target",
    "conversation",
    "new_canary",
    "screened_text",
    "system_prompt_with",
    "targets",
]


def build_target(spec: str) -> Target:
    """The target a spec string names (see the module docstring); ``SpecError`` if none."""
    return targets.create(spec)
