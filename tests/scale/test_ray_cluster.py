"""A two-node Ray cluster on loopback (a head and a second node, each a separate
``ray start --block`` process) runs a benchmark from the command line; the run file
equals a local run's, outcome by outcome. Both nodes are stopped at the end.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import exposed, listening

from shieldbench.runio import load_run

RAYDEFS = Path(__file__).resolve().parent / "raydefs"
pytestmark = pytest.mark.slow

# `ray start --node-ip-address 127.0.0.1` alone turns the loopback address into the
# machine's network address (so that other machines could join) and its servers then
# listen there: the nodes of this test are started with that conversion turned off,
# so that every node listens on 127.0.0.1 only (the test checks the socket table).
_RAY_START_ON_LOOPBACK = (
    "import sys; from ray._private import services;"
    " services.resolve_ip_for_localhost = lambda host: host;"
    " from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # ray start --block stops its node's processes
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], list[int]]]:
    """``(address, env)`` of a head plus one more node, one CPU each, token-authenticated."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'shieldbench[ray]')")
    ray_cli = [sys.executable, "-c", _RAY_START_ON_LOOPBACK]
    token = tmp_path / "token"
    token.write_text(secrets.token_hex(32), encoding="utf-8")
    temp = tempfile.mkdtemp(prefix="sbrn-")  # short: Ray puts unix sockets under it
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(RAYDEFS), os.environ.get("PYTHONPATH")) if p),
    }
    env.pop("RAY_ADDRESS", None)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--block"]
    logs = (tmp_path / "head.log").open("wb"), (tmp_path / "node.log").open("wb")
    head = subprocess.Popen(
        [*ray_cli, "start", "--head", "--port", str(port), "--temp-dir", temp,
         "--include-dashboard=false", *common],
        env=env, stdout=logs[0], stderr=subprocess.STDOUT,
    )  # fmt: skip
    node: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or head.poll() is not None:
                    pytest.fail(
                        f"the Ray head did not start: {(tmp_path / 'head.log').read_text()}"
                    )
                time.sleep(0.5)
        node = subprocess.Popen(
            [*ray_cli, "start", "--address", address, *common],
            env=env, stdout=logs[1], stderr=subprocess.STDOUT,
        )  # fmt: skip
        yield address, env, [head.pid, node.pid]
    finally:
        if node is not None:
            _stop(node)
        _stop(head)
        for log in logs:
            log.close()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from shieldbench.cli import main; sys.argv[0] = 'shieldbench'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
        env={**env, "COLUMNS": "200"},
    )  # fmt: skip


def test_a_two_node_cluster_writes_the_local_run(
    two_nodes: tuple[str, dict[str, str], list[int]], tmp_path: Path
) -> None:
    address, env, pids = two_nodes
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    spec = f"python(sb_raydefs:Slow, ms=2, nodes={nodes})"
    common = ["run", "-d", spec, "-D", "builtin:smoke", "--warmup", "1", "--batch-size", "4"]
    remote = _cli(
        env, *common, "--executor", "ray", "--ray-address", address, "--workers", "2",
        "--out", str(tmp_path / "ray"),
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    local = _cli(env, *common, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    (a,) = (tmp_path / "ray" / "runs").glob("*.json")
    (b,) = (tmp_path / "local" / "runs").glob("*.json")
    ray_run, local_run = load_run(a), load_run(b)
    assert ray_run.samples == local_run.samples
    assert [(o.sample_id, o.verdict, o.status, o.attempts) for o in ray_run.outcomes] == [
        (o.sample_id, o.verdict, o.status, o.attempts) for o in local_run.outcomes
    ]
    assert ray_run.environment["executor"] == "RayExecutor"
    # Two workers of one CPU each on two one-CPU nodes: one worker ran on each node
    # (the driver's own defense, built locally, notes no node).
    assert len(list(nodes.iterdir())) == 2
    # Both nodes listen on loopback only (read from the kernel's socket table).
    sockets = [s for pid in pids for s in listening(pid)]
    assert sum("gcs_server" in s[0] for s in sockets) >= 1
    assert sum("raylet" in s[0] for s in sockets) >= 2
    assert exposed(sockets) == [], sockets


def test_an_unreachable_address_exits_2_with_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'shieldbench[ray]')")
    port = _free_port()
    result = _cli(
        dict(os.environ), "run", "-d", "pattern", "-D", "builtin:smoke", "--executor", "ray",
        "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 2
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
