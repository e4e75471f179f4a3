"""Service overhead: ``pattern`` through ``POST /v1/check`` against a constant ASGI floor.

Same server process (the floor is a bare ASGI route in front of the app), same aiohttp
client, same request bodies (the floor is POSTed the same JSON and reads it: the
difference is what the service does with a request, not the HTTP transport of a
bigger one), same run, interleaved rounds. Every check text is unique, so each request runs
the defense and commits its own audit record (no dedup hits). Prints p50 / p99 at
concurrency 1 and 32, throughput at 32, and the p50 ratios (target: within 1.3x of the
floor; at least 1,000 checks/s at concurrency 32 on 2 cores).

    python benchmarks/service_overhead.py [N] [ROUNDS]

A c=1 p50 moves by 10-20% between runs on the 2-core machine (the floor's own p50
goes from 0.36 to 0.46 ms), so the levels alternate over ``ROUNDS`` rounds (default
8) and the per-round ratios are printed too: their spread is the run's noise.
"""

from __future__ import annotations

import sys

from _service_harness import load, ms, quantile, start

BASE = "Please summarise the attached quarterly report for the board, request"


def main(n: int = 3000, rounds: int = 8) -> None:
    server = start("--defense", "pattern")
    try:
        check_url, floor_url = f"{server.url}/v1/check", f"{server.url}/floor"
        load(check_url, [{"text": f"warm {i}"} for i in range(300)], concurrency=8)
        results: dict[tuple[str, int], list[float]] = {}
        walls: dict[tuple[str, int], float] = {}
        counter = 0
        per_round: list[float] = []
        for _round in range(rounds):
            for concurrency in (1, 32):
                size = n // 5 if concurrency == 1 else n // 2
                bodies = [{"text": f"{BASE} {counter + i}"} for i in range(size)]
                counter += size
                lat, wall, _ = load(floor_url, bodies, concurrency=concurrency)
                results.setdefault(("floor", concurrency), []).extend(lat)
                walls[("floor", concurrency)] = walls.get(("floor", concurrency), 0) + wall
                lat, wall, answers = load(check_url, bodies, concurrency=concurrency)
                assert all(status == 200 for status, _ in answers), answers[:3]
                results.setdefault(("check", concurrency), []).extend(lat)
                walls[("check", concurrency)] = walls.get(("check", concurrency), 0) + wall
                if concurrency == 1:
                    floor_round = results[("floor", 1)][-size:]
                    per_round.append(quantile(lat, 0.5) / quantile(floor_round, 0.5))
        print(
            f"service overhead, pattern, {rounds} rounds interleaved,"
            f" {n // 5} checks per round at c=1, {n // 2} at c=32"
        )
        for concurrency in (1, 32):
            floor, check = results[("floor", concurrency)], results[("check", concurrency)]
            ratio = quantile(check, 0.5) / quantile(floor, 0.5)
            for name, values in (("floor", floor), ("check", check)):
                rate = len(values) / walls[(name, concurrency)]
                print(f"  c={concurrency:<3} {name:<6} {ms(values)}  {rate:8.0f} req/s")
            print(f"  c={concurrency:<3} p50 ratio check/floor = {ratio:.2f}x (target <= 1.3x)")
        spread = ", ".join(f"{r:.2f}" for r in sorted(per_round))
        print(f"  c=1   p50 ratio per round (sorted): {spread}")
    finally:
        server.stop()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
