"""Continuous monitoring: re-run suites on a schedule, compare with the history, alert.

:func:`load_monitor_config` reads a strict YAML config (see
``shieldbench.monitor._config`` for every key); :class:`Monitor` runs one cycle at a
time (every defense on every suite, stored in the history with ``source=monitor``
and tags ``monitor=NAME``, ``suite=SUITE``), compares each run with the last run,
a window of runs and a pinned baseline (:func:`compare_runs_for_drift`: a paired
test on the same samples, a two-sample test otherwise, and a minimum effect), and
sends alerts through the configured sinks, with a cool-down read from the history.
A suite with an ``end_to_end:`` section also compares the model's behavioural
profile (:func:`compare_profiles_for_drift`, a drift either way alerts).
``shieldbench monitor --once`` exits 0 (healthy), 1 (an alert condition) or 2.
"""

from __future__ import annotations

from shieldbench.monitor._config import (
    CompareSettings,
    MinEffect,
    MonitorConfig,
    SinkSettings,
    Suite,
    load_monitor_config,
    parse_duration,
)
from shieldbench.monitor._cycle import CycleReport, Monitor, build_sinks
from shieldbench.monitor._detect import Finding, compare_runs_for_drift
from shieldbench.monitor._profile import compare_profiles_for_drift

__all__ = [
    "CompareSettings",
    "CycleReport",
    "Finding",
    "MinEffect",
    "Monitor",
    "MonitorConfig",
    "SinkSettings",
    "Suite",
    "build_sinks",
    "compare_profiles_for_drift",
    "compare_runs_for_drift",
    "load_monitor_config",
    "parse_duration",
]
