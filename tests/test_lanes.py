"""The test lanes: ``make test-fast`` deselects by marker, so the markers must be on the
tests that need a browser, PostgreSQL or Ray (tests/conftest.py adds ``postgres`` and
``ray`` from the fixtures a test uses; ``xdist_group("ray")`` keeps Ray in one worker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Each check collects test folders in a fresh interpreter (tens of seconds).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FAST = "not browser and not postgres and not ray and not slow"


def _collected(marker: str, *paths: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "-m", marker, *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: nothing selected
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_the_postgresql_side_of_a_store_test_is_marked_postgres() -> None:
    marked = _collected("postgres", "tests/service/test_chains.py")
    assert marked
    assert all("postgresql" in test for test in marked)
    fast = _collected(FAST, "tests/service/test_chains.py")
    assert fast  # the SQLite side stays in the fast lane
    assert not any("postgresql" in test for test in fast)


def test_ray_tests_are_marked_and_grouped() -> None:
    marked = _collected("ray", "tests/scale")
    assert any("test_ray_executor" in test for test in marked)
    assert all("/test_ray_" in test for test in marked)
    assert not _collected(f"ray and ({FAST})", "tests/scale")
    out = subprocess.run(
        [sys.executable, "-c", _PRINT_GROUPS, "tests/scale"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    groups = [line.removeprefix("GROUP ") for line in out.splitlines() if line.startswith("GROUP ")]
    assert groups
    assert set(groups) == {"ray"}  # one xdist_group: one worker runs every Ray test


# Collects in-process with a plugin that prints each Ray test's xdist_group name.
_PRINT_GROUPS = """
import sys, pytest
class Groups:
    def pytest_collection_finish(self, session):
        for item in session.items:
            if item.get_closest_marker("ray"):
                mark = item.get_closest_marker("xdist_group")
                print("GROUP", mark.args[0] if mark else "NONE")
sys.exit(pytest.main(["-p", "no:cacheprovider", "-q", "--collect-only", "-m", "ray",
                      sys.argv[1]], plugins=[Groups()]))
"""


def test_browser_tests_are_not_in_the_fast_lane() -> None:
    assert _collected("browser", "tests/reports/test_browser.py")
    assert not _collected(FAST, "tests/reports/test_browser.py")
