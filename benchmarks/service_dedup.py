"""De-duplication: 100 identical concurrent requests reach the defense once.

The inline defense takes 200 ms, so all 100 requests are in flight together; the
defense calls are read from ``shieldbench_guard_dedup_total{result="miss"}`` (a miss
is a defense call; hits are served from the cache or the first request in flight).

    python benchmarks/service_dedup.py
"""

from __future__ import annotations

import re

import httpx

from _service_harness import load, ms, start


def main() -> None:
    server = start("--defense", "python(_service_plugins:Slow, delay=0.2)")
    try:
        lat, wall, answers = load(
            f"{server.url}/v1/check", [{"text": "the same text"}] * 100, concurrency=100
        )
        assert all(status == 200 for status, _ in answers)
        metrics = httpx.get(f"{server.url}/metrics").text
        found = re.search(r'shieldbench_guard_dedup_total\{result="miss"\} (\S+)', metrics)
        hits = re.search(r'shieldbench_guard_dedup_total\{result="hit"\} (\S+)', metrics)
        calls = float(found.group(1)) if found else 0.0
        print("dedup: 100 identical concurrent requests, defense 200 ms")
        print(f"  defense calls {calls:.0f}, dedup hits {float(hits.group(1)) if hits else 0:.0f}")
        print(f"  latency {ms(lat)}, all answered in {wall * 1000:.0f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
