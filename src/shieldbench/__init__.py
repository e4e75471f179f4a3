"""shieldbench: measure whether an LLM defense actually works.

The public API is small; everything else lives in private modules behind it.
:func:`run_benchmark` runs a whole benchmark (what ``shieldbench run`` does; see
:mod:`shieldbench.benchmark`); :func:`build_defense`, :func:`load_dataset` and the
engine (:mod:`shieldbench.engine`) are the parts it is made of.

    >>> import shieldbench
    >>> shieldbench.__version__  # doctest: +ELLIPSIS
    '...'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shieldbench._lazy import lazy_attributes
from shieldbench.datasets import Dataset, load_dataset
from shieldbench.defenses import AsyncDefense, BatchDefense, Defense, build_defense
from shieldbench.errors import (
    ConfigError,
    DatasetError,
    DefenseError,
    PluginUnavailableError,
    RunError,
    ShieldbenchError,
    SpecError,
    StatisticsError,
    TransientDefenseError,
)
from shieldbench.runio import load_run, save_run
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)

if TYPE_CHECKING:
    from shieldbench.benchmark import Benchmark, BenchmarkConfig, run_benchmark
else:  # the benchmark machinery loads on first use (see shieldbench._lazy)
    __getattr__ = lazy_attributes(
        globals(),
        dict.fromkeys(("Benchmark", "BenchmarkConfig", "run_benchmark"), "shieldbench.benchmark"),
    )

__version__ = "0.1.0"

__all__ = [
    "AsyncDefense",
    "BatchDefense",
    "Benchmark",
    "BenchmarkConfig",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "DatasetInfo",
    "Defense",
    "DefenseError",
    "DefenseInfo",
    "Outcome",
    "PluginUnavailableError",
    "Run",
    "RunConfig",
    "RunError",
    "Sample",
    "ShieldbenchError",
    "SpecError",
    "StatisticsError",
    "TransientDefenseError",
    "Verdict",
    "__version__",
    "build_defense",
    "load_dataset",
    "load_run",
    "run_benchmark",
    "save_run",
]
