"""Run files: written atomically, readable like the reports written beside them."""

from __future__ import annotations

import stat
from pathlib import Path

from shieldbench.datasets import Dataset
from shieldbench.engine import run_defense
from shieldbench.runio import load_run, save_run
from shieldbench.types import RunConfig, Sample, Verdict


class _Keyword:
    name = "keyword"

    def check(self, text: str) -> Verdict:
        return Verdict(blocked="ignore" in text, score=float("ignore" in text))


def test_saved_run_is_world_readable_and_round_trips(tmp_path: Path) -> None:
    data = Dataset("d", (Sample("a", "ignore it", "attack"), Sample("b", "hello", "benign")))
    run = run_defense(_Keyword(), data, config=RunConfig(warmup=0, concurrency=1))
    path = save_run(run, tmp_path / "runs" / "r.json")
    # mkstemp creates 0600 files; a run file is shared like the reports (0644).
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert load_run(path) == run
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temp file left
