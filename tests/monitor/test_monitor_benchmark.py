"""A monitor cycle runs each (defense, suite) pair through ``run_benchmark``.

The monitor used to call the engine itself, beside the benchmark's own job logic;
now each pair is a one-job benchmark (its folder lives for the cycle), so the two
cannot drift apart. The benchmark's events show it: one benchmark per pair, with
the suite's (sampled) data, and the stored run is the benchmark's run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from shieldbench.benchmark import BenchmarkEvents
from shieldbench.datasets import Dataset
from shieldbench.monitor import Monitor, load_monitor_config
from shieldbench.store import open_store


class Recorder(BenchmarkEvents):
    def __init__(self) -> None:
        self.datasets: list[tuple[str, int]] = []
        self.benchmarks: list[tuple[Path, str]] = []

    def dataset_loaded(self, spec: str, dataset: Dataset, warnings: Sequence[object]) -> None:
        self.datasets.append((spec, len(dataset)))

    def started(self, folder: Path, benchmark_id: str) -> None:
        self.benchmarks.append((folder, benchmark_id))


@pytest.mark.slow
def test_each_pair_of_a_cycle_is_a_one_job_benchmark(tmp_path: Path) -> None:
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "name: nightly\n"
        "defenses: [pattern, none]\n"
        "suites:\n"
        "  - {name: smoke, dataset: 'builtin:smoke'}\n"
        "  - {name: few, dataset: 'builtin:smoke', sample: 10}\n"
        "run: {warmup: 0}\n",
        encoding="utf-8",
    )
    events = Recorder()
    with open_store(str(tmp_path / "h.db")) as store:
        report = Monitor(load_monitor_config(config), store, sinks=[], events=events).cycle()
        stored = {r.id: (r.defense_spec, r.tags.get("suite")) for r in store.runs()}
    # one benchmark per (defense, suite), defense by defense, with the suite's data
    assert events.datasets == [("builtin:smoke", 38), ("builtin:smoke", 10)] * 2
    assert len(events.benchmarks) == 4
    # the run stored is the benchmark's one job: its id is the benchmark's id + "-00"
    assert list(report.runs) == [f"{bid}-00" for _folder, bid in events.benchmarks]
    assert [stored[r] for r in report.runs] == [
        ("pattern", "smoke"),
        ("pattern", "few"),
        ("none", "smoke"),
        ("none", "few"),
    ]
    # the benchmarks' folders lived for the cycle only
    assert all(not folder.exists() for folder, _bid in events.benchmarks)
