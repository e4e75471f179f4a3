"""Listening TCP sockets of a process tree, from the kernel's socket table (Linux):
``/proc/net/tcp{,6}`` joined with the processes' open file descriptors."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path


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


def exposed(sockets: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    return [s for s in sockets if not _loopback(s[1])]
