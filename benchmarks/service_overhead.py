"""Service overhead: ``pattern`` through ``POST /v1/check`` against a constant ASGI floor.

Same server process (the floor is a bare ASGI route in front of the app), same aiohttp
client, same request bodies (the floor is POSTed the same JSON and reads it: the
difference is what the service does with a request, not the HTTP transport of a
bigger one), same run, interleaved rounds. Every check text is unique, so each request runs
the defense and commits its own audit record (no dedup hits). Prints p50 / p99 at
concurrency 1 and 32, throughput at 32, and the p50 ratios (target: within 1.3x of the
floor; at least 1,000 checks/s at concurrency 32 on 2 cores).

    python benchmarks/service_overhead.py [N]
"""

from __future__ import annotations

import sys

from _service_harness import load, ms, quantile, start

BASE = "Please summarise the attached quarterly report for the board, request"


def main(n: int = 3000) -> None:
    server = start("--defense", "pattern")
    try:
        check_url, floor_url = f"{server.url}/v1/check", f"{server.url}/floor"
        load(check_url, [{"text": f"warm {i}"} for i in range(300)], concurrency=8)
        results: dict[tuple[str, int], list[float]] = {}
        walls: dict[tuple[str, int], float] = {}
        counter = 0
        for _round in range(2):
            for concurrency in (1, 32):
                size = n // 10 if concurrency == 1 else n // 2
                bodies = [{"text": f"{BASE} {counter + i}"} for i in range(size)]
                counter += size
                lat, wall, _ = load(floor_url, bodies, concurrency=concurrency)
                results.setdefault(("floor", concurrency), []).extend(lat)
                walls[("floor", concurrency)] = walls.get(("floor", concurrency), 0) + wall
                lat, wall, answers = load(check_url, bodies, concurrency=concurrency)
                assert all(status == 200 for status, _ in answers), answers[:3]
                results.setdefault(("check", concurrency), []).extend(lat)
                walls[("check", concurrency)] = walls.get(("check", concurrency), 0) + wall
        print(f"service overhead, pattern, {n} checks per concurrency level, 2 rounds interleaved")
        for concurrency in (1, 32):
            floor, check = results[("floor", concurrency)], results[("check", concurrency)]
            ratio = quantile(check, 0.5) / quantile(floor, 0.5)
            for name, values in (("floor", floor), ("check", check)):
                rate = len(values) / walls[(name, concurrency)]
                print(f"  c={concurrency:<3} {name:<6} {ms(values)}  {rate:8.0f} req/s")
            print(f"  c={concurrency:<3} p50 ratio check/floor = {ratio:.2f}x (target <= 1.3x)")
    finally:
        server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
