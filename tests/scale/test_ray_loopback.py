"""Every Ray that shieldbench starts listens on 127.0.0.1 only (issue 31, item 3).

Read from the kernel's socket table (``/proc/net/tcp{,6}`` and the processes' open
file descriptors): every TCP socket in LISTEN state that a process started by the
test (the pytest process's descendants, or the CLI's) holds must be bound to
127.0.0.1 (or its IPv4-mapped form on a dual-stack socket). A GCS, raylet, worker,
runtime-env agent, monitor or dashboard on ``0.0.0.0``, ``::`` or the machine's
network address fails the test and is named.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shieldbench.engine import RayExecutor, start_local_ray

RAYDEFS = Path(__file__).resolve().parent / "raydefs"
SRC = Path(__file__).resolve().parents[2] / "src"


def _address(hexaddr: str, v6: bool) -> tuple[str, int]:
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if v6:  # four host-order 32-bit words
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        return socket.inet_ntop(socket.AF_INET6, raw), int(port, 16)
    return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:120].strip()
    except OSError:
        return "?"


def listening(root: int) -> list[tuple[str, str, int]]:
    """``(process, address, port)`` of every listening TCP socket of ``root``'s tree."""
    owner: dict[str, int] = {}
    for pid in _descendants(root):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                owner[link[8:-1]] = pid
    found = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in owner:  # 0A: LISTEN
                found.append((_name(owner[cols[9]]), *_address(cols[1], v6)))
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip) == "127.0.0.1"


def _exposed(sockets: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    return [s for s in sockets if not _loopback(s[1])]


def _ray_parts(sockets: list[tuple[str, str, int]]) -> set[str]:
    return {part for part in ("gcs_server", "raylet") for s in sockets if part in s[0]}


def test_the_fixtures_ray_and_its_workers_listen_on_loopback_only(ray_cluster: object) -> None:
    with RayExecutor("pattern", workers=2) as executor:
        executor.start()
        sockets = listening(os.getpid())
    assert _ray_parts(sockets) == {"gcs_server", "raylet"}  # the check sees Ray's servers
    assert any("Screener" in s[0] for s in sockets)  # and the workers' own servers
    assert _exposed(sockets) == []


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
    assert _exposed(list(seen)) == [], seen
