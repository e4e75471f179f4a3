"""``run_benchmark`` is public at the top level, and loads only when it is used."""

from __future__ import annotations

import subprocess
import sys

import shieldbench
import shieldbench.benchmark as benchmark


def test_the_top_level_names_are_the_benchmark_packages() -> None:
    for name in ("Benchmark", "BenchmarkConfig", "run_benchmark"):
        assert name in shieldbench.__all__
        assert getattr(shieldbench, name) is getattr(benchmark, name)
    assert benchmark.BenchmarkConfig is __import__("shieldbench.config").config.BenchmarkConfig


def test_importing_shieldbench_does_not_load_the_benchmark() -> None:
    code = (
        "import sys, shieldbench\n"
        "before = 'shieldbench.benchmark' in sys.modules\n"
        "shieldbench.run_benchmark\n"
        "print(before, 'shieldbench.benchmark' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "True"]


def test_the_package_exports_a_small_api() -> None:
    assert sorted(benchmark.__all__) == [
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
    for name in benchmark.__all__:
        assert getattr(benchmark, name).__module__.startswith("shieldbench.")
