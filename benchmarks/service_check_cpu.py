"""Where the CPU of one ``POST /v1/check`` goes, in microseconds, step by step.

``service_scale.py`` shows that at concurrency 32 the p50 of a check over the p50 of
the bare ``/floor`` route is about the ratio of their CPU per request (the cores are
saturated). This script splits the check's own CPU (what ``/floor`` does not pay)
into its steps, with the real service over a real PostgreSQL store, in one process
and without sockets (the HTTP layer is the same for both routes): each step is run
``n`` times on new texts (as in the benchmark: no verdict cache hit) and timed with
the event-loop thread's CPU clock, which holds on a loaded machine where wall time
does not; the steps take turns, three rounds, and the least of each is printed.
Steps, each including the previous where it says so:

- ``pattern.check``: the defense alone (normalisation, the RE2 rule set);
- ``screen_now``: the service's screen around it (hash, verdict cache, inline budget);
- ``decide, no audit``: preprocessing, hashes, screen, the decision object;
- ``decide``: that and the audit record (redacted, chained, journalled);
- ``check``: that and the metrics (Prometheus, the rolling window);
- ``fast path``: the whole ASGI call of ``/v1/check`` (body read, parse, answer);
- ``audit thread``: the process's CPU beyond the event loop's during the fast-path
  step, per check (the writer thread moving records into PostgreSQL by ``COPY``).

In a real server the same steps cost more (cold caches between requests, 32
connections interleaved): ``service_scale.py`` measures the whole.

Run: ``python benchmarks/service_check_cpu.py [--n 4000] [--db URL]``; the output is
saved to ``benchmarks/results/service_check_cpu.txt``. Figures from a loaded machine
are noisy (a few tens of percent): compare runs made side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src"), str(HERE.parent / "tests")]

from service_scale import _postgres  # noqa: E402  (a private PostgreSQL server)
from shieldbench.service import ServeConfig, build_defenses, create_app  # noqa: E402

RESULTS = HERE / "results" / "service_check_cpu.txt"
#: Every step is timed this many times, in turn; the least is kept.
_ROUNDS = 3


async def _post(app: Any, body: bytes) -> None:
    """One ``POST /v1/check`` through the app's ASGI callable; 200 or an error."""
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/v1/check",
        "raw_path": b"/v1/check",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": headers,
    }
    await app(scope, receive, send)
    if sent[0]["status"] != 200:
        raise RuntimeError(f"the check answered {sent[0]['status']}: {sent[1:]}")


class _Texts:
    """New texts, as the benchmark's (no two alike: the verdict cache never hits)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"benchmark message number {self.count} about the weather"


async def _timed(step: Callable[[], Awaitable[object]], n: int) -> tuple[float, float]:
    """The event loop's and the process's CPU microseconds per call of ``step``."""
    for _ in range(200):  # warm
        await step()
    await asyncio.sleep(0.3)  # the writer thread catches up before the clock starts
    loop0, process0 = time.thread_time(), time.process_time()
    for i in range(n):
        await step()
        if i % 32 == 31:
            await asyncio.sleep(0)  # the loop turns, as under 32 connections
    loop1 = time.thread_time()
    await asyncio.sleep(0.3)  # what the writer thread does for these checks
    process1 = time.process_time()
    return (loop1 - loop0) / n * 1e6, (process1 - process0) / n * 1e6


async def _measure(db: str, n: int) -> list[tuple[str, float]]:
    cfg = ServeConfig(defense="pattern", db=db)
    app = create_app(cfg, build_defenses(cfg))
    async with app.router.lifespan_context(app):
        service = app.state.service
        while not service.guard.ready:
            await asyncio.sleep(0.05)
        guard, text = service.guard, _Texts()

        async def pattern() -> object:
            return guard.inline.defense.check(text())

        async def screen() -> object:
            return guard.inline.screen_now(text())

        async def decide_bare() -> object:
            return await guard.decide(text(), audit=False)

        async def decide() -> object:
            return await guard.decide(text())

        async def check() -> object:
            return await guard.check(text())

        async def fast_path() -> None:
            await _post(app, b'{"text": "%s"}' % text().encode())

        steps = [
            ("pattern.check", pattern),
            ("screen_now", screen),
            ("decide, no audit", decide_bare),
            ("decide", decide),
            ("check", check),
            ("fast path", fast_path),
        ]
        best: dict[str, float] = {}
        for _ in range(_ROUNDS):  # the least of the rounds: load only ever adds
            for name, step in steps:
                loop_us, process_us = await _timed(step, n)
                best[name] = min(best.get(name, loop_us), loop_us)
                if name == "fast path":
                    thread_us = process_us - loop_us
                    best["audit thread"] = min(best.get("audit thread", thread_us), thread_us)
        return list(best.items())


def main(*, n: int, db: str | None) -> None:
    with contextlib.ExitStack() as stack:
        url = db or stack.enter_context(_postgres())
        rows = asyncio.run(_measure(url, n))
    lines = [
        f"service_check_cpu.py: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()},"
        f" {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {n} new texts"
        f" per step, the least of {_ROUNDS} rounds; CPU microseconds per check (event-loop"
        " thread; audit thread: the rest of the process)",
        *(f"  {name:18s} {us:7.1f} us" for name, us in rows),
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="checks per step (default 4000)")
    parser.add_argument("--db", help="a PostgreSQL URL (else a private server is started)")
    args = parser.parse_args()
    if args.n < 1:
        parser.error(f"--n must be at least 1, got {args.n}")
    main(n=args.n, db=args.db)
