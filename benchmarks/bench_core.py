"""The three performance claims of the core (issue 2), measured in one run.

Each line is a ratio against a named baseline measured in the same process, so
the numbers hold on any machine (absolute timings vary; ratios much less):

1. engine overhead: 100,000 samples through a do-nothing defense via
   ``run_defense`` vs a bare Python loop recording the same latencies (<= 1.5x);
2. concurrency: 2,000 checks at concurrency 64 against a real loopback HTTP
   defense that takes 20 ms per request vs the ideal 2,000 / 64 x 20 ms (<= 1.3x);
3. ``pattern``: throughput vs a straightforward ``re.search`` loop over the same
   rules (>= 5x), and time per byte on a 1 MB adversarial input vs 1 KB inputs
   (<= 2x).

The details (and more baselines) come from ``engine_speed.py`` and
``pattern_speed.py``, which this script runs. Exit status 1 when a target is missed.

Run: ``.venv/bin/python benchmarks/bench_core.py``
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine_speed
import pattern_speed


def main() -> int:
    engine = engine_speed.measure()
    pattern = pattern_speed.measure()
    rows = [
        ("engine overhead vs bare loop (100k no-op checks)", engine["overhead_ratio"], "<=", 1.5),
        ("HTTP at concurrency 64 vs ideal (2,000 x 20 ms)", engine["concurrency_ratio"], "<=", 1.3),
        ("pattern throughput vs re.search loop", pattern["throughput_ratio"], ">=", 5.0),
        (
            "pattern per-byte time, 1 MB vs 1 KB input",
            pattern["per_byte_ratio_1mb_vs_1kb"],
            "<=",
            2.0,
        ),
    ]
    ok = True
    print(f"{'measure':<52} {'ratio':>8}  target")
    for name, value, op, target in rows:
        met = value <= target if op == "<=" else value >= target
        ok &= met
        print(f"{name:<52} {value:>7.2f}x  {op} {target:g}x {'met' if met else 'MISSED'}")
    print(
        f"  (HTTP floor here: a bare aiohttp client, no engine, no defense layer:"
        f" {engine['concurrency_aiohttp_ratio']:.2f}x the ideal; the engine with http: is"
        f" {engine['concurrency_engine_vs_aiohttp']:.2f}x that floor)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
