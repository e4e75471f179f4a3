"""Speed of the history store, as ratios and figures measured in one run.

(1) Storing a run of 100,000 outcomes vs producing it. Baseline: ``run_defense``
    with the ``pattern`` defense over 100,000 samples (the built-in corpus cycled,
    ids made unique), ``RunConfig(warmup=0)``. Measured: ``Store.add_run`` of that
    run into a fresh SQLite history (its first run: samples stored too), and again
    for a second run over the same samples (only the run row and the outcomes).
    Target: the first store <= 0.5x the engine time.
(2) ``history`` over 1,000 stored runs: the ``shieldbench history`` command
    in-process (its default table: the newest 50 runs; query, records and rich
    table). Target: well under a second. Also shown: all 1,000 runs as the
    ``Store.runs`` query alone, as ``--json`` and as the rich table (rich lays out
    every cell: the slow part).

With ``--pg URL`` (a PostgreSQL database), (1) is measured there too.

Timings are the best of several repetitions (noise on a shared machine only adds
time). Run: ``.venv/bin/python benchmarks/store_speed.py [--pg URL]``. Exit status
1 when a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import tempfile
from contextlib import redirect_stdout
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from time import perf_counter, process_time

from shieldbench.datasets import Dataset, content_hash, load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.store import open_store
from shieldbench.types import Run, RunConfig

N = 100_000
N_RUNS = 1_000
STORE_TARGET = 0.5
HISTORY_TARGET_S = 1.0


def _dataset(n: int) -> Dataset:
    base = load_dataset("builtin:core").samples
    samples = tuple(
        replace(base[i % len(base)], id=f"{base[i % len(base)].id}#{i}") for i in range(n)
    )
    return Dataset("bench:100k", samples, content_hash(samples))


def _best(fn: object, repeat: int, cpu: list[float] | None = None) -> float:
    """Best wall time of ``repeat`` calls; the best CPU time appended to ``cpu``."""
    times, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = perf_counter(), process_time()
        fn()  # type: ignore[operator]
        times.append(perf_counter() - start)
        cpus.append(process_time() - start_cpu)
    if cpu is not None:
        cpu.append(min(cpus))
    return min(times)


def measure_store(url_for: object, *, repeat: int = 3) -> dict[str, float]:
    data = _dataset(N)
    defense = build_defense("pattern")
    runs: list[Run] = []

    def engine() -> None:
        runs.append(run_defense(defense, data, config=RunConfig(warmup=0)))

    engine_cpu: list[float] = []
    engine_s = _best(engine, repeat, engine_cpu)
    run = runs[-1]
    warm = open_store(url_for("warm"))  # type: ignore[operator]
    warm.add_run(
        replace(run, id="warm", samples=run.samples[:10], outcomes=run.outcomes[:10]),
        git=(None, None),
    )
    warm.close()  # imports (scipy for the intervals) paid here, as `run` has paid them
    first_times, second_times, first_cpu = [], [], []
    for k in range(repeat):
        store = open_store(url_for(k))  # type: ignore[operator]
        try:
            gc.collect()
            start, start_cpu = perf_counter(), process_time()
            store.add_run(run, git=(None, None))
            first_times.append(perf_counter() - start)
            first_cpu.append(process_time() - start_cpu)
            again = replace(run, id=run.id + "-b")
            gc.collect()
            start = perf_counter()
            store.add_run(again, git=(None, None))
            second_times.append(perf_counter() - start)
        finally:
            store.close()
    first, second = min(first_times), min(second_times)
    return {
        "engine_s": engine_s,
        "store_first_s": first,
        "store_again_s": second,
        "ratio_first": first / engine_s,
        "ratio_again": second / engine_s,
        "engine_cpu_s": engine_cpu[0],
        "store_cpu_s": min(first_cpu),
        "ratio_cpu": min(first_cpu) / engine_cpu[0],
    }


def measure_history(folder: Path, *, repeat: int = 5) -> dict[str, float]:
    from typer.testing import CliRunner

    from shieldbench.cli import app

    db = str(folder / "many.db")
    small = run_defense(build_defense("pattern"), load_dataset("builtin:smoke"), run_id="m")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    store = open_store(db)
    start = perf_counter()
    for i in range(N_RUNS):
        when = t0 + timedelta(hours=i)
        store.add_run(
            replace(small, id=f"m{i:04d}", started=when, finished=when),
            tags={"build": str(i % 7)},
            git=(None, None),
        )
    fill_s = perf_counter() - start
    query_s = _best(lambda: store.runs(limit=N_RUNS), repeat)
    store.close()
    runner = CliRunner()

    def command(*extra: str) -> float:
        def call() -> None:
            out = runner.invoke(app, ["history", "--db", db, *extra])
            assert out.exit_code == 0, out.output

        with redirect_stdout(io.StringIO()):
            return _best(call, repeat)

    return {
        "fill_s": fill_s,
        "query_s": query_s,
        "command_s": command(),
        "json_s": command("--json", "--limit", str(N_RUNS)),
        "table_all_s": command("--limit", str(N_RUNS)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", help="also measure (1) on this PostgreSQL database URL")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="store-speed-") as tmp:
        folder = Path(tmp)
        s = measure_store(lambda k: str(folder / f"h{k}.db"))
        print(
            f"(1) {N:,} outcomes, SQLite: engine (pattern) {s['engine_s']:.2f} s; store"
            f" {s['store_first_s']:.2f} s = {s['ratio_first']:.2f}x (target <="
            f" {STORE_TARGET}x); again on the same samples {s['store_again_s']:.2f} s ="
            f" {s['ratio_again']:.2f}x; CPU time: engine {s['engine_cpu_s']:.2f} s, store"
            f" {s['store_cpu_s']:.2f} s = {s['ratio_cpu']:.2f}x"
        )
        ok &= s["ratio_first"] <= STORE_TARGET
        if args.pg:
            p = measure_store(lambda k: args.pg, repeat=1)
            print(
                f"    PostgreSQL: store {p['store_first_s']:.2f} s = {p['ratio_first']:.2f}x;"
                f" again {p['store_again_s']:.2f} s = {p['ratio_again']:.2f}x"
            )
        h = measure_history(folder)
        print(
            f"(2) history over {N_RUNS:,} stored runs: `history` (newest 50) in-process"
            f" {1000 * h['command_s']:.0f} ms (target < {HISTORY_TARGET_S:g} s); all"
            f" {N_RUNS:,}: query {1000 * h['query_s']:.0f} ms, --json"
            f" {1000 * h['json_s']:.0f} ms, table {1000 * h['table_all_s']:.0f} ms;"
            f" storing them took {h['fill_s']:.1f} s"
        )
        ok &= h["command_s"] < HISTORY_TARGET_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
