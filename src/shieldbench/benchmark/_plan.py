"""A benchmark's plan: its jobs, one per (defense, dataset) pair, dataset by dataset.

Jobs are numbered in that order; the number and both specs name the job's run file
and checkpoint (:attr:`BenchmarkJob.slug`), so a resumed benchmark finds them again.

Example:
    >>> from shieldbench.config import BenchmarkConfig
    >>> cfg = BenchmarkConfig(defenses=("pattern", "none"), datasets=("builtin:smoke",))
    >>> [job.slug for job in plan_jobs(cfg)]
    ['00-pattern--builtin-smoke', '01-none--builtin-smoke']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shieldbench.config import BenchmarkConfig

__all__ = ["BenchmarkJob", "plan_jobs"]


@dataclass(frozen=True, slots=True)
class BenchmarkJob:
    """One pair of a benchmark: ``defense`` (spec) over ``dataset`` (spec), number ``index``."""

    index: int
    defense: str
    dataset: str

    @property
    def slug(self) -> str:
        """The file name stem of the job's run file and checkpoint.

        >>> BenchmarkJob(3, "pattern", "jsonl:data/x.jsonl").slug
        '03-pattern--jsonl-data-x.jsonl'
        """
        return f"{self.index:02d}-{_slug(self.defense)}--{_slug(self.dataset)}"


def _slug(spec: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-.")
    return (text or "spec")[:60]


def plan_jobs(cfg: BenchmarkConfig) -> tuple[BenchmarkJob, ...]:
    """Every defense on each dataset, in that order."""
    pairs = [(d, ds) for ds in cfg.datasets for d in cfg.defenses]
    return tuple(BenchmarkJob(i, d, ds) for i, (d, ds) in enumerate(pairs))
