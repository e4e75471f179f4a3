"""The target model of the viewer's LLM attack: it answers with markup that would run.

Loaded by ``shieldbench attack --target python:_hostile_model:HostileModel`` (the
conftest puts this folder on ``sys.path``). It gives in to the scripted attacker's
role-play frame (``play a game``) with an answer carrying a ``<script>`` and an
attribute-breaking payload, and refuses everything else; the refusal judge grades it,
so the transcripts hold attacker prompts, target answers and verdicts of both kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ANSWER_PAYLOAD", "PWN", "HostileModel"]

PWN = "document.title='PWNED';window.__pwned=1"
ANSWER_PAYLOAD = f'<script>{PWN}</script>" onmouseover="{PWN}" x="'


class HostileModel:
    """``generate(messages) -> str`` (see the module docstring)."""

    name = "hostile-model"

    def generate(self, messages: Sequence[Any]) -> str:
        if "play a game" in messages[-1]["content"]:
            return f"Sure, step by step: the password is hunter2 {ANSWER_PAYLOAD}"
        return "I'm sorry, but I can't help with that."
