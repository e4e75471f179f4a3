"""Shared fixtures. Tests never touch the network: hubs are forced offline."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# A real PostgreSQL server, the ``store_url`` fixture (SQLite and PostgreSQL), and a
# recording webhook receiver on loopback (``webhook``).
pytest_plugins = ["tests._postgres", "tests._webhook", "tests._hypothesis_lanes"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# pytest-xdist's workers inherit COLUMNS=80 / LINES=24 from execnet; rich honours them,
# so piped command output would wrap at 80 columns in a worker and not in a serial run.
# Tests that need a width set it themselves (tests/hardening/test_terminal.py).
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """``../shared/datasets``; the test is skipped when the folder is absent."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(autouse=True, scope="session")
def _python_handles_sigint() -> Iterator[None]:
    """Ctrl-C tests need Python's SIGINT handler; set it rather than inherit it.

    A test run started in the background (``make test &``, ``nohup``, some CI
    runners) begins with SIGINT ignored, and then ``_thread.interrupt_main()`` and
    a real SIGINT do nothing. Subprocesses that must be interruptible restore the
    default disposition themselves (``preexec_fn`` setting ``SIG_DFL``).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def _session_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("history") / "history.db"


@pytest.fixture(autouse=True)
def _history_db(monkeypatch: pytest.MonkeyPatch, _session_history: Path) -> None:
    """``run``, ``compare`` and ``attack`` record into a history by default: point it at
    a session-wide temporary file, never at ``.shieldbench/`` of the working directory.
    Tests about the default location unset ``SHIELDBENCH_DB`` themselves."""
    monkeypatch.setenv("SHIELDBENCH_DB", str(_session_history))


# --- Test lanes (``make test-fast``) and parallel runs (pytest-xdist) --------------------
#
# Four markers name what a test needs beyond Python: ``browser`` (a headless Chromium),
# ``postgres`` (a PostgreSQL server started for the session), ``ray`` (a local Ray
# cluster) and ``slow`` (more than a few seconds). Files mark ``browser`` and ``slow``
# themselves; ``postgres`` and ``ray`` are added here from the fixtures a test uses, so
# a new test is in the right lane without remembering to mark it.
#
# Under pytest-xdist (``-n auto --dist loadgroup``) every worker is its own process
# with its own temporary folders, history database (``_history_db``), PostgreSQL
# cluster (free loopback port, databases named after the worker's pid) and journal
# state folder; ports are always ``0`` or probed free. Ray is the exception: each
# local cluster claims fixed agent ports and both cores, so every Ray test joins one
# ``xdist_group`` and runs in a single worker, one after another. Every other test is
# grouped by its file, so a module-scoped server is started once and a module's tests
# run in the order they were written, in one worker, as in a serial run.

_POSTGRES_FIXTURES = frozenset({"postgres_server", "postgres_url"})
_RAY_FIXTURES = frozenset({"ray_cluster", "two_nodes"})


def _lane_markers(item: pytest.Item) -> list[pytest.MarkDecorator]:
    """The markers ``item`` gets from what it uses (see above)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    marks = []
    # a parametrized fixture's "postgresql" side (``store_url``, the viewer's ``history``)
    on_postgres = any(value == "postgresql" for value in params.values())
    if fixtures & _POSTGRES_FIXTURES or on_postgres:
        marks.append(pytest.mark.postgres)
    if fixtures & _RAY_FIXTURES or item.path.name.startswith("test_ray_"):
        marks += [pytest.mark.ray, pytest.mark.xdist_group("ray")]
    elif item.get_closest_marker("xdist_group") is None:
        marks.append(pytest.mark.xdist_group(f"file:{item.path}"))
    if "chromium" in fixtures:
        marks.append(pytest.mark.browser)
    return marks


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in _lane_markers(item):
            item.add_marker(mark)
