"""Speed of ``shieldbench view`` pages, over HTTP, as figures and ratios in one run.

(1) The runs page over a 1,000-run history (SQLite): ``/runs`` (the newest 50),
    sorted by FPR, filtered by tag and defense, and a late page. Baseline: reading
    every run record the way ``history --limit 1000`` does (``Store.runs``), what a
    viewer without SQL paging would do per request. Target: each page < 300 ms.
(2) The sample table of one 100,000-outcome run: ``/runs/ID/samples`` (page 1),
    filtered to bypasses, a text search with a category, and page 1,000. Baseline:
    rebuilding the whole run (``Store.get_run``). Target: each page < 300 ms once the
    run's sample document is cached (the first request of a run reads and parses
    it: shown separately as "cold").

The pages are fetched from the real app on uvicorn on 127.0.0.1 (a keep-alive
client), each the best of ``--repeat`` requests (noise on a shared machine only
adds time). ``--quick`` repeats fewer times (same history sizes). Output is also
written to ``benchmarks/results/view_speed.txt``; exit status 1 when a target is
missed. Run: ``.venv/bin/python benchmarks/view_speed.py [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from time import perf_counter

import httpx
import uvicorn

from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.store import Store, open_store
from shieldbench.types import RunConfig
from shieldbench.view import create_app

N_RUNS = 1_000
N_OUTCOMES = 100_000
TARGET_MS = 300.0
RESULTS = Path(__file__).parent / "results" / "view_speed.txt"


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = perf_counter()
        fn()
        times.append(perf_counter() - start)
    return min(times)


def _fill(db: str) -> str:
    """1,000 small runs over time, then one run of 100,000 outcomes; the big run's id."""
    small = run_defense(build_defense("pattern"), load_dataset("builtin:smoke"), run_id="m")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with open_store(db) as store:
        for i in range(N_RUNS):
            when = t0 + timedelta(hours=i)
            store.add_run(
                replace(small, id=f"m{i:04d}", started=when, finished=when),
                tags={"build": str(i % 7)},
                git=(None, None),
            )
        core = run_defense(
            build_defense("pattern"), load_dataset("builtin:core"), config=RunConfig(warmup=0)
        )
        n = len(core.samples)
        samples = tuple(
            replace(core.samples[i % n], id=f"{core.samples[i % n].id}#{i}")
            for i in range(N_OUTCOMES)
        )
        outcomes = tuple(
            replace(core.outcomes[i % n], sample_id=samples[i].id) for i in range(N_OUTCOMES)
        )
        big = replace(
            core,
            id="big",
            dataset=replace(core.dataset, n_samples=N_OUTCOMES),
            samples=samples,
            outcomes=outcomes,
        )
        store.add_run(big, git=(None, None))
    return "big"


class _Server:
    def __init__(self, store: Store) -> None:
        self.server = uvicorn.Server(
            uvicorn.Config(create_app(store), host="127.0.0.1", port=0, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.base = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    repeat = args.repeat or (3 if args.quick else 10)
    lines = [
        f"view_speed.py{' --quick' if args.quick else ''}: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC,"
        f" {platform.machine()} {platform.python_version()}, best of {repeat}"
    ]
    ok = True
    with tempfile.TemporaryDirectory(prefix="view-speed-") as tmp:
        db = str(Path(tmp) / "history.db")
        start = perf_counter()
        big = _fill(db)
        lines.append(
            f"history: {N_RUNS:,} runs + one of {N_OUTCOMES:,} outcomes, stored in"
            f" {perf_counter() - start:.0f} s"
        )
        store = open_store(db, read_only=True)
        server = _Server(store)
        try:
            with httpx.Client(base_url=server.base, timeout=120) as client:

                def get(path: str) -> Callable[[], object]:
                    def call() -> object:
                        r = client.get(path)
                        assert r.status_code == 200, (path, r.status_code, r.text[:300])
                        return r

                    return call

                base_runs = _best(lambda: store.runs(limit=N_RUNS), repeat)
                lines.append(
                    f"(1) runs page, {N_RUNS:,} runs; baseline Store.runs(all)"
                    f" {1000 * base_runs:.0f} ms"
                )
                for what, path in (
                    ("/runs (newest 50)", "/runs"),
                    ("sorted by FPR", "/runs?sort=fpr&order=asc"),
                    ("tag + defense filter", "/runs?tag=build%3D3&defense=pattern"),
                    ("page 15 of 20", "/runs?page=15"),
                ):
                    s = _best(get(path), repeat)
                    ok &= 1000 * s < TARGET_MS
                    lines.append(
                        f"    {what:<28} {1000 * s:6.0f} ms  ({s / base_runs:.2f}x baseline;"
                        f" target < {TARGET_MS:.0f} ms)"
                    )
                cold = _best(get(f"/runs/{big}/samples"), 1)
                base_run = _best(lambda: store.get_run(big), 1)
                lines.append(
                    f"(2) sample table, {N_OUTCOMES:,} outcomes; baseline Store.get_run"
                    f" {1000 * base_run:.0f} ms; first request (cold: reads the sample"
                    f" document) {1000 * cold:.0f} ms"
                )
                for what, path in (
                    ("page 1", f"/runs/{big}/samples"),
                    ("bypasses", f"/runs/{big}/samples?kind=bypass"),
                    ("text search + category", f"/runs/{big}/samples?q=ignore&category=chat"),
                    ("page 1,000 of 2,000", f"/runs/{big}/samples?page=1000"),
                ):
                    s = _best(get(path), repeat)
                    ok &= 1000 * s < TARGET_MS
                    lines.append(
                        f"    {what:<28} {1000 * s:6.0f} ms  ({s / base_run:.3f}x baseline;"
                        f" target < {TARGET_MS:.0f} ms)"
                    )
        finally:
            server.stop()
            store.close()
    lines.append("all targets met" if ok else "TARGET MISSED")
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
