"""Speed of composite defenses, as ratios against baselines measured in the same run.

(1) Batch propagation: ``any(a, b)`` of two batching "models" (each call costs a
    fixed 2 ms plus 0.2 ms per text, about a small embedding model on CPU), 2,048
    texts through the engine (batch size 64). Baseline: calling both children's
    ``check_batch`` directly on the same batches. Target: <= 1.15x. Also shown: the
    same composite with its capabilities hidden (``check`` only), what it would
    cost without propagation.
(2) Async propagation: ``any(a, b)`` of two async defenses that each wait 20 ms
    (a network call), 1,000 texts at concurrency 50 through the engine. Baseline:
    ONE such defense through the engine (both children of the composite are
    awaited at once, so the ideal is the same time). Target: <= 1.15x. Also shown:
    both against the ideal 1,000 / 50 x 20 ms = 400 ms (timer and loop overhead).
(3) Tiered routing: ``tiered(fast, deep)`` where the deep defense costs 2 ms and
    10% of the texts are ambiguous. Baseline: the deep defense alone on every
    text. Reported: the time ratio (ideally about the deep share, 0.1) and the
    measured path shares.

Timings are the best of several repetitions (noise on a shared machine only adds
time). Run: ``.venv/bin/python benchmarks/composition_speed.py``; ``measure()``
returns the numbers. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from time import perf_counter

from shieldbench.datasets import Dataset
from shieldbench.defenses import Tiered, Vote, path_shares
from shieldbench.engine import run_defense
from shieldbench.types import RunConfig, Sample, Verdict

BATCH_TARGET = 1.15
ASYNC_TARGET = 1.15
ALLOW = Verdict(blocked=False, score=0.0)


class FakeModel:
    """A batching defense: each call costs ``call_s`` plus ``per_text_s`` per text."""

    def __init__(self, name: str, call_s: float = 0.002, per_text_s: float = 200e-6) -> None:
        self.name = name
        self.call_s = call_s
        self.per_text_s = per_text_s

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        time.sleep(self.call_s + self.per_text_s * len(texts))
        return [ALLOW] * len(texts)


class SyncOnly:
    """Hides every capability but ``check``."""

    def __init__(self, inner: Vote) -> None:
        self.name = inner.name
        self._inner = inner

    def check(self, text: str) -> Verdict:
        return self._inner.check(text)


class Remote:
    """An async defense that waits ``delay_s`` per call."""

    def __init__(self, name: str, delay_s: float = 0.020) -> None:
        self.name = name
        self.delay_s = delay_s

    def check(self, text: str) -> Verdict:
        time.sleep(self.delay_s)
        return ALLOW

    async def acheck(self, text: str) -> Verdict:
        await asyncio.sleep(self.delay_s)
        return ALLOW


class Scored:
    """Score parsed from the text; costs ``cost_s`` per call."""

    def __init__(self, name: str, cost_s: float = 0.0) -> None:
        self.name = name
        self.cost_s = cost_s

    def check(self, text: str) -> Verdict:
        if self.cost_s:
            time.sleep(self.cost_s)
        score = float(text.split()[0])
        return Verdict(score >= 0.5, score)


def _dataset(texts: Sequence[str]) -> Dataset:
    return Dataset("bench", tuple(Sample(str(i), t, "benign") for i, t in enumerate(texts)))


def _best(fn: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = perf_counter()
        fn()
        best = min(best, perf_counter() - start)
    return best


def measure() -> dict[str, float]:
    results: dict[str, float] = {}

    # (1) batch propagation
    texts = [f"text {i}" for i in range(2048)]
    a, b = FakeModel("a"), FakeModel("b")
    composite = Vote([a, b], k=1, kind="any")
    config = RunConfig(batch_size=64, warmup=0, concurrency=1)
    data = _dataset(texts)

    def direct() -> None:
        for i in range(0, len(texts), 64):
            a.check_batch(texts[i : i + 64])
            b.check_batch(texts[i : i + 64])

    base = _best(direct)
    engine = _best(lambda: run_defense(composite, data, config=config))
    hidden = _best(
        lambda: run_defense(SyncOnly(composite), _dataset(texts[:128]), config=config), 1
    ) * (len(texts) / 128)
    results["batch_baseline_s"] = base
    results["batch_composite_s"] = engine
    results["batch_ratio"] = engine / base
    results["batch_without_propagation_ratio"] = hidden / base

    # (2) async propagation
    n, concurrency, delay = 1000, 50, 0.020
    remote = Vote([Remote("r1", delay), Remote("r2", delay)], k=1, kind="any")
    ideal = n / concurrency * delay
    aconfig = RunConfig(concurrency=concurrency, warmup=0)
    adata = _dataset([f"t{i}" for i in range(n)])
    single = Remote("r0", delay)
    results["async_ideal_s"] = ideal
    results["async_single_s"] = _best(lambda: run_defense(single, adata, config=aconfig))
    results["async_composite_s"] = _best(lambda: run_defense(remote, adata, config=aconfig))
    results["async_ratio"] = results["async_composite_s"] / results["async_single_s"]
    results["async_composite_vs_ideal"] = results["async_composite_s"] / ideal

    # (3) tiered routing: 10% of scores fall between low and high
    scores = [0.5 if i % 10 == 0 else (0.05 if i % 2 else 0.95) for i in range(500)]
    tdata = _dataset([f"{s} sample {i}" for i, s in enumerate(scores)])
    deep = Scored("deep", cost_s=0.002)
    tiered = Tiered(Scored("fast"), deep, low=0.2, high=0.8)
    tconfig = RunConfig(concurrency=1, warmup=0)
    results["tiered_deep_alone_s"] = _best(lambda: run_defense(deep, tdata, config=tconfig), 1)
    run = run_defense(tiered, tdata, config=tconfig)
    results["tiered_s"] = _best(lambda: run_defense(tiered, tdata, config=tconfig), 1)
    results["tiered_ratio"] = results["tiered_s"] / results["tiered_deep_alone_s"]
    results["tiered_deep_share"] = path_shares(run).deep_share or 0.0
    return results


def main() -> int:
    r = measure()
    print(json.dumps({k: round(v, 4) for k, v in r.items()}, indent=2))
    print(
        f"(1) any(batch, batch) via engine / direct child batches: {r['batch_ratio']:.2f}x"
        f" (target <= {BATCH_TARGET}x); without propagation:"
        f" {r['batch_without_propagation_ratio']:.1f}x"
    )
    print(
        f"(2) any(async, async) / one async defense, both via engine: {r['async_ratio']:.2f}x"
        f" (target <= {ASYNC_TARGET}x); composite / ideal"
        f" {r['async_ideal_s'] * 1000:.0f} ms: {r['async_composite_vs_ideal']:.2f}x"
    )
    print(
        f"(3) tiered / deep alone: {r['tiered_ratio']:.2f}x with {r['tiered_deep_share']:.0%}"
        " of texts on the deep path"
    )
    ok = r["batch_ratio"] <= BATCH_TARGET and r["async_ratio"] <= ASYNC_TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
