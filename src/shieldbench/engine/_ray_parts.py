"""Parts of the Ray executor: the worker actor, and the deadline for frozen workers.

:class:`Screener` runs on the workers (Ray imports this module there by name): it
builds the defense from its spec once and screens batches with the local engine.
:func:`batch_deadline` and :func:`frozen_outcome` are the driver's side of a frozen
worker (see :mod:`shieldbench.engine._ray`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from shieldbench.types import Outcome, RunConfig

__all__ = ["FREEZES", "Screener", "batch_deadline", "frozen_outcome"]

FREEZES = 2
"""A batch that froze this many workers gets ``timeout`` outcomes instead of a third."""


def batch_deadline(config: RunConfig, size: int) -> float | None:
    """The default deadline for a worker to answer: none without a call timeout.

    With ``timeout_s`` each call ends in time on the worker (the local engine
    times it out), so a worker silent for much longer than a batch can take is
    frozen: twice the worst case of a batch, and at least 30 s.
    """
    if config.timeout_s is None:
        return None
    calls = (size * (config.retries + 1) + config.warmup) / max(config.concurrency, 1)
    return max(30.0, 2.0 * calls * config.timeout_s)


class Screener:
    """A Ray actor: builds the defense once, then screens batches with the local engine."""

    def __init__(self, spec: str) -> None:
        from shieldbench.defenses import build_defense

        self._defense = build_defense(spec)
        self._warm = False

    def ready(self) -> tuple[int, str]:
        """``(pid, capability)``: the driver waits for this before sending batches."""
        from shieldbench.engine._execute import capability

        return os.getpid(), capability(self._defense)

    def gpu_ids(self) -> list[Any]:
        """The GPUs Ray assigned to this actor (empty without ``num_gpus``)."""
        import ray

        return list(ray.get_gpu_ids())

    def screen(self, ids: list[str], texts: list[str], config: dict[str, Any]) -> list[Outcome]:
        from shieldbench.engine._execute import execute

        cfg = RunConfig.from_dict(config)
        if self._warm:
            cfg = dataclasses.replace(cfg, warmup=0)
        self._warm = True
        results: list[Outcome | None] = [None] * len(texts)
        execute(self._defense, texts, ids, range(len(texts)), config=cfg, results=results)
        return [o for o in results if o is not None]


def frozen_outcome(sample_id: str, deadline: float, times: int) -> Outcome:
    return Outcome(
        sample_id, None, "timeout",
        f"TimeoutError: the Ray worker screening this text froze (no answer within"
        f" {deadline:g} s) {times} times; each was replaced",
        deadline * 1000.0,
    )  # fmt: skip
