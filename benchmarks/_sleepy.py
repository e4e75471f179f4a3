"""A defense that takes a fixed time per text without using the CPU (a model behind a
call that releases the GIL). Used by ``ray_speed.py``; importable on Ray workers
because that script puts this folder on ``PYTHONPATH`` before Ray starts."""

from __future__ import annotations

import time

from shieldbench.types import Verdict


class Sleepy:
    name = "sleepy"

    def __init__(self, ms: float = 5.0) -> None:
        self.delay = ms / 1000.0

    def check(self, text: str) -> Verdict:
        time.sleep(self.delay)
        return Verdict(blocked="ignore" in text, score=float(len(text) % 10) / 10)
