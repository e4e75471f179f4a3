"""Run a benchmark from Python: every defense over every dataset, into one folder.

This is what ``shieldbench run`` does, as a library call (the command line only turns
its options into a :class:`BenchmarkConfig`, calls :func:`run_benchmark` and prints
the result)::

    from shieldbench.benchmark import BenchmarkConfig, run_benchmark

    result = run_benchmark(
        BenchmarkConfig(defenses=("pattern",), datasets=("builtin:smoke",)),
        out="reports/smoke",
    )
    result.runs[0].defense.spec, result.reports["html"]

- **Config.** :class:`BenchmarkConfig` is the one benchmark model, the same a
  ``configs/*.yaml`` file is read into (:func:`load_config`); it validates itself,
  and a bad field is a :class:`~shieldbench.errors.ConfigError` naming it.
- **Output folder.** ``benchmark.json`` (what was asked), ``runs/`` (one run file per
  pair), ``checkpoints/`` (pairs in progress) and the reports.
- **Reuse and resume.** ``resume=True`` continues an interrupted benchmark: a pair
  whose run file holds the same measurement (same data, defense spec and version) is
  reused, a pair in progress continues from its checkpoint.
- **Events.** The library never prints: pass a :class:`BenchmarkEvents` subclass
  to hear about each step.
- **End to end.** A config's ``end_to_end:`` section (:class:`EndToEndOptions`)
  sends what the defense lets through to a model; :func:`build_end_to_end` builds
  the engine's plan (the monitor uses it once per cycle).
"""

from __future__ import annotations

from shieldbench.benchmark._e2e import EndToEndOptions, build_end_to_end, close_end_to_end
from shieldbench.benchmark._events import BenchmarkEvents
from shieldbench.benchmark._folder import resume_config
from shieldbench.benchmark._plan import BenchmarkJob
from shieldbench.benchmark._run import Benchmark, BenchmarkInterrupted, run_benchmark
from shieldbench.config import BenchmarkConfig, load_config

__all__ = [
    "Benchmark",
    "BenchmarkConfig",
    "BenchmarkEvents",
    "BenchmarkInterrupted",
    "BenchmarkJob",
    "EndToEndOptions",
    "build_end_to_end",
    "close_end_to_end",
    "load_config",
    "resume_config",
    "run_benchmark",
]
