"""Defenses the service tests load through ``python:`` specs (in the server subprocess)."""

from __future__ import annotations

import os
import time

from shieldbench.types import Verdict


class Keyword:
    """Blocks texts containing ``word``; counts its calls in a file when ``log`` is set."""

    def __init__(self, word: str = "ATTACK", log: str = "", delay: float = 0.0) -> None:
        self.name = "keyword"
        self.word = word
        self.max_match_chars = len(word)  # what it blocks, it finds in len(word) characters
        self.log = log
        self.delay = delay

    def check(self, text: str) -> Verdict:
        if self.log:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        if self.delay:
            time.sleep(self.delay)
        hit = self.word in text
        return Verdict(
            blocked=hit, score=float(hit), reasons=(f"keyword:{self.word}",) if hit else ()
        )


class Faulty:
    """Raises on texts containing RAISE, hangs (``hang`` s) on HANG, else blocks ATTACK."""

    def __init__(self, hang: float = 30.0) -> None:
        self.name = "faulty"
        self.hang = hang

    def check(self, text: str) -> Verdict:
        if "RAISE" in text:
            raise RuntimeError("injected fault")
        if "HANG" in text:
            time.sleep(self.hang)
        hit = "ATTACK" in text
        return Verdict(blocked=hit, score=float(hit))
