"""``run``'s terminal: what a running benchmark shows, as :class:`TerminalEvents`.

:func:`shieldbench.benchmark.run_benchmark` never prints; it calls these hooks at
each step (a dataset loaded, the folder ready, a pair reused, in progress or
resumed), and ``run`` draws them with rich: results on stdout, progress and
warnings on stderr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from shieldbench.benchmark import BenchmarkEvents, BenchmarkJob
from shieldbench.cli._app import console, err_console
from shieldbench.cli._console import progress
from shieldbench.cli._run_tables import print_size_warnings

if TYPE_CHECKING:
    from shieldbench.datasets import Dataset, SampleSizeWarning
    from shieldbench.engine import ProgressHook

__all__ = ["TerminalEvents"]


class TerminalEvents(BenchmarkEvents):
    """The benchmark's steps on the terminal, as ``shieldbench run`` shows them."""

    def dataset_loaded(
        self, spec: str, dataset: Dataset, warnings: Sequence[SampleSizeWarning]
    ) -> None:
        counts = dataset.label_counts()
        console.print(
            f"dataset [bold]{spec}[/]: {len(dataset)} samples ({counts['attack']} attack,"
            f" {counts['benign']} benign), version {dataset.content_hash[:19]}…",
            highlight=False,
        )
        print_size_warnings(warnings)

    def lock_taken_over(self, folder: Path, holder: Mapping[str, Any]) -> None:
        err_console.print(
            f"{escape(str(folder))}: took over the lock left by a run that is no longer"
            f" running (pid {holder.get('pid')} on {holder.get('host')} since"
            f" {holder.get('since')})",
            highlight=False,
        )

    def started(self, folder: Path, benchmark_id: str) -> None:
        where = escape(str(folder))
        console.print(f"writing to [bold]{where}[/] (resume with --out {where} --resume)")

    def job_reused(self, job: BenchmarkJob, path: Path) -> None:
        console.print(f"[dim]{job.defense} on {job.dataset}: already done, reusing {path}")

    def job_progress(
        self, job: BenchmarkJob, total: int
    ) -> AbstractContextManager[ProgressHook | None]:
        return progress(err_console, f"{job.defense} · {job.dataset}", total)

    def job_resumed(self, job: BenchmarkJob, reused: int, total: int) -> None:
        label = f"{job.defense} · {job.dataset}"
        console.print(
            f"[dim]{escape(label)}: resumed, reused {reused} of {total} outcomes from"
            f" the checkpoint, screened {total - reused}",
            highlight=False,
        )
