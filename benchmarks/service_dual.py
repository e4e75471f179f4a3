"""Dual mode: a warn-only defense that takes 200 ms must add < 5% to the inline p50.

Two servers in the same run: ``pattern`` alone, and ``pattern`` with ``--warn`` a
defense that sleeps 200 ms per text (run after each response). Unique texts,
concurrency 1 and 8, rounds interleaved; the ratio of the inline p50s is printed.
The warn path is off the response's path but not free: each warn check costs a
thread hop, a second audit record and metrics, which compete for CPU when the
server is saturated (concurrency 8 on 2 busy cores).

    python benchmarks/service_dual.py [N]
"""

from __future__ import annotations

import sys

from _service_harness import load, ms, quantile, start


def main(n: int = 1200) -> None:
    plain = start("--defense", "pattern")
    dual = start("--defense", "pattern", "--warn", "python(_service_plugins:Slow, delay=0.2)")
    try:
        counter = 0
        print(f"dual mode, {n} checks per server and concurrency, warn defense 200 ms")
        for concurrency in (1, 8):
            lat: dict[str, list[float]] = {"plain": [], "dual": []}
            for _round in range(3):
                for name, server in (("plain", plain), ("dual", dual)):
                    bodies = [
                        {"text": f"an ordinary question number {counter + i}"}
                        for i in range(n // 3)
                    ]
                    counter += len(bodies)
                    got, _, answers = load(
                        f"{server.url}/v1/check", bodies, concurrency=concurrency
                    )
                    assert all(status == 200 for status, _ in answers)
                    lat[name].extend(got)
            ratio = quantile(lat["dual"], 0.5) / quantile(lat["plain"], 0.5)
            print(f"  c={concurrency} inline only   {ms(lat['plain'])}")
            print(f"  c={concurrency} inline + warn {ms(lat['dual'])}")
            print(f"  c={concurrency} p50 ratio = {ratio:.3f} (target < 1.05)")
    finally:
        plain.stop()
        dual.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1200)
