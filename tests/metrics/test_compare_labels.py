"""``compare`` labels runs by defense identity (issue 30, defect 3): the spec, and
where two runs share it, the version when theirs differ, else the run id."""

from __future__ import annotations

from dataclasses import replace

from shieldbench.metrics import compare_runs
from shieldbench.metrics._testing import make_run
from shieldbench.types import DefenseInfo


def test_compare_labels_runs_of_one_spec_by_version_else_by_run_id() -> None:
    rows = [("jb", True, True)] * 5 + [("chat", False, False)] * 5
    one = make_run(rows, run_id="r1", spec="pattern")
    two = make_run(rows, run_id="r2", spec="pattern")
    two = replace(two, defense=DefenseInfo("pattern", "pattern", "2"))
    three = make_run(rows, run_id="r3", spec="pattern")
    labels = compare_runs([one, two, three]).runs
    assert labels == ("pattern [r1]", "pattern version 2", "pattern [r3]")
