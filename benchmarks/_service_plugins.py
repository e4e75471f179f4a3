"""Defenses the ``service_*`` benchmarks load with ``python(_service_plugins:...)`` specs."""

from __future__ import annotations

import time
from collections.abc import Sequence

from shieldbench.types import Verdict


class Slow:
    """Allows everything after sleeping ``delay`` seconds (a model-sized latency)."""

    def __init__(self, delay: float = 0.2) -> None:
        self.name = "slow"
        self.delay = delay

    def check(self, text: str) -> Verdict:
        time.sleep(self.delay)
        return Verdict(blocked=False, score=0.0)


class SlowBatch(Slow):
    """:class:`Slow` that also scores a batch at once, in ``delay`` seconds (a model)."""

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        time.sleep(self.delay)
        return [Verdict(blocked=False, score=0.0) for _ in texts]
