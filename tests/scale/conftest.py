"""A local Ray cluster, started once per test session (skipped when Ray is absent).

``raydefs/`` goes on ``PYTHONPATH`` before Ray starts, so the worker processes it
spawns can import the test defenses by their ``python:`` specs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

RAYDEFS = Path(__file__).resolve().parent / "raydefs"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tests import loopback


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'shieldbench[ray]')")
    from shieldbench.engine import start_local_ray

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(RAYDEFS), old) if p)
    sys.path.insert(0, str(RAYDEFS))
    temp = tempfile.mkdtemp(prefix="sbray-")
    # On 127.0.0.1 only, like every Ray shieldbench starts (test_ray_loopback checks it).
    ray = start_local_ray(
        num_cpus=2,
        # A declared (logical) GPU: lets the tests see --gpus-per-worker reach the
        # actors' Ray options; nothing runs on it and no test needs a real one.
        num_gpus=1,
        log_to_driver=False,
        _temp_dir=temp,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        sys.path.remove(str(RAYDEFS))
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
