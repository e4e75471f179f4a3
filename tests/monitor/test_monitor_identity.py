"""The monitor compares a defense with earlier runs of the same defense (issue 30, 3).

``pattern`` and ``pattern(threshold=0.2)`` share a display name; monitored side by
side, each one's "last run" must be its own, never the other's (the history used to
match them by name, so the variant stored a moment earlier became "the last run" of
``pattern`` in the very first cycle).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shieldbench.monitor import Monitor, load_monitor_config
from shieldbench.store import open_store


@pytest.mark.slow
def test_each_defense_is_compared_with_its_own_last_run(tmp_path: Path) -> None:
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "name: twins\n"
        "defenses: ['pattern(threshold=0.2)', 'pattern']\n"
        "suites: [{name: smoke, dataset: 'builtin:smoke'}]\n"
        "run: {warmup: 0}\n"
        "compare: {last: true}\n"
        "min_effect: {latency_ratio: 1000}\n",
        encoding="utf-8",
    )
    with open_store(str(tmp_path / "h.db")) as store:
        monitor = Monitor(load_monitor_config(config), store, sinks=[])
        first = monitor.cycle()
        assert first.findings == ()  # nothing earlier of either defense
        second = monitor.cycle()
        runs = {r.id: r.defense_spec for r in store.runs()}
    assert len(runs) == 4
    assert second.findings
    for spec, _suite, finding in second.findings:
        assert [runs[r] for r in finding.reference_runs] == [spec], finding
        assert set(finding.reference_runs) <= set(first.runs)
