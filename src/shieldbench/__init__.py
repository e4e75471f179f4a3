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

# Everything but the errors loads on first use (see shieldbench._lazy): the datasets
# and defenses pull in asyncio, the run files and every built-in combinator, and any
# ``shieldbench.X`` import runs this module first, so an eager import here would slow
# down ``import shieldbench``, ``shieldbench --help`` and every small command.
if TYPE_CHECKING:
    from shieldbench.benchmark import Benchmark, BenchmarkConfig, run_benchmark
    from shieldbench.datasets import Dataset, load_dataset
    from shieldbench.defenses import AsyncDefense, BatchDefense, Defense, build_defense
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
else:
    _LAZY = {
        "shieldbench.benchmark": ("Benchmark", "BenchmarkConfig", "run_benchmark"),
        "shieldbench.datasets": ("Dataset", "load_dataset"),
        "shieldbench.defenses": ("AsyncDefense", "BatchDefense", "Defense", "build_defense"),
        "shieldbench.runio": ("load_run", "save_run"),
        "shieldbench.types": (
            "DatasetInfo",
            "DefenseInfo",
            "Outcome",
            "Run",
            "RunConfig",
            "Sample",
            "Verdict",
        ),
    }
    __getattr__ = lazy_attributes(
        globals(), {name: module for module, names in _LAZY.items() for name in names}
    )
    del _LAZY

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


def __dir__() -> list[str]:
    """The module's names, the lazy ones included (they are not in ``globals()`` until
    first used)."""
    return sorted({*globals(), *__all__})
