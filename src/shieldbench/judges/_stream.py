"""Screening a streamed answer over a sliding window of the accumulated tokens."""

from __future__ import annotations

from shieldbench.defenses._protocol import Defense
from shieldbench.errors import ConfigError
from shieldbench.types import Verdict

__all__ = ["StreamScreen"]


class StreamScreen:
    """Feeds an output defense the tail of a growing answer, chunk by chunk.

    Each :meth:`feed` appends a chunk and checks the last ``window`` characters of
    everything received (so a secret split across chunks is still seen whole, as
    long as it is shorter than ``window - step``); the first blocking verdict is
    returned and remembered. :meth:`finish` checks the whole answer once more.

    Example:
        >>> from shieldbench.judges._defenses import SecretsDefense
        >>> screen = StreamScreen(SecretsDefense(), window=200)
        >>> [screen.feed(c) for c in ("key: AKIA4NQ7", "ZR2PLWX8TBKD ok")][1].blocked
        True
    """

    def __init__(self, defense: Defense, *, window: int = 2048) -> None:
        if window < 16:
            raise ConfigError(f"StreamScreen: window must be >= 16 characters, got {window}")
        self.defense = defense
        self.window = window
        self.text = ""
        self.blocked: Verdict | None = None

    def feed(self, chunk: str) -> Verdict | None:
        """The blocking verdict once the answer so far must be stopped, else ``None``."""
        self.text += chunk
        if self.blocked is None:
            verdict = self.defense.check(self.text[-self.window :])
            if verdict.blocked:
                self.blocked = verdict
        return self.blocked

    def finish(self) -> Verdict:
        """The verdict on the whole answer (the first blocking one when there was one)."""
        return self.blocked or self.defense.check(self.text)
