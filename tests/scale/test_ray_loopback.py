"""Every Ray that shieldbench starts listens on 127.0.0.1 only (issue 31, item 3).

Read from the kernel's socket table (``/proc/net/tcp{,6}`` and the processes' open
file descriptors): every TCP socket in LISTEN state that a process started by the
test (the pytest process's descendants, or the CLI's) holds must be bound to
127.0.0.1 (or its IPv4-mapped form on a dual-stack socket). A GCS, raylet, worker,
runtime-env agent, monitor or dashboard on ``0.0.0.0``, ``::`` or the machine's
network address fails the test and is named.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback import exposed, listening

from shieldbench.engine import RayExecutor, start_local_ray

RAYDEFS = Path(__file__).resolve().parent / "raydefs"
SRC = Path(__file__).resolve().parents[2] / "src"


def _ray_parts(sockets: list[tuple[str, str, int]]) -> set[str]:
    return {part for part in ("gcs_server", "raylet") for s in sockets if part in s[0]}


def test_the_fixtures_ray_and_its_workers_listen_on_loopback_only(ray_cluster: object) -> None:
    with RayExecutor("pattern", workers=2) as executor:
        executor.start()
        sockets = listening(os.getpid())
    assert _ray_parts(sockets) == {"gcs_server", "raylet"}  # the check sees Ray's servers
    assert any("Screener" in s[0] for s in sockets)  # and the workers' own servers
    assert exposed(sockets) == []


def test_start_local_ray_refuses_the_options_it_fixes() -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'shieldbench[ray]')")
    for option in ("address", "_node_ip_address", "include_dashboard", "dashboard_host"):
        with pytest.raises(ValueError, match=option):
            start_local_ray(**{option: "0.0.0.0"})


def test_cli_run_executor_ray_listens_on_loopback_only(tmp_path: Path) -> None:
    """The CLI starts its own local Ray: sampled from the socket table while it runs."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'shieldbench[ray]')")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(RAYDEFS)]),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    env.pop("RAY_ADDRESS", None)
    code = "import sys; from shieldbench.cli import main; sys.argv[0] = 'shieldbench'; main()"
    spec = "python(sb_raydefs:Slow, ms=150)"
    args = ["run", "-d", spec, "-D", "builtin:smoke", "--executor", "ray", "--workers", "1"]
    args += ["--warmup", "0", "--batch-size", "2", "--out", str(tmp_path / "out")]
    seen: set[tuple[str, str, int]] = set()
    with subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:
            seen.update(listening(process.pid))
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert _ray_parts(list(seen)) == {"gcs_server", "raylet"}, seen
    assert exposed(list(seen)) == [], seen
