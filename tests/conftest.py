"""Shared fixtures. Tests never touch the network: hubs are forced offline."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# A real PostgreSQL server and the ``store_url`` fixture (SQLite and PostgreSQL).
pytest_plugins = ["tests._postgres"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

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
