"""The bookkeeping every execution path shares: outcomes into results, checkpoint, progress.

One :class:`Recorder` lives for one engine call (every pass of it: batches, the
text-by-text fallback, a Ray pool), in the thread that owns the call; a run that
screens its dataset in windows keeps one recorder for all of them (``results`` is
the current window's, ``done`` and the progress total count the whole run). The paths
differ only in *how* an outcome is made (inline, worker threads, an event loop,
Ray actors); what happens to it next is here, once:

- ``results[i] = outcome`` (one outcome per position: the paths guarantee that a
  position is recorded once; the thread path claims positions before recording),
- the outcome goes to the ``sink`` (the checkpoint) as it completes,
- ``done`` counts it, and the progress hook hears about it at most every
  :data:`~shieldbench.engine._progress.REPORT_INTERVAL_S` seconds.

Hot loops read ``recorder.report_at`` themselves and call :meth:`Recorder.tick`
only when it is due, so progress costs one float comparison per outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import inf
from typing import Protocol

from shieldbench.engine._progress import ProgressHook, Reporter
from shieldbench.types import Outcome

__all__ = ["Recorder", "Sink"]


class Sink(Protocol):
    """Where finished outcomes go as they complete (the checkpoint writer)."""

    def add(self, outcome: Outcome, position: int | None = None) -> None: ...

    def flush_due(self, now: float) -> None: ...


class Recorder:
    """Records finished outcomes of one engine call; see the module docstring.

    ``done`` starts at the number of positions already filled (restored from a
    checkpoint), so progress counts them.
    """

    __slots__ = ("_ids", "_index", "done", "offset", "report_at", "reporter", "results", "sink")

    def __init__(
        self,
        results: list[Outcome | None],
        sink: Sink | None,
        progress: ProgressHook | None,
        *,
        done: int = 0,
        total: int | None = None,
    ) -> None:
        self.results = results
        self.sink = sink
        self.offset = 0
        self._ids: Sequence[str] = ()
        self._index: dict[str, int] | None = None
        self.done = done
        total = len(results) if total is None else total
        self.reporter = None if progress is None else Reporter(progress, 0, total)
        self.report_at = inf if progress is None else 0.0

    def window(self, results: list[Outcome | None], offset: int, ids: Sequence[str]) -> None:
        """Start a window: ``results[i]`` is dataset position ``offset + i``, sample ``ids[i]``
        (the checkpoint records each outcome's dataset position)."""
        self.results = results
        self.offset = offset
        self._ids = ids
        self._index = None

    def put(self, i: int, outcome: Outcome) -> None:
        """Record the outcome of position ``i`` (not recorded before)."""
        self.results[i] = outcome
        self.done += 1
        if self.sink is not None:
            self.sink.add(outcome, self.offset + i)

    def _position(self, sample_id: str) -> int | None:
        if self._index is None:
            self._index = {s: i for i, s in enumerate(self._ids)}
        i = self._index.get(sample_id)
        return None if i is None else self.offset + i

    def logged(self, outcomes: Iterable[Outcome]) -> None:
        """Count and checkpoint outcomes whose ``results`` slots are already written."""
        sink = self.sink
        n = 0
        for outcome in outcomes:
            n += 1
            if sink is not None:
                sink.add(outcome, self._position(outcome.sample_id))
        self.done += n

    def tick(self, now: float) -> None:
        """Flush the checkpoint and report progress when due."""
        if self.sink is not None:
            self.sink.flush_due(now)
        if now >= self.report_at:
            assert self.reporter is not None
            self.reporter.update(self.done, now)
            self.report_at = self.reporter.next_at

    def force(self) -> None:
        """Report progress now (the first and the last report of a call)."""
        if self.reporter is not None:
            self.reporter.force(self.done)
            self.report_at = self.reporter.next_at

    @property
    def quiet(self) -> bool:
        """Nothing to checkpoint and nobody listening (workers need not queue outcomes)."""
        return self.sink is None and self.reporter is None
