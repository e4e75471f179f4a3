"""Speed of the engine, as ratios against baselines measured in the same run.

(1) Overhead: 100,000 samples through a defense that does nothing.
    Baseline: a bare Python loop that calls the same defense and records the same
    per-sample latency (``perf_counter`` around each call, building the same
    ``Outcome`` objects). Measured: ``run_defense`` end to end (Run record
    included) with ``RunConfig(concurrency=1, warmup=0)``: timeouts on, so one
    supervised worker thread runs the loop. Also shown: the inline loop
    (``timeout_s=None``) and the default config (8 threads). Target: <= 1.5x.
(2) Concurrency: 2,000 checks at concurrency 64 against a real HTTP server on
    loopback (``_loopback_server.py``: an asyncio protocol, HTTP/1.1 keep-alive,
    its own process) that takes 20 ms per request. The defense is the real ``http:``
    defense, built from its spec (``build_defense("http:http://127.0.0.1:PORT/check")``),
    screened with :func:`~shieldbench.engine.screen` at ``RunConfig(concurrency=64,
    warmup=0)`` (the default timeout and retries). Baseline: the ideal
    2,000 / 64 x 20 ms = 625 ms. Also shown: the same defense driven by a bare
    ``asyncio.gather`` of 64 workers (the engine's own share, apart from the
    defense's), the same POSTs made by aiohttp alone with no defense layer and no
    engine (the floor this machine allows: when it misses the target, so does
    any client), and the engine with a defense that only awaits
    ``asyncio.sleep(0.02)`` (scheduling alone, no HTTP). With ``--httpx``, also the
    engine with a minimal defense over ``httpx.AsyncClient`` (why ``acheck`` uses
    aiohttp; ~20x the ideal on 2 cores, so it is off by default). Target: <= 1.3x.

Timings are the best of several repetitions, baseline and engine interleaved
(noise on a shared machine only ever adds time). The HTTP client's CPU cost per
request bounds (2) on a slow machine: at 64 x 20 ms, 3,200 requests a second
leave ~0.3 ms of CPU per request for client, engine and event loop together (and
on 2 cores the loopback server's ~0.08 ms and every other process compete).

Run: ``.venv/bin/python benchmarks/engine_speed.py [--httpx]``; ``measure()`` returns
the numbers for a combined benchmark script. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

import aiohttp
import httpx

from shieldbench.datasets import Dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense, screen
from shieldbench.types import Outcome, RunConfig, Sample, Verdict

OVERHEAD_TARGET = 1.5
CONCURRENCY_TARGET = 1.3
N_OVERHEAD = 100_000
N_HTTP = 2_000
CONCURRENCY = 64
DELAY_S = 0.020

ALLOW = Verdict(blocked=False, score=0.0)


class Nothing:
    """The defense that does nothing: what is left is the engine's cost."""

    name = "nothing"

    def check(self, text: str) -> Verdict:
        return ALLOW


def bare_loop(defense: Nothing, dataset: Dataset) -> list[Outcome]:
    """The baseline: call, time, record, nothing else."""
    outcomes = []
    for sample in dataset.samples:
        t0 = perf_counter()
        verdict = defense.check(sample.text)
        t1 = perf_counter()
        outcomes.append(Outcome(sample.id, verdict, "ok", None, (t1 - t0) * 1000.0, 1))
    return outcomes


def _best(
    fns: dict[str, Callable[[], object]], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall time and best process CPU time of each function, interleaved per repeat."""
    wall = dict.fromkeys(fns, float("inf"))
    cpu = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            c0, t0 = process_time(), perf_counter()
            fn()
            wall[name] = min(wall[name], perf_counter() - t0)
            cpu[name] = min(cpu[name], process_time() - c0)
    return wall, cpu


def measure_overhead(n: int = N_OVERHEAD, repeats: int = 7) -> dict[str, float]:
    data = Dataset("bench", tuple(Sample(f"s{i}", f"text {i}", "benign") for i in range(n)))
    defense = Nothing()
    best, cpu = _best(
        {
            "bare": lambda: bare_loop(defense, data),
            "engine": lambda: run_defense(defense, data, config=RunConfig(concurrency=1, warmup=0)),
            "inline": lambda: run_defense(
                defense, data, config=RunConfig(concurrency=1, timeout_s=None, warmup=0)
            ),
            "threads8": lambda: run_defense(defense, data, config=RunConfig(warmup=0)),
        },
        repeats,
    )
    return {
        "overhead_bare_s": best["bare"],
        "overhead_engine_s": best["engine"],
        "overhead_ratio": best["engine"] / best["bare"],
        "overhead_inline_ratio": best["inline"] / best["bare"],
        "overhead_threads8_ratio": best["threads8"] / best["bare"],
        "overhead_cpu_ratio": cpu["engine"] / cpu["bare"],
    }


# -- (2) the real http: defense against benchmarks/_loopback_server.py -------------------


class Sleeper:
    """An async defense that only waits 20 ms: the engine's scheduling, no HTTP client."""

    name = "sleeper"

    def check(self, text: str) -> Verdict:
        raise NotImplementedError("async only")

    async def acheck(self, text: str) -> Verdict:
        await asyncio.sleep(DELAY_S)
        return ALLOW


def bare_gather(defense: Any, texts: list[str]) -> None:
    """The same defense at the same concurrency with nothing but ``asyncio.gather``."""

    async def main() -> None:
        pending = iter(texts)

        async def worker() -> None:
            for text in pending:
                await defense.acheck(text)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    asyncio.run(main())


def bare_aiohttp(url: str, texts: list[str]) -> None:
    """The floor: the same POSTs with aiohttp alone (no defense layer, no engine), 64 at once."""

    async def main() -> None:
        pending = iter(texts)
        async with aiohttp.ClientSession() as session:

            async def worker() -> None:
                for text in pending:
                    body = json.dumps({"text": text}).encode()
                    async with session.post(url, data=body) as response:
                        json.loads(await response.read())

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    asyncio.run(main())


class HttpxGuard:
    """The same request over ``httpx.AsyncClient`` (one per loop): why ``acheck`` uses aiohttp.

    Only measured with ``--httpx`` (it takes ~10-20 s on a 2-core machine).
    """

    name = "httpx-async"

    def __init__(self, url: str) -> None:
        self.url = url
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def check(self, text: str) -> Verdict:
        raise NotImplementedError("async only")

    async def acheck(self, text: str) -> Verdict:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=None)
            client = self._clients[loop] = httpx.AsyncClient(limits=limits)
        response = await client.post(self.url, json={"text": text})
        data = response.raise_for_status().json()
        return Verdict(blocked=data["blocked"], score=data["score"])


def measure_concurrency(
    n: int = N_HTTP, repeats: int = 5, *, with_httpx: bool = False
) -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_loopback_server.py")), str(DELAY_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    guard = None
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/check"
        guard = build_defense(f"http:{url}")  # the real http: defense, as a user builds it
        texts = [f"text {i}" for i in range(n)]
        # RunConfig's defaults (timeout, retries) at concurrency 64, without warm-up calls.
        config = RunConfig(concurrency=CONCURRENCY, warmup=0)
        failed = [o.error for o in screen(guard, texts[:200], config=config) if not o.is_ok]
        if failed:  # the server answers, and every answer maps to a verdict
            raise RuntimeError(f"the http: defense failed: {failed[0]}")
        best, cpu = _best(
            {
                "aiohttp": lambda: bare_aiohttp(url, texts),
                "gather": lambda: bare_gather(guard, texts),
                "engine": lambda: screen(guard, texts, config=config),
                "sleeper": lambda: screen(Sleeper(), texts, config=config),
            },
            repeats,
        )
        if with_httpx:
            best |= _best({"httpx": lambda: screen(HttpxGuard(url), texts, config=config)}, 1)[0]
    finally:
        if guard is not None:
            guard.close()  # type: ignore[attr-defined]
        server.kill()
        server.wait()
    ideal = n / CONCURRENCY * DELAY_S
    result = {
        "concurrency_ideal_s": ideal,
        "concurrency_engine_s": best["engine"],
        "concurrency_gather_s": best["gather"],
        "concurrency_ratio": best["engine"] / ideal,
        "concurrency_gather_ratio": best["gather"] / ideal,
        "concurrency_aiohttp_ratio": best["aiohttp"] / ideal,
        "concurrency_engine_vs_aiohttp": best["engine"] / best["aiohttp"],
        "concurrency_engine_vs_gather": best["engine"] / best["gather"],
        "concurrency_sleeper_ratio": best["sleeper"] / ideal,
        "concurrency_engine_cpu_ms_per_request": cpu["engine"] / n * 1000,
        "concurrency_gather_cpu_ms_per_request": cpu["gather"] / n * 1000,
        "concurrency_aiohttp_cpu_ms_per_request": cpu["aiohttp"] / n * 1000,
        "concurrency_cpu_budget_ms_per_request": DELAY_S / CONCURRENCY * 1000,
    }
    if with_httpx:
        result["concurrency_httpx_ratio"] = best["httpx"] / ideal
    return result


def measure(*, with_httpx: bool = False) -> dict[str, float]:
    """Both measurements; every ratio is engine time over its baseline's time."""
    return {**measure_overhead(), **measure_concurrency(with_httpx=with_httpx)}


def main() -> int:
    m = measure(with_httpx="--httpx" in sys.argv[1:])
    rows: list[tuple[str, Any, str]] = [
        ("bare loop, 100,000 no-op checks", f"{m['overhead_bare_s'] * 1000:.0f} ms", ""),
        ("engine, concurrency 1 + timeout", f"{m['overhead_engine_s'] * 1000:.0f} ms", ""),
        ("(1) engine overhead vs bare loop", f"{m['overhead_ratio']:.2f}x", "<= 1.5x"),
        ("    inline (timeout_s=None)", f"{m['overhead_inline_ratio']:.2f}x", ""),
        ("    default config (8 threads)", f"{m['overhead_threads8_ratio']:.2f}x", ""),
        ("    CPU time, engine vs bare loop", f"{m['overhead_cpu_ratio']:.2f}x", ""),
        ("ideal, 2,000 x 20 ms / 64", f"{m['concurrency_ideal_s'] * 1000:.0f} ms", ""),
        ("engine, http: at concurrency 64", f"{m['concurrency_engine_s'] * 1000:.0f} ms", ""),
        ("bare asyncio.gather, same defense", f"{m['concurrency_gather_s'] * 1000:.0f} ms", ""),
        ("(2) engine vs ideal", f"{m['concurrency_ratio']:.2f}x", "<= 1.3x"),
        ("    bare gather vs ideal", f"{m['concurrency_gather_ratio']:.2f}x", ""),
        ("    engine vs bare gather", f"{m['concurrency_engine_vs_gather']:.2f}x", ""),
        ("    bare aiohttp client vs ideal", f"{m['concurrency_aiohttp_ratio']:.2f}x", ""),
        ("    engine vs bare aiohttp client", f"{m['concurrency_engine_vs_aiohttp']:.2f}x", ""),
        ("    engine, 20 ms asyncio.sleep defense", f"{m['concurrency_sleeper_ratio']:.2f}x", ""),
        (
            "CPU/request: engine, gather, aiohttp",
            f"{m['concurrency_engine_cpu_ms_per_request']:.3f}"
            f" / {m['concurrency_gather_cpu_ms_per_request']:.3f}"
            f" / {m['concurrency_aiohttp_cpu_ms_per_request']:.3f} ms",
            f"(budget {m['concurrency_cpu_budget_ms_per_request']:.3f} ms)",
        ),
    ]
    if "concurrency_httpx_ratio" in m:
        rows.append(
            ("    engine, httpx.AsyncClient defense", f"{m['concurrency_httpx_ratio']:.2f}x", "")
        )
    for label, value, target in rows:
        print(f"{label:38s} {value:>10s}  {target}")
    print(json.dumps({k: round(v, 4) for k, v in m.items()}))
    ok = m["overhead_ratio"] <= OVERHEAD_TARGET and m["concurrency_ratio"] <= CONCURRENCY_TARGET
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
