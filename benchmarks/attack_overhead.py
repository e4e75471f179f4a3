"""Overhead of the adaptive-attack loop next to the defense it attacks.

The loop's own work (mutating texts, composing chains, de-duplicating candidates,
keeping beams, tallying mutators, the engine's bookkeeping) should be small next
to the time the defense spends judging the candidates. This script runs the same
seeded attack (``builtin:core`` attacks, all mutators, beam search) against two
defenses and splits the wall time:

- ``defense``: time inside the defense's own ``check`` calls, measured by a thin
  timing wrapper in this run: the baseline.
- ``engine``: time inside :func:`shieldbench.engine.screen` minus the defense's time
  (how the engine calls it: here one thread, no timeout, so a plain loop).
- ``loop``: everything else the attack does (``AttackResult.meta.loop_s``).

and prints ``loop / defense`` and ``(loop + engine) / defense``. Defenses:

- ``pattern``: the shipped rule-based detector (RE2, typically tens of
  microseconds a text): the hardest case for a small ratio.
- ``fixed-1ms``: a stand-in for any real model or API, costing 1 ms a call
  (``time.sleep``), the case the target is about: the loop must cost < 10% of it.

Timings are the best of three repetitions (noise on a shared machine only adds
time); the attack is deterministic, so every repetition does the same work. Run:
``.venv/bin/python benchmarks/attack_overhead.py``. Exit status 1 when the
``fixed-1ms`` ratio misses the target.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from shieldbench.attacks import AttackSettings, run_attack
from shieldbench.datasets import Dataset, load_dataset
from shieldbench.defenses import Defense, build_defense
from shieldbench.types import RunConfig, Verdict

TARGET = 0.10
REPEATS = 3
SETTINGS = AttackSettings(budget=600, rounds=4, seed=0, strategy="beam", max_attacks=300)
CONFIG = RunConfig(concurrency=1, timeout_s=None, warmup=0, retries=0)


class FixedCost:
    """Blocks texts mentioning an instruction word; costs 1 ms a call."""

    name = "fixed-1ms"

    def check(self, text: str) -> Verdict:
        time.sleep(0.001)
        low = text.lower()
        hits = sum(w in low for w in ("ignore", "instruction", "prompt", "password", "rules"))
        return Verdict(blocked=hits >= 1, score=min(1.0, hits / 3))


class Timed:
    """Wraps a defense and adds up the time spent in its ``check``."""

    def __init__(self, inner: Defense) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.calls = 0

    def check(self, text: str) -> Verdict:
        start = time.perf_counter()
        try:
            return self.inner.check(text)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


@dataclass(frozen=True)
class Split:
    defense: str
    queries: int
    defense_s: float
    engine_s: float
    loop_s: float

    @property
    def loop_ratio(self) -> float:
        return self.loop_s / self.defense_s

    @property
    def overhead_ratio(self) -> float:
        return (self.loop_s + self.engine_s) / self.defense_s


def measure(defense: Defense, data: Dataset) -> Split:
    best: Split | None = None
    for _ in range(REPEATS):
        timed = Timed(defense)
        result = run_attack(timed, data, settings=SETTINGS, config=CONFIG)
        split = Split(
            defense=defense.name,
            queries=timed.calls,
            defense_s=timed.seconds,
            engine_s=max(result.meta.defense_s - timed.seconds, 0.0),
            loop_s=result.meta.loop_s,
        )
        if best is None or split.loop_s + split.engine_s < best.loop_s + best.engine_s:
            best = split
    assert best is not None
    return best


def main() -> int:
    data = load_dataset("builtin:core")
    rows = [measure(build_defense("pattern"), data), measure(FixedCost(), data)]
    print(f"attack: {SETTINGS.budget} search queries max, {SETTINGS.rounds} rounds, beam,"
          f" {SETTINGS.max_attacks} attacks of builtin:core; best of {REPEATS}")  # fmt: skip
    header = ("defense", "queries", "defense s", "engine s", "loop s", "loop/def", "(loop+eng)/def")
    print("{:<10} {:>8} {:>10} {:>9} {:>8} {:>9} {:>15}".format(*header))
    for r in rows:
        print(
            f"{r.defense:<10} {r.queries:>8} {r.defense_s:>10.3f} {r.engine_s:>9.3f}"
            f" {r.loop_s:>8.3f} {r.loop_ratio:>9.3f} {r.overhead_ratio:>15.3f}"
        )
        per_query = 1e6 * (r.loop_s + r.engine_s) / r.queries
        print(f"{'':<10} loop + engine per query: {per_query:.0f} µs")
    fixed = rows[1]
    ok = fixed.overhead_ratio < TARGET
    print(
        f"fixed-1ms: (loop + engine) / defense = {fixed.overhead_ratio:.3f}"
        f" (target < {TARGET}): {'ok' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
