"""Screening a streamed answer as it grows, holding back what may start a secret."""

from __future__ import annotations

from shieldbench.defenses import Defense
from shieldbench.errors import ConfigError
from shieldbench.types import Verdict

__all__ = ["StreamScreen"]


class StreamScreen:
    """Feeds an output defense a growing answer, chunk by chunk, with a hold-back.

    Each :meth:`feed` appends a chunk and screens all of the text not screened yet
    together with the ``holdback`` characters before it (never only a tail: a long
    chunk is screened whole). :attr:`releasable` is how much of the answer may be
    shown: everything but the last ``holdback`` characters, while nothing was
    blocked. So any run of at most ``holdback`` characters is screened whole, in one
    call, before any of it is releasable, and a defense that recognises what it
    blocks from its first ``holdback`` characters (its ``max_match_chars``, the
    default here) never has part of a secret released. The first blocking verdict is
    returned and remembered; :meth:`finish` checks the whole answer once more.

    Example:
        >>> from shieldbench.judges._defenses import SecretsDefense
        >>> screen = StreamScreen(SecretsDefense())
        >>> [screen.feed(c) for c in ("key: AKIA4NQ7", "ZR2PLWX8TBKD ok")][1].blocked
        True
        >>> screen.releasable
        0
    """

    def __init__(self, defense: Defense, *, holdback: int | None = None) -> None:
        declared = getattr(defense, "max_match_chars", None)
        chosen = holdback if holdback is not None else declared
        if not isinstance(chosen, int) or chosen < 1:
            raise ConfigError(
                "StreamScreen: give holdback=N (characters, >= 1): the defense declares no"
                " max_match_chars"
            )
        if isinstance(declared, int) and chosen < declared:
            raise ConfigError(
                f"StreamScreen: holdback {chosen} is shorter than what the defense can match"
                f" ({declared} characters)"
            )
        self.defense = defense
        self.holdback = chosen
        self.text = ""
        self.checked = 0
        self.blocked: Verdict | None = None

    @property
    def releasable(self) -> int:
        """How many leading characters of the answer may be shown now."""
        if self.blocked is not None:
            return 0
        return max(0, self.checked - self.holdback)

    def feed(self, chunk: str) -> Verdict | None:
        """The blocking verdict once the answer so far must be stopped, else ``None``."""
        self.text += chunk
        if self.blocked is None:
            window = self.text[max(0, self.checked - self.holdback) :]
            self.checked = len(self.text)
            verdict = self.defense.check(window)
            if verdict.blocked:
                self.blocked = verdict
        return self.blocked

    def finish(self) -> Verdict:
        """The verdict on the whole answer (the first blocking one when there was one)."""
        return self.blocked or self.defense.check(self.text)
