"""What a benchmark tells its caller while it runs: :class:`BenchmarkEvents`.

The library never prints. :func:`~shieldbench.benchmark.run_benchmark` calls the
methods of a :class:`BenchmarkEvents` at each step; the base class does nothing, so
a caller overrides only what it shows (``shieldbench run`` draws them on the
terminal, the monitor stays silent, a notebook could log them).

Example:
    >>> class Log(BenchmarkEvents):
    ...     def job_reused(self, job, path):
    ...         print(f"{job.defense} on {job.dataset}: reused")
    >>> isinstance(Log(), BenchmarkEvents)
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shieldbench.benchmark._plan import BenchmarkJob
    from shieldbench.datasets import Dataset, SampleSizeWarning
    from shieldbench.engine import ProgressHook

__all__ = ["BenchmarkEvents"]


class BenchmarkEvents:
    """Hooks called by a running benchmark, in this order; each does nothing here."""

    def dataset_loaded(
        self, spec: str, dataset: Dataset, warnings: Sequence[SampleSizeWarning]
    ) -> None:
        """A dataset is loaded; ``warnings`` are its categories too small for the margin."""

    def lock_taken_over(self, folder: Path, holder: Mapping[str, Any]) -> None:
        """The folder's lock was left by a process that is gone (``holder``: pid, host, since)."""

    def started(self, folder: Path, benchmark_id: str) -> None:
        """The output folder is ready (its manifest written or checked)."""

    def job_reused(self, job: BenchmarkJob, path: Path) -> None:
        """``job``'s finished run file at ``path`` holds the same measurement: reused."""

    def job_progress(
        self, job: BenchmarkJob, total: int
    ) -> AbstractContextManager[ProgressHook | None]:
        """A context around ``job``'s run giving the engine's ``hook(done, total)``."""
        return nullcontext(None)

    def job_resumed(self, job: BenchmarkJob, reused: int, total: int) -> None:
        """``job`` continued from its checkpoint: ``reused`` of ``total`` outcomes came from it."""
