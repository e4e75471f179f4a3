"""Is the engine's per-call latency what a caller really waits? Engine p50 against a bare loop.

For ``recommended`` and ``shieldguard`` (both batch defenses, so the engine screens
most texts in batches and times a seeded sample one text per call), this prints the
per-call p50 the engine reports (``latency_stats(run).p50``) next to the p50 of a
bare loop that calls ``defense.check(text)`` one text at a time on the same texts,
and their ratio. The goal is a ratio within 10% of 1: the engine's figure is a
cold one-text call, not a cache hit and not a batch's wall time shared among its
texts (issue 30: it used to report 0.2 ms for ``recommended``, whose calls take
tens of milliseconds). The engine's amortised cost per text in batches is printed
beside it, to show how far apart the two figures are.

Fairness: both sides call the same defense object on the same texts, after the
same warm-up (on other texts); the bare loop also runs with the defense's caches
bypassed (``shieldbench.defenses.uncached``), so its repeated rounds stay cold as
its first one is. Rounds alternate bare loop and engine, so a change in the
machine's load hits both; the p50 of each side is over all its rounds.

The bare loop runs in a worker thread, as the engine's timed calls do (and as a
service calls a defense, ``asyncio.to_thread``). Found while writing this: on a
2-core machine under heavy load, torch-based defenses called from the *main*
thread took 10-25x longer per call than the same calls from a worker thread
(``recommended``: 2.4-5 s against 0.15-0.36 s; onnxruntime's ``shieldguard`` shows
no such gap). ``--main-thread`` adds that loop as a third column; it is slow.

Run: ``python benchmarks/latency_truth.py [--n 16] [--rounds 8] [--quick]``; the
output is also written to ``benchmarks/results/latency_truth.txt``. Timings depend
on the machine and on what else runs on it (the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from shieldbench.datasets import Dataset, load_dataset
from shieldbench.defenses import build_defense, uncached
from shieldbench.engine import run_defense
from shieldbench.engine._latency import alone_share, called_alone
from shieldbench.metrics import latency_stats, summarize
from shieldbench.types import RunConfig, Sample

DEFENSES = ("recommended", "shieldguard")
RESULTS = Path(__file__).parent / "results" / "latency_truth.txt"


def texts_for(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` distinct measured texts and 8 other texts for warming up (``builtin:core``)."""
    pool = sorted({s.text for s in load_dataset("builtin:core")})
    random.Random(seed).shuffle(pool)
    return pool[:n], pool[n : n + 8]


def bare_loop_ms(defense: object, texts: list[str], *, main_thread: bool = False) -> list[float]:
    """One ``check`` per text, timed with ``perf_counter`` around the call only."""
    out: list[float] = []

    def loop() -> None:
        with uncached(defense):
            for text in texts:
                t0 = time.perf_counter()
                defense.check(text)  # type: ignore[attr-defined]
                out.append((time.perf_counter() - t0) * 1000.0)

    if main_thread:
        loop()
    else:
        worker = threading.Thread(target=loop, name="bare-loop")
        worker.start()
        worker.join()
    return out


def dataset_of(texts: list[str]) -> Dataset:
    return Dataset(
        "inline:latency-truth", tuple(Sample(f"t{i}", t, "benign") for i, t in enumerate(texts))
    )


def config_for(texts: list[str]) -> RunConfig:
    """Half the texts timed one per call, the other half in batches (the engine's default shape)."""
    return RunConfig(warmup=2, batch_size=32, latency_sample=len(texts) // 2, timeout_s=120)


def engine_ms(defense: object, texts: list[str]) -> tuple[list[float], float | None]:
    """The per-call latencies the engine recorded, and its amortised batch cost per text."""
    run = run_defense(defense, dataset_of(texts), config=config_for(texts))  # type: ignore[arg-type]
    timed = [o.latency_ms for o in run.outcomes if o.latency_ms is not None]
    assert latency_stats(run).n == len(timed)
    return timed, summarize(run).operations.throughput.batch_ms_per_text


def timed_texts(texts: list[str]) -> list[str]:
    """The texts the engine times one per call (its seeded sample): the bare loop's texts."""
    ids = [s.id for s in dataset_of(texts).samples]
    share = alone_share(config_for(texts), len(texts))
    return [texts[i] for i in called_alone(ids, range(len(texts)), share)]


def measure(spec: str, n: int, rounds: int, *, main_thread: bool) -> str:
    defense = build_defense(spec)
    texts, warm = texts_for(n)
    same = timed_texts(texts)
    for text in warm:  # the same warm-up for both sides, on texts neither measures
        defense.check(text)
    bare: list[float] = []
    engine: list[float] = []
    batch: list[float] = []
    main: list[float] = []
    for _ in range(rounds):
        bare += bare_loop_ms(defense, same)
        if main_thread:
            main += bare_loop_ms(defense, same, main_thread=True)
        timed, per_text = engine_ms(defense, texts)
        engine += timed
        if per_text is not None:
            batch.append(per_text)
    close = getattr(defense, "close", None)
    if close is not None:
        close()
    bare_p50, engine_p50 = statistics.median(bare), statistics.median(engine)
    ratio = engine_p50 / bare_p50
    amortised = f"{statistics.median(batch):8.2f}" if batch else "       –"
    flag = "ok" if abs(ratio - 1) <= 0.10 else "MISSED (goal within 10%)"
    extra = f"  main-thread bare p50 {statistics.median(main):.2f} (n={len(main)})" if main else ""
    return (
        f"{spec:<12} {engine_p50:10.2f} {len(engine):5d} {bare_p50:10.2f} {len(bare):5d}"
        f" {ratio:7.3f}  {amortised}   {flag}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=16, help="texts per round (default 16)")
    parser.add_argument("--rounds", type=int, default=8, help="alternating rounds (default 8)")
    parser.add_argument("--quick", action="store_true", help="n=16, 4 rounds")
    parser.add_argument(
        "--main-thread", action="store_true", help="also time the bare loop in the main thread"
    )
    args = parser.parse_args()
    n, rounds = (16, 4) if args.quick else (args.n, args.rounds)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"latency_truth: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}"
        f" {os.cpu_count()} CPUs, load average {load} (before), n={n} texts x {rounds} rounds",
        "engine = per-call p50 the engine reports (its seeded sample: half the texts, one per"
        " call, the rest in batches); bare = p50 of check(text) in a loop (worker thread) on"
        " the same sampled texts; batch = the engine's amortised ms per text in batches",
        f"{'defense':<12} {'engine p50':>10} {'n':>5} {'bare p50':>10} {'n':>5}"
        f" {'ratio':>7}  {'batch':>8}",
    ]
    print("\n".join(lines), flush=True)
    for spec in DEFENSES:
        line = measure(spec, n, rounds, main_thread=args.main_thread)
        print(line, flush=True)
        lines.append(line)
    lines.append(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(lines[-1])
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
