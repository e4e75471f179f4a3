"""``serve --workers N``: N server processes on one listening socket, supervised.

The parent binds the socket, builds nothing more, and forks N children; each runs the
app on uvicorn over the inherited socket (the kernel spreads connections over the
processes that accept on it), so each is a replica with its own audit chain. The
parent forwards SIGTERM/SIGINT to every child and waits for them (each finishes its
in-flight requests and flushes its audit log); a child that dies otherwise (a crash,
``kill -9``, the OOM killer) is started again, and the new process moves the dead
one's journal into the store before it answers. A child that exits within
:data:`_STARTUP_S` of its start is a configuration problem, not a crash: the parent
stops the others and exits with its status.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from types import FrameType

__all__ = ["run_workers"]

_log = logging.getLogger("shieldbench.service")
_STARTUP_S = 5.0


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket the workers share, made as uvicorn makes its own.

    Its protocol is named (``IPPROTO_TCP``, not the default 0): a socket accepted from
    it inherits that number, and asyncio turns Nagle's algorithm off (``TCP_NODELAY``)
    only on a socket whose protocol reads ``IPPROTO_TCP``. Without it every answer,
    written as two segments (its head, then its body), waited for the client's delayed
    ACK of the first: about 40 ms on Linux, on every request, whatever the load. The
    listening socket has ``TCP_NODELAY`` set too (Linux copies it to the sockets it
    accepts), so an event loop that checks neither still answers without that wait.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _die_with_parent() -> None:
    """Linux: the kernel sends this process SIGTERM when the supervisor dies (a
    ``kill -9`` of the parent leaves no orphan serving on its own)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the workers outlive a killed parent
        pass


def run_workers(
    serve: Callable[[socket.socket, int], int], *, host: str, port: int, workers: int
) -> int:
    """Run ``serve(sock, slot)`` in ``workers`` forked processes until a signal; the
    exit status (0: stopped by a signal; else the status of a child that failed to start)."""
    sock = _bind(host, port)
    children: dict[int, tuple[int, float]] = {}  # pid -> (slot, start time)
    stopping = False

    def spawn(slot: int) -> None:
        pid = os.fork()
        if pid == 0:  # the child: the default handlers back, then the server
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _die_with_parent()
            status = 1
            try:
                status = serve(sock, slot)
            finally:
                os._exit(status)
        children[pid] = (slot, time.monotonic())

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for slot in range(workers):
        spawn(slot)
    bound_host, bound_port = sock.getsockname()[:2]
    # uvicorn's own line (it logs none for sockets handed to it): what tools wait for
    _log.info("Uvicorn running on http://%s:%d (%d workers)", bound_host, bound_port, workers)
    status = 0
    while children:
        try:
            pid, raw = os.wait()
        except ChildProcessError:
            break
        slot, started = children.pop(pid, (-1, 0.0))
        if slot < 0 or stopping:
            continue
        code = os.waitstatus_to_exitcode(raw)
        if code > 0 and time.monotonic() - started < _STARTUP_S:
            _log.error("worker %d exited with status %d while starting: stopping", slot, code)
            status = code
            forward(signal.SIGTERM, None)
            continue
        _log.error("worker %d (pid %d) died (status %d): starting another", slot, pid, code)
        spawn(slot)
    sock.close()
    return status
