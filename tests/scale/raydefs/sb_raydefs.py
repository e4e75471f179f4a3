"""Defenses for the Ray tests, importable on Ray workers (the tests put this folder on
PYTHONPATH before Ray starts, so the workers it spawns find it)."""

from __future__ import annotations

import os
import signal
import time
import zlib
from pathlib import Path

from shieldbench.errors import TransientDefenseError
from shieldbench.types import Verdict

_seen: set[str] = set()


class Mixed:
    """Deterministic verdicts, an error, a transient error retried once, and a hang."""

    name = "mixed"

    def check(self, text: str) -> Verdict:
        if "boom" in text:
            raise ValueError("cannot parse")
        if "flaky" in text and text not in _seen:
            _seen.add(text)
            raise TransientDefenseError("try again", retry_after_s=0.0)
        if "hang" in text:
            time.sleep(3.0)
        score = (zlib.crc32(text.encode()) % 1000) / 1000.0
        return Verdict(blocked=score >= 0.5 or "ignore" in text.lower(), score=score)


class Freezer:
    """Freezes its own worker process (SIGSTOP: alive, silent) on a text with "freeze".

    With ``once`` (a file path) only the first worker to meet it freezes; the
    replacement screens it normally. Without, every worker that meets it freezes.
    """

    name = "freezer"

    def __init__(self, once: str = "") -> None:
        self.once = once

    def check(self, text: str) -> Verdict:
        if "freeze" in text and not (self.once and Path(self.once).exists()):
            if self.once:
                Path(self.once).touch()
            os.kill(os.getpid(), signal.SIGSTOP)
        return Verdict(blocked="ignore" in text.lower(), score=0.5)


class Slow:
    """Sleeps ``ms`` per text (a model releasing the GIL).

    Notes its pid in the folder ``pids`` and, on a Ray worker, its node id in ``nodes``.
    """

    name = "slow"

    def __init__(self, ms: float = 5.0, pids: str = "", nodes: str = "") -> None:
        self.delay = ms / 1000.0
        if pids:
            Path(pids, str(os.getpid())).touch()
        if nodes:
            import ray

            if ray.is_initialized():
                Path(nodes, ray.get_runtime_context().get_node_id()).touch()

    def check(self, text: str) -> Verdict:
        time.sleep(self.delay)
        return Verdict(blocked="ignore" in text.lower(), score=float(len(text) % 7) / 7)
