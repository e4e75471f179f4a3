"""The test lanes: ``make test-fast`` deselects by marker, so the markers must be on the
tests that need a browser, PostgreSQL or Ray (tests/conftest.py adds ``postgres`` and
``ray`` from the fixtures a test uses; ``xdist_group("ray")`` keeps Ray in one worker).
It also runs Hypothesis's ``fast`` profile (tests/_hypothesis_lanes.py), and only it:
``make test`` runs every property test with the examples it states."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from tests._hypothesis_lanes import FAST_MAX_EXAMPLES, FAST_PROFILE, capped

ROOT = Path(__file__).resolve().parents[1]
FAST = "not browser and not postgres and not ray and not slow"
# The checks that collect test folders in a fresh interpreter take tens of seconds.
slow = pytest.mark.slow


def _collected(marker: str, *paths: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "-m", marker, *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: nothing selected
    return [line for line in proc.stdout.splitlines() if "::" in line]


@slow
def test_the_postgresql_side_of_a_store_test_is_marked_postgres() -> None:
    marked = _collected("postgres", "tests/service/test_chains.py")
    assert marked
    assert all("postgresql" in test for test in marked)
    fast = _collected(FAST, "tests/service/test_chains.py")
    assert fast  # the SQLite side stays in the fast lane
    assert not any("postgresql" in test for test in fast)


@slow
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


@slow
def test_browser_tests_are_not_in_the_fast_lane() -> None:
    assert _collected("browser", "tests/reports/test_browser.py")
    assert not _collected(FAST, "tests/reports/test_browser.py")


# --- Hypothesis in the lanes --------------------------------------------------------------


def _recipe(makefile: str, target: str) -> str:
    """The recipe lines of ``target`` in ``makefile``, with ``$(VAR)``s expanded."""
    variables = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", makefile, re.MULTILINE))
    match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert match, f"no {target} target in the Makefile"
    recipe = match.group(1)
    for _ in range(3):  # variables that name variables
        recipe = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m[1], m[0]), recipe)
    return recipe


def test_only_the_fast_lane_selects_the_fast_hypothesis_profile() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    fast = _recipe(makefile, "test-fast")
    assert f"--hypothesis-profile={FAST_PROFILE}" in fast
    assert f'-m "{FAST}"' in fast
    full = _recipe(makefile, "pytest")
    assert "hypothesis-profile" not in full
    assert " -m " not in full  # the full lane deselects nothing
    test = re.search(r"^test:(.*)$", makefile, re.MULTILINE)
    assert test
    assert "pytest" in test.group(1).split()  # `make test` runs the full lane
    # nothing else loads a profile for the full lane: no addopts, no environment
    assert "hypothesis-profile" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "HYPOTHESIS" not in makefile.replace("FAST_HYPOTHESIS", "")


def test_capped_lowers_only_the_example_count() -> None:
    stated = settings(max_examples=300, deadline=None, derandomize=True)
    fast = capped(stated)
    assert fast.max_examples == FAST_MAX_EXAMPLES
    assert fast.deadline is None
    assert fast.derandomize
    assert capped(settings(max_examples=3)).max_examples == 3  # never raised


_PROPERTY_TEST = """
import os
from hypothesis import given, settings, strategies as st

@settings(max_examples=300, database=None)
@given(st.integers())
def test_counts(n):
    with open(os.environ["EXAMPLES_LOG"], "a") as log:
        log.write("x")

class TestInAClass:
    @settings(max_examples=200, database=None)
    @given(st.text())
    def test_method(self, s):
        with open(os.environ["EXAMPLES_LOG"], "a") as log:
            log.write("y")
"""


def _examples_run(tmp_path: Path, *options: str) -> tuple[int, int]:
    """How many examples each of two property tests ran under ``options``."""
    (tmp_path / "test_property.py").write_text(_PROPERTY_TEST, encoding="utf-8")
    log = tmp_path / "examples.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "EXAMPLES_LOG": str(log), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "tests._hypothesis_lanes", *options, "test_property.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = log.read_text(encoding="utf-8")
    return text.count("x"), text.count("y")


@slow
def test_the_fast_profile_caps_stated_example_counts_and_the_default_keeps_them(
    tmp_path: Path,
) -> None:
    fast_x, fast_y = _examples_run(tmp_path, f"--hypothesis-profile={FAST_PROFILE}")
    assert 0 < fast_x <= FAST_MAX_EXAMPLES
    assert 0 < fast_y <= FAST_MAX_EXAMPLES
    full_x, full_y = _examples_run(tmp_path)
    assert full_x >= 300
    assert full_y >= 100  # text() may exhaust small inputs early; far above the cap


@slow
def test_every_test_package_keeps_tests_in_the_fast_lane() -> None:
    """Marking ``slow`` must not empty a package: the fast lane still signals a break."""
    packages = {
        path.parent.name
        for path in (ROOT / "tests").glob("*/test_*.py")
        if not path.parent.name.startswith(("_", "."))
    }
    fast = _collected(FAST, "tests")
    kept = {test.split("/")[1] for test in fast if test.startswith("tests/") and "/" in test[6:]}
    assert packages - kept == set()
