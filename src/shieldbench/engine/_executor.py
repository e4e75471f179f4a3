"""Where checks run: the contract an executor other than the local engine fulfils."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shieldbench.engine._progress import Reporter
from shieldbench.engine._threads import Sink
from shieldbench.types import Outcome, RunConfig

__all__ = ["Executor"]


class Executor(Protocol):
    """Screens texts somewhere else (a Ray cluster) and streams outcomes back.

    :meth:`execute` fills ``results[i]`` for every ``i`` in ``positions`` with the
    outcome of ``texts[i]`` (sample id ``ids[i]``), exactly once each; it hands every
    outcome to ``sink`` (the checkpoint) as it arrives and tells ``reporter`` the
    number done, adding them to ``reporter.base`` at the end. It returns the
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
        results: list[Outcome | None],
        sink: Sink | None,
        reporter: Reporter | None,
    ) -> str: ...
