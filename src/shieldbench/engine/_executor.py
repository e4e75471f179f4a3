"""Where checks run: the contract an executor other than the local engine fulfils."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shieldbench.engine._record import Recorder
from shieldbench.types import RunConfig

__all__ = ["Executor"]


class Executor(Protocol):
    """Screens texts somewhere else (a Ray cluster) and streams outcomes back.

    :meth:`execute` records the outcome of ``texts[i]`` (sample id ``ids[i]``) for
    every ``i`` in ``positions`` with ``recorder.put(i, outcome)`` as it arrives,
    exactly once each (the recorder fills the results, writes the checkpoint and
    counts progress), calling ``recorder.tick(now)`` now and then. It returns the
    capability the defense was called with. Timeouts, retries and errors follow
    ``config`` as in the local engine (the Ray executor runs the local engine on each
    worker), so the run, its checkpoint and ``--resume`` do not depend on where a
    check ran.
    """

    def execute(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        positions: Sequence[int],
        *,
        config: RunConfig,
        recorder: Recorder,
    ) -> str: ...
