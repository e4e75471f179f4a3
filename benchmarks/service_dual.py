"""Dual mode: a warn-only defense that takes 200 ms must add < 5% to the inline p50.

Three servers in the same run: ``pattern`` alone; ``pattern`` with ``--warn`` a
defense that sleeps 200 ms per text (``check`` only: the worst case, one pool thread
per text in flight); and with one that also has ``check_batch`` (200 ms a batch, like
a model). Unique texts, concurrency 1 and 8, rounds interleaved (their order rotates,
so that no server always runs first, or right after a dual server's backlog); the
ratios of the inline p50s are printed. The request path only appends the text to the
warn queue; what the warn path still costs is CPU in the background (the pool
threads' wake-ups, the warn records), which competes with the event loop when the
cores are busy. At the end, once the warn backlog is checked, each dual server's
``/v1/stats`` says how many warn checks ran and how many were dropped (queue full).

    python benchmarks/service_dual.py [N] [ROUNDS]

``N`` checks per server, concurrency and round; ``ROUNDS`` (default 9) rounds, so
the p50s pool 9 x 400 requests per server: with 3 rounds of 400 a run's c=1 ratio
moved between 1.03 and 1.13 on the idle machine, which is the difference between two
server processes more than anything the warn path does.
"""

from __future__ import annotations

import sys
import time

import httpx

from _service_harness import load, ms, quantile, start

WARN = {
    "per text": "python(_service_plugins:Slow, delay=0.2)",
    "batch": "python(_service_plugins:SlowBatch, delay=0.2)",
}


def _warn_totals(url: str, expected: int) -> tuple[int, int]:
    """(warn checks run, warn checks dropped) once they add up to ``expected`` (or 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        traffic = httpx.get(f"{url}/v1/stats", params={"window": "1h"}).json()["traffic"]
        done = (traffic["warn_checks"], traffic["warn_dropped"])
        if sum(done) >= expected or time.monotonic() > deadline:
            return done
        time.sleep(0.5)


def main(n: int = 400, rounds: int = 9) -> None:
    servers = {"plain": start("--defense", "pattern")}
    for name, spec in WARN.items():
        servers[name] = start("--defense", "pattern", "--warn", spec)
    try:
        counter = 0
        print(f"dual mode, {rounds} rounds of {n} checks per server and concurrency, warn 200 ms")
        for concurrency in (1, 8):
            lat: dict[str, list[float]] = {name: [] for name in servers}
            names = list(servers)
            for round_ in range(rounds):  # the order rotates: no server always runs first
                turn = round_ % len(names)
                for name in names[turn:] + names[:turn]:
                    server = servers[name]
                    bodies = [
                        {"text": f"an ordinary question number {counter + i}"} for i in range(n)
                    ]
                    counter += len(bodies)
                    got, _, answers = load(
                        f"{server.url}/v1/check", bodies, concurrency=concurrency
                    )
                    assert all(status == 200 for status, _ in answers)
                    lat[name].extend(got)
            print(f"  c={concurrency} inline only          {ms(lat['plain'])}")
            for name in WARN:
                ratio = quantile(lat[name], 0.5) / quantile(lat["plain"], 0.5)
                label = f"c={concurrency} + warn ({name:>8})"
                print(f"  {label} {ms(lat[name])}  p50 ratio {ratio:.3f}")
        print("  (target: p50 ratio < 1.05)")
        for name in WARN:
            checked, dropped = _warn_totals(servers[name].url, 2 * n * rounds)
            print(f"  warn ({name}): {checked} checked, {dropped} dropped (queue full)")
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
