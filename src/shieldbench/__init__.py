"""shieldbench: measure whether an LLM defense actually works.

The public API is small; everything else lives in private modules behind it.

    >>> import shieldbench
    >>> shieldbench.__version__  # doctest: +ELLIPSIS
    '...'
"""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
    "AsyncDefense",
    "BatchDefense",
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
    "save_run",
]
