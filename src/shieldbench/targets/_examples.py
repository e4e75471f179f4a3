"""Tiny in-process targets for examples, docs and smoke tests."""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.targets._protocol import Message

__all__ = ["echo"]


def echo(messages: Sequence[Message]) -> str:
    """Repeats the last user turn: ``"You said: ..."``."""
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return f"You said: {last}"
